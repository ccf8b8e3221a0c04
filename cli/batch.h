// `grape batch`: many requests through one entry point, from a JSONL file to DIR/results.jsonl
// (docs/batch.md).
#pragma once
#include "cli/args.h"

namespace grape::cli {

extern const char* kBatchUsage;
extern const std::vector<std::string> kBatchFlags;

int cmd_batch(const Options& o);

}  // namespace grape::cli
