#include "jit/parallel_compile.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "jit/build_progress.h"
#include "jit/compile_workers.h"

namespace grape::jit {

std::vector<CompileOutcome> compile_parallel(const std::vector<CompileJob>& jobs, const std::string& arch,
                                             KernelCache* cache, unsigned threads, const CompileFn& compile) {
  auto target = [&](const CompileJob& j) -> const std::string& { return j.arch.empty() ? arch : j.arch; };
  // Distinct (target, source) pairs, each with the first job that has it.
  std::map<std::pair<std::string, std::string>, size_t> first;
  std::vector<size_t> distinct, slot(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    auto [it, fresh] = first.emplace(std::make_pair(target(jobs[i]), jobs[i].source), distinct.size());
    if (fresh) distinct.push_back(i);
    slot[i] = it->second;
  }
  // Longest first (a source's length tracks its compile time: the matrix-product and attention
  // templates make a kernel 0.7-3.4 s, a pointwise one 0.1 s), so that no long compile starts last
  // while the other threads are idle. Over every target at once: a second target's long kernels
  // start beside the first's, not after its short ones.
  std::vector<size_t> order(distinct.size());
  for (size_t d = 0; d < order.size(); ++d) order[d] = d;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return jobs[distinct[a]].source.size() > jobs[distinct[b]].source.size();
  });
  const char* trace_path = std::getenv("GRAPE_BUILD_TRACE");
  if (trace_path && !*trace_path) trace_path = nullptr;
  std::mutex trace_mutex;
  const auto start = std::chrono::steady_clock::now();
  auto seconds = [&](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(t - start).count();
  };
  std::vector<CompileOutcome> built(distinct.size());
  std::atomic<size_t> next{0};
  BuildTicket ticket(distinct.size());
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<size_t>(threads, distinct.size()));
  // Compiles in worker processes where there are several (jit/compile_workers.h); a test's own
  // `compile` stays in this process. Each process starts at its first cache miss.
  std::unique_ptr<CompileWorkers> workers;
  if (!compile && threads >= 2 && compile_workers_wanted() &&
      distinct.size() >= kMinJobsPerWorker * worker_layout(threads).processes)
    workers = std::make_unique<CompileWorkers>(compile_worker_executable(), worker_layout(threads));
  auto worker = [&](unsigned slot) {
    NvrtcCompileFn nvrtc;
    if (workers)
      nvrtc = [&, slot](const std::string& source, const std::string& name, const std::string& to,
                        const std::vector<std::string>& options) {
        if (std::optional<CompileResult> r = workers->compile(slot, source, name, to, options))
          return *std::move(r);
        return compile_cuda(source, name, to, options);  // the worker could not be started or died
      };
    for (size_t n; (n = next.fetch_add(1)) < distinct.size();) {
      const size_t d = order[n];
      const CompileJob& job = jobs[distinct[d]];
      const std::string& to = target(job);
      const auto began = std::chrono::steady_clock::now();
      try {
        built[d].result =
            compile ? compile(job, to) : compile_cached(job.source, job.name, to, {}, cache, nvrtc);
      } catch (const std::exception& e) {
        built[d].error = e.what();
        built[d].failure = std::current_exception();
      }
      if (trace_path) {
        const auto ended = std::chrono::steady_clock::now();
        std::lock_guard<std::mutex> lock(trace_mutex);
        if (std::FILE* f = std::fopen(trace_path, "a")) {
          std::fprintf(f, "%.3f %.3f %zu %s %s\n", seconds(began),
                       std::chrono::duration<double>(ended - began).count(), job.source.size(), to.c_str(),
                       job.name.c_str());
          std::fclose(f);
        }
      }
      ticket.finished_one();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker, t);
  worker(0);
  for (auto& t : pool) t.join();
  workers.reset();
  std::vector<CompileOutcome> out(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) out[i] = built[slot[i]];
  return out;
}

}  // namespace grape::jit
