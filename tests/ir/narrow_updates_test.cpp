// narrow_predicated_updates on hand-written IR (the lowering's shapes are covered by the golden
// IR files take_predicated and slice_write_predicated*).
#include "ir/passes/narrow_updates.h"

#include <gtest/gtest.h>

#include "ir/verifier.h"
#include "tests/ir/ir_builder.h"

namespace grape::ir {
namespace {

using namespace grape::ir::testing;

// select(p, take(x, idx) if p, x) becomes take(x, select(p, idx, arange(4))), with the index type
// on the new values. The value table is full before the pass, so its first new value moves the
// table: the pass must not hold a reference into it (the fuzzer's heap-use-after-free, caught
// under AddressSanitizer, which CI's test build uses).
TEST(NarrowUpdates, PredicatedTakeWhileTheValueTableGrows) {
  Builder b;
  ValueId x = b.param("x", f32({4, 3}));
  ValueId idx = b.param("idx", i32({4}));
  ValueId p = b.param("p", boolean());
  Attrs along0;
  along0.axis = 0;
  ValueId u = b.op(Op::Take, {x, idx}, f32({4, 3}), along0, p);
  ValueId s = b.op(Op::Select, {p, u, x}, f32({4, 3}));
  b.ret({s});
  b.f.values.shrink_to_fit();
  ASSERT_EQ(b.f.values.size(), b.f.values.capacity());

  ASSERT_TRUE(narrow_predicated_updates(b.f));
  auto problems = verify(b.f);
  EXPECT_TRUE(problems.empty()) << problems.front() << "\n" << b.print();
  // The predicated take stays for DCE; then the identity indices, their select and the gather.
  const auto& ops = b.f.body.ops;
  ASSERT_EQ(ops.size(), 4u) << b.print();
  const Operation &ident = ops[1], &pick = ops[2], &gather = ops[3];
  EXPECT_EQ(ident.op, Op::Arange);
  EXPECT_EQ(b.f.type(ident.results[0]), i32({4}));
  EXPECT_EQ(pick.op, Op::Select);
  EXPECT_EQ(pick.operands, (std::vector<ValueId>{p, idx, ident.results[0]}));
  EXPECT_EQ(b.f.type(pick.results[0]), i32({4}));
  EXPECT_EQ(gather.op, Op::Take);
  EXPECT_EQ(gather.pred, kNoValue);
  EXPECT_EQ(gather.operands, (std::vector<ValueId>{x, pick.results[0]}));
  EXPECT_EQ(gather.results, (std::vector<ValueId>{s}));
}

}  // namespace
}  // namespace grape::ir
