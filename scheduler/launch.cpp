#include "scheduler/launch.h"

#include <algorithm>

namespace grape::scheduler {

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return b <= 0 ? 0 : (a + b - 1) / b; }
}  // namespace

LaunchDims launch_dims(const jit::LaunchRule& rule, const std::map<std::string, int64_t>& dims) {
  LaunchDims d;
  d.block = static_cast<unsigned>(rule.threads);
  int64_t blocks = 1;
  auto item = [&](size_t i) { return i < rule.items.size() ? std::max<int64_t>(0, rule.items[i].eval(dims)) : 1; };
  switch (rule.kind) {
    case jit::LaunchRule::Elementwise: {
      int64_t n = 1;
      for (size_t i = 0; i < rule.items.size(); ++i) n *= item(i);
      blocks = ceil_div(n, rule.threads);
      break;
    }
    case jit::LaunchRule::Rows: {
      int64_t n = 1;
      for (size_t i = 0; i < rule.items.size(); ++i) n *= item(i);
      blocks = n;
      break;
    }
    case jit::LaunchRule::Tiles: {
      int64_t batch = item(0), m = item(1), n = item(2);
      blocks = m <= rule.gemv_max_m ? batch * ceil_div(n, rule.gemv_cols)
                                    : batch * ceil_div(m, rule.tile_m) * ceil_div(n, rule.tile_n);
      break;
    }
    case jit::LaunchRule::Single: blocks = 1; break;
  }
  d.grid = static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, kMaxGrid));
  return d;
}

}  // namespace grape::scheduler
