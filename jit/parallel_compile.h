// Builds many kernels at once: identical sources compile once, the distinct ones on a pool of
// threads (NVRTC programs are independent, and the kernel cache writes each entry atomically).
#pragma once
#include <exception>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "jit/kernel_cache.h"
#include "jit/nvrtc.h"

namespace grape::jit {

struct CompileJob {
  CompileJob() = default;
  CompileJob(std::string source, std::string name, std::string arch = {})
      : source(std::move(source)), name(std::move(name)), arch(std::move(arch)) {}
  std::string source;
  std::string name;  // for messages: "decode_step_k12_matmul"
  std::string arch;  // the target; empty: compile_parallel's `arch`
};

struct CompileOutcome {
  CompileResult result;
  std::string error;           // non-empty when the kernel did not compile: NVRTC's log and the source
  std::exception_ptr failure;  // what compile_cached threw (its grape::Error keeps its code)
};

// What compiles one distinct job for its target: compile_cached by default; tests pass their own.
using CompileFn = std::function<CompileResult(const CompileJob& job, const std::string& arch)>;

// One outcome per job, in job order. Jobs of every target go through one pool, so that a build of
// several targets (and the matrix products' wide variants) has no barrier between them: each
// distinct (source, target) pair compiles once, the longest sources first. `threads` 0: one per
// hardware thread. Progress goes to the process's build observer (jit/build_progress.h), one
// report per distinct pair. $GRAPE_BUILD_TRACE=FILE appends a line per distinct pair to FILE: its
// start and duration in seconds from the call, the source's bytes, the target and the job's name.
std::vector<CompileOutcome> compile_parallel(const std::vector<CompileJob>& jobs, const std::string& arch,
                                             KernelCache* cache, unsigned threads = 0,
                                             const CompileFn& compile = nullptr);

}  // namespace grape::jit
