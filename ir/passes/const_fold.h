#pragma once
#include "ir/ir.h"

namespace grape::ir {

// Constant folding of scalar arithmetic, comparisons and logic on `constant` operands, of
// `select` with a constant condition, and of `and`/`or` with a constant operand.
// Returns true if anything changed.
bool fold_constants(Function& f);

}  // namespace grape::ir
