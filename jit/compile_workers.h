// NVRTC compiles in worker processes. Compiles on several threads of one process slow each other
// down (a lock inside NVRTC or the process's memory map): on a 16-core H100 machine the 160
// distinct kernels of examples/gpt2.grp took 8.4-9.1 s on 16 threads of one process, 5.1-5.8 s in
// 4 processes of 4 threads or 8 of 2 (run 140, scripts/probes/nvrtc_processes; docs/kernels.md,
// "Cold builds"). A build therefore sends its compiles to worker processes when an executable that
// serves them is known (compile_worker_executable), else compiles in its own threads as before.
//
// A worker is that executable started as `EXE --grape-compile-worker CHANNELS`; channel c is the
// socket on descriptor 3 + c, one request and its reply at a time (jit/compile_wire.h), served by
// one thread of the worker. The build's thread t uses channel t % CHANNELS of process
// t / CHANNELS. A worker exits when the build closes its channels. A process that cannot be
// started, or dies, is not used again and its compiles run in the build's own process: a worker
// never changes a result, only where it is computed.
#pragma once
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "jit/nvrtc.h"

namespace grape::jit {

// argv[1] of a worker process.
constexpr const char* kCompileWorkerArg = "--grape-compile-worker";
constexpr unsigned kMaxWorkerChannels = 16;

// The executable that serves workers: the one set (the grape command sets itself), else
// $GRAPE_COMPILE_WORKER; empty when neither. "" unsets.
void set_compile_worker_executable(const std::string& path);
std::string compile_worker_executable();
// Whether builds use worker processes: an executable is known and $GRAPE_COMPILE_PROCESSES is
// not "0".
bool compile_workers_wanted();

// Worker processes started by this process so far (tests, and a build's trace).
unsigned compile_worker_processes_started();

// How a build of `threads` threads is spread over processes: 4 channels each from 8 threads
// (run 140: 4 x 4 and 8 x 2 were the fastest on 16 cores, 16 x 1 6.5 s), else one each (2 cores:
// two processes of one thread compiled the 20 smallest kernels in 0.76 s, two threads of one
// process in 1.43 s).
struct WorkerLayout {
  unsigned processes = 0;
  unsigned channels = 0;
};
WorkerLayout worker_layout(unsigned threads);
// Each worker process parses the CUDA headers once for itself (NVRTC's precompiled header): a
// build of fewer distinct kernels than this many per process stays on threads (examples/mlp.grp's
// 3 kernels took 3.4-3.5 s in two processes, 2.9-3.1 s on two threads; BERT's 172 took 8.3 s in
// processes, 9.3 s on threads; 2-core developer machine).
constexpr size_t kMinJobsPerWorker = 4;

class CompileWorkers {
 public:
  CompileWorkers(std::string executable, WorkerLayout layout);
  ~CompileWorkers();  // closes every channel, waits for the processes (kills one that hangs)
  CompileWorkers(const CompileWorkers&) = delete;
  CompileWorkers& operator=(const CompileWorkers&) = delete;

  unsigned slots() const { return layout_.processes * layout_.channels; }
  // compile_cuda(source, name, arch, options) on slot `slot` (< slots(); one caller per slot at a
  // time), starting its process at first use. nullopt when that process could not be started or
  // has died: the caller compiles in its own process. A compile error in the worker is thrown
  // here as the grape::Error compile_cuda threw there.
  std::optional<CompileResult> compile(unsigned slot, const std::string& source, const std::string& name,
                                       const std::string& arch, const std::vector<std::string>& options);
  // The process behind `slot`, -1 when not started (tests kill it).
  pid_t pid_of(unsigned slot);

 private:
  struct Process {
    std::mutex start;  // guards started, pid and fds while starting
    bool started = false;
    pid_t pid = -1;
    std::vector<int> fds;  // the build's end of each channel
    std::atomic<bool> dead{false};
  };
  void start(Process& p);

  std::string executable_;
  WorkerLayout layout_;
  std::vector<std::unique_ptr<Process>> processes_;
};

// The body of a worker process (argv as given to main: argv[1] kCompileWorkerArg, argv[2] the
// channels): serves every channel until the build closes it. Returns the exit status: 0, or 2
// for bad arguments.
int compile_worker_main(int argc, char** argv);

}  // namespace grape::jit
