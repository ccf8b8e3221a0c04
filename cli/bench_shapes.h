// `grape bench --shapes NAME=LO:HI[:STEP]`: one session, one call sequence per value of a
// symbolic dim, to see what changing shapes cost: latency per value, and the graphs (count,
// memory, node rewrites) the graph executor holds for them (docs/execution.md, "Shape buckets").
#pragma once
#include "cli/args.h"

namespace grape::cli {

int cmd_bench_shapes(const Options& o);

}  // namespace grape::cli
