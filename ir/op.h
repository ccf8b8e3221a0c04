// The op enum and per-op properties, generated from ir/ops.def.
#pragma once
#include <cstdint>

namespace grape::ir {

namespace OpFlag {
enum : uint32_t {
  kNone = 0,
  kElementwise = 1u << 0,
  kReduction = 1u << 1,
  kSideEffect = 1u << 2,
  kCreate = 1u << 3,
  kView = 1u << 4,
  kLoop = 1u << 5,
};
}

// The ops.def column that fusion and the emitters query (its header comment says what each means).
enum class FusionPattern : uint8_t { kExecutor, kCreator, kPointwise, kView, kReduce, kRow, kContraction, kOwn };

enum class Op : uint16_t {
#define GRAPE_OP(e, name, mn, mx, res, flags, pattern) e,
#include "ir/ops.def"
#undef GRAPE_OP
};

struct OpInfo {
  const char* name;
  int min_operands;
  int max_operands;  // -1: unbounded
  int num_results;   // -1: variable (Loop)
  uint32_t flags;
  FusionPattern pattern;
};

const OpInfo& op_info(Op op);
inline const char* op_name(Op op) { return op_info(op).name; }
inline bool is_elementwise(Op op) { return op_info(op).flags & OpFlag::kElementwise; }
inline bool is_reduction(Op op) { return op_info(op).flags & OpFlag::kReduction; }
inline bool has_side_effect(Op op) { return op_info(op).flags & OpFlag::kSideEffect; }
inline bool is_loop(Op op) { return op_info(op).flags & OpFlag::kLoop; }
inline FusionPattern fusion_pattern(Op op) { return op_info(op).pattern; }
int num_ops();

}  // namespace grape::ir
