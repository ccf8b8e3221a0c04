// The CUDA source of a block sequence (scheduler/sequence.h): one kernel of one block that runs
// the sequence's steps in order. Each kernel's glue becomes a __device__ function in a namespace
// of its own (identical glue once); copies and loops are the sequence's own code. The kernel
// takes a SeqParams block (jit/kernel_abi.h) whose slots the executors fill in the order
// scheduler::BlockSequence lists them.
#pragma once
#include <string>
#include <vector>

#include "jit/kernel_spec.h"
#include "scheduler/plan.h"
#include "scheduler/sequence.h"

namespace grape::jit {

// A kernel's glue as the device function `grape_body(const KParams* p)`: its entry point
// (kernel_header's text for kKernelSymbol and `threads`, 128 or 256) replaced, the grid wait left
// to the sequence. "" when the kernel cannot run inside a sequence: another entry point or block
// size, a preprocessor line, or read-only-path loads of its own (`__ldg`; the prelude's
// grape_ldg_* are plain loads in a sequence, whose kernels may read what an earlier step wrote).
std::string sequence_body(const std::string& glue, int threads);

// What a sequence's source says beside a kernel's step: its ops ("add_select" of
// "generate_k12_add_select"), nothing that names the entry or the kernel's index, so that the
// same run of kernels in two entries is one source (compiled once, one kernel-cache entry).
std::string sequence_step_comment(const std::string& kernel_name);

// Per kernel: its block size when it may be in a sequence (a sequence body,
// scheduler::fits_block_sequence, and small enough when its work has constant dims), else 0.
std::vector<int> sequence_kernel_threads(const std::vector<KernelSpec>& specs);

// The complete NVRTC source of sequence `s` of `plan`, whose kernels are `specs`.
std::string block_sequence_source(const scheduler::ExecPlan& plan, const scheduler::BlockSequence& s,
                                  const std::vector<KernelSpec>& specs);

// The sequences of a function's plan and their sources, as the executors build them (with
// GRAPE_SEQUENCES=0: none), for `grape compile` and bundles.
std::vector<std::string> block_sequence_sources(const ir::Function& f, const scheduler::FusionPlan& fusion,
                                                const std::vector<KernelSpec>& specs);

}  // namespace grape::jit
