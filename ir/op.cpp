#include "ir/op.h"

namespace grape::ir {

static const OpInfo kOpTable[] = {
#define GRAPE_OP(e, name, mn, mx, res, flags, pattern) {name, mn, mx, res, flags, pattern},
#include "ir/ops.def"
#undef GRAPE_OP
};

const OpInfo& op_info(Op op) { return kOpTable[static_cast<int>(op)]; }
int num_ops() { return static_cast<int>(sizeof(kOpTable) / sizeof(kOpTable[0])); }

}  // namespace grape::ir
