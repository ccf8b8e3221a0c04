// Dynamic batching for `grape batch`: requests that agree on everything but the batch dim are
// grouped, stacked along it into one call of at most --max-batch rows, and each output is split
// back into the requests' rows.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/batch_request.h"
#include "cli/batch_results.h"
#include "cli/batch_signature.h"

namespace grape::cli {

// The requests of one call.
struct Batch {
  std::vector<std::shared_ptr<const Request>> requests;
  int64_t rows = 0;
};

// Collects requests into batches. Requests of one group have equal shapes in every dim but the
// batch dim, and byte-equal values in the inputs that are not stacked.
class Batcher {
 public:
  Batcher(const Signature& sig, int64_t max_rows) : sig_(sig), max_rows_(max_rows) {}

  // Adds r; returns the batches that became full (at most one, or r alone when it has more rows
  // than a batch may hold or the entry cannot be batched).
  std::vector<Batch> add(std::shared_ptr<const Request> r);
  // The partial batches left, largest first.
  std::vector<Batch> drain();

 private:
  std::string key(const Request& r) const;

  const Signature& sig_;
  int64_t max_rows_;
  std::map<std::string, Batch> open_;
};

// The inputs of the call: the stacked inputs concatenated along the batch dim, the others taken
// from the first request. Rows that lie end to end already (rows a, a+1, ... of one .npy file)
// are used where they are; others are copied into `scratch` (one buffer per input, reused from
// call to call), which the result points into until the next call.
std::vector<HostTensor> stack_inputs(const Batch& b, const Signature& sig,
                                     std::vector<std::vector<uint8_t>>& scratch);

// Throws MappedFileChanged when a mapped file that the requests' inputs lie in changed size (or
// a read of it faulted) since it was mapped. Called once the call's inputs were read, before the
// call runs: what it read may be zeros instead of the file's rows.
void check_mapped_inputs(const Batch& b);

// Output `o` of a call cut into the part of request `k` of the batch, whose rows start at row0.
OutputSlice slice_output(const Batch& b, size_t k, int64_t row0, const Signature& sig,
                         const std::string& name, const HostTensor& o);

}  // namespace grape::cli
