#include "scheduler/arena.h"

#include <algorithm>
#include <numeric>

namespace grape::scheduler {
namespace {

size_t aligned(size_t n) {
  return (std::max<size_t>(n, 1) + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

bool overlap(const ArenaRequest& a, const ArenaRequest& b) { return a.first <= b.last && b.first <= a.last; }

}  // namespace

ArenaLayout assign_offsets(const std::vector<ArenaRequest>& requests) {
  ArenaLayout out;
  out.offset.assign(requests.size(), kNotInArena);
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (requests[a].bytes != requests[b].bytes) return requests[a].bytes > requests[b].bytes;
    return requests[a].first < requests[b].first;
  });
  std::vector<size_t> placed;
  std::vector<std::pair<size_t, size_t>> busy;  // [begin, end) of placed requests live at the same time
  for (size_t r : order) {
    const ArenaRequest& q = requests[r];
    size_t need = aligned(q.bytes);
    busy.clear();
    for (size_t p : placed)
      if (overlap(q, requests[p]))
        busy.emplace_back(out.offset[p], out.offset[p] + aligned(requests[p].bytes));
    std::sort(busy.begin(), busy.end());
    size_t at = 0;
    for (const auto& [b, e] : busy) {
      if (b >= at + need) break;
      at = std::max(at, e);
    }
    out.offset[r] = at;
    out.size = std::max(out.size, at + need);
    placed.push_back(r);
  }
  return out;
}

ArenaLayout plan_arena(const ExecPlan& plan, const std::map<std::string, int64_t>& dims) {
  std::vector<ArenaRequest> requests;
  std::vector<size_t> which;
  for (size_t s = 0; s < plan.storages.size(); ++s) {
    const Storage& st = plan.storages[s];
    if (st.kind != StorageKind::Arena) continue;
    requests.push_back({bytes_of(st.type, dims), st.first, st.last});
    which.push_back(s);
  }
  ArenaLayout packed = assign_offsets(requests);
  ArenaLayout out;
  out.offset.assign(plan.storages.size(), kNotInArena);
  out.size = packed.size;
  for (size_t i = 0; i < which.size(); ++i) out.offset[which[i]] = packed.offset[i];
  return out;
}

size_t peak_live_bytes(const std::vector<ArenaRequest>& requests) {
  std::vector<int64_t> points;
  for (const auto& r : requests) points.push_back(r.first);
  size_t peak = 0;
  for (int64_t p : points) {
    size_t live = 0;
    for (const auto& r : requests)
      if (r.first <= p && p <= r.last) live += aligned(r.bytes);
    peak = std::max(peak, live);
  }
  return peak;
}

}  // namespace grape::scheduler
