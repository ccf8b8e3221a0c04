// `grape batch`'s warm-up: before the first request is read, every session runs one call of the
// shape most calls will have (--max-batch rows, zeros), so that what a session does once per
// shape — pinned host buffers, device memory, parameter blocks, the CUDA graph and the auto
// executor's first measurement — is done at start-up, on all sessions at once, rather than in
// the first call of each session while requests wait. On two GPUs with three sessions each, the
// first calls took 13-60 ms against 0.9 ms for the others: a fifth of a 100,000-request run.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cli/api.h"
#include "cli/batch_request.h"
#include "cli/batch_signature.h"

namespace grape::cli {

// The most bytes of zeros a warm-up call may take as inputs (a huge --max-batch of a wide input
// would otherwise allocate gigabytes before the first request).
constexpr size_t kMaxWarmupBytes = size_t{1} << 30;

// Why the entry is not warmed up (empty when it is): the call's inputs must have known shapes —
// the batch dim is `max_batch`, every other dim a number, or the input a shared --input value
// (`shared`, per input, null when not given) — and fit in kMaxWarmupBytes.
std::string warmup_blocker(const Signature& sig, const std::vector<const HostTensor*>& shared,
                           int64_t max_batch);

// Runs the warm-up call on every session, in parallel, then resets their state. A call that
// fails is not an error (the real calls report their own); returns how many failed.
size_t warm_up(const std::vector<SessionPtr>& sessions, const Signature& sig,
               const std::vector<const HostTensor*>& shared, int64_t max_batch);

}  // namespace grape::cli
