#include "jit/parallel_compile.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <map>
#include <thread>

#include "jit/build_progress.h"

namespace grape::jit {

std::vector<CompileOutcome> compile_parallel(const std::vector<CompileJob>& jobs, const std::string& arch,
                                             KernelCache* cache, unsigned threads) {
  // Distinct sources, each with the first job that has it.
  std::map<std::string, size_t> first;
  std::vector<size_t> distinct, slot(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    auto [it, fresh] = first.emplace(jobs[i].source, distinct.size());
    if (fresh) distinct.push_back(i);
    slot[i] = it->second;
  }
  // Longest first (a source's length tracks its compile time: the matrix-product and attention
  // templates make a kernel 0.7-4 s, a pointwise one 0.1 s), so that no long compile starts last
  // while the other threads are idle.
  std::vector<size_t> order(distinct.size());
  for (size_t d = 0; d < order.size(); ++d) order[d] = d;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return jobs[distinct[a]].source.size() > jobs[distinct[b]].source.size();
  });
  std::vector<CompileOutcome> built(distinct.size());
  std::atomic<size_t> next{0};
  BuildTicket ticket(distinct.size());
  auto worker = [&] {
    for (size_t n; (n = next.fetch_add(1)) < distinct.size();) {
      const size_t d = order[n];
      const CompileJob& job = jobs[distinct[d]];
      try {
        built[d].result = compile_cached(job.source, job.name, arch, {}, cache);
      } catch (const std::exception& e) {
        built[d].error = e.what();
        built[d].failure = std::current_exception();
      }
      ticket.finished_one();
    }
  };
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<size_t>(threads, distinct.size()));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  std::vector<CompileOutcome> out(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) out[i] = built[slot[i]];
  return out;
}

}  // namespace grape::jit
