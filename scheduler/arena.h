// One arena per plan: every arena storage (scheduler/plan.h) gets an offset such that storages
// whose live intervals overlap never overlap in memory. Weights and states live outside it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "scheduler/plan.h"

namespace grape::scheduler {

constexpr size_t kArenaAlignment = 256;
constexpr size_t kNotInArena = static_cast<size_t>(-1);

struct ArenaRequest {
  size_t bytes = 0;
  int64_t first = 0, last = 0;  // closed interval of positions
};

struct ArenaLayout {
  std::vector<size_t> offset;  // per request (per storage for plan_arena; kNotInArena outside it)
  size_t size = 0;             // bytes the arena needs
};

// Greedy by size, largest first, each at the lowest aligned offset that is free over its
// interval (the usual interval-colouring heuristic: within a few percent of the peak live bytes
// on the models here). Every request gets at least kArenaAlignment bytes, so no two storages
// share an address even when empty.
ArenaLayout assign_offsets(const std::vector<ArenaRequest>& requests);

// The layout of `plan`'s arena storages with the symbols bound by `dims`.
ArenaLayout plan_arena(const ExecPlan& plan, const std::map<std::string, int64_t>& dims);

// The largest sum of bytes of storages live at one position (a lower bound of any layout).
size_t peak_live_bytes(const std::vector<ArenaRequest>& requests);

}  // namespace grape::scheduler
