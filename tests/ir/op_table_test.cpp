// The op table's fusion-pattern column (ir/ops.def) agrees with the flags of every op, and each
// pattern is the one fusion relies on for the ops it names.
#include "ir/op.h"

#include <gtest/gtest.h>

#include <string>

namespace grape::ir {
namespace {

TEST(OpTable, FusionPatternAgreesWithFlags) {
  for (int i = 0; i < num_ops(); ++i) {
    const Op op = static_cast<Op>(i);
    const OpInfo& info = op_info(op);
    const FusionPattern p = info.pattern;
    SCOPED_TRACE(info.name);
    if (info.flags & OpFlag::kElementwise) {
      EXPECT_EQ(p, FusionPattern::kPointwise);
    }
    if (info.flags & OpFlag::kView) {
      EXPECT_EQ(p, FusionPattern::kView);
    }
    if (info.flags & OpFlag::kReduction) {
      EXPECT_EQ(p, FusionPattern::kReduce);
    }
    if (info.flags & (OpFlag::kLoop | OpFlag::kSideEffect)) {
      EXPECT_EQ(p, FusionPattern::kExecutor);
    }
    if (info.flags & OpFlag::kCreate) {
      EXPECT_TRUE(p == FusionPattern::kCreator || p == FusionPattern::kExecutor);
    }
    // Creators are inlined as literals: they read no operands.
    if (p == FusionPattern::kCreator) {
      EXPECT_EQ(info.max_operands, 0);
    }
  }
}

TEST(OpTable, PatternsOfTheOpsFusionSingles) {
  EXPECT_EQ(fusion_pattern(Op::MatMul), FusionPattern::kContraction);
  EXPECT_EQ(fusion_pattern(Op::Linear), FusionPattern::kContraction);
  EXPECT_EQ(fusion_pattern(Op::Softmax), FusionPattern::kRow);
  EXPECT_EQ(fusion_pattern(Op::LayerNorm), FusionPattern::kRow);
  EXPECT_EQ(fusion_pattern(Op::CumSum), FusionPattern::kReduce);
  EXPECT_EQ(fusion_pattern(Op::Select), FusionPattern::kPointwise);
  EXPECT_EQ(fusion_pattern(Op::Take), FusionPattern::kView);
  EXPECT_EQ(fusion_pattern(Op::SliceUpdate), FusionPattern::kOwn);
  EXPECT_EQ(fusion_pattern(Op::TopK), FusionPattern::kOwn);
  EXPECT_EQ(fusion_pattern(Op::DimValue), FusionPattern::kExecutor);
  EXPECT_EQ(fusion_pattern(Op::Param), FusionPattern::kExecutor);
}

}  // namespace
}  // namespace grape::ir
