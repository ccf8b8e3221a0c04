// Builds many kernels at once: identical sources compile once, the distinct ones on a pool of
// threads (NVRTC programs are independent, and the kernel cache writes each entry atomically).
#pragma once
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "jit/kernel_cache.h"
#include "jit/nvrtc.h"

namespace grape::jit {

struct CompileJob {
  std::string source;
  std::string name;  // for messages: "decode_step_k12_matmul"
};

struct CompileOutcome {
  CompileResult result;
  std::string error;           // non-empty when the kernel did not compile: NVRTC's log and the source
  std::exception_ptr failure;  // what compile_cached threw (its grape::Error keeps its code)
};

// One outcome per job, in job order. `threads` 0: one per hardware thread. Progress goes to the
// process's build observer (jit/build_progress.h), one report per distinct source.
std::vector<CompileOutcome> compile_parallel(const std::vector<CompileJob>& jobs, const std::string& arch,
                                             KernelCache* cache, unsigned threads = 0);

}  // namespace grape::jit
