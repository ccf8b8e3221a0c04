#pragma once
#include "ir/ir.h"

namespace grape::ir {

// Common-subexpression elimination: an op identical to an earlier one that dominates it (same op,
// operands, predicate and attributes) is replaced by it. Loops and side effects are never merged.
// Returns true if anything changed.
bool eliminate_common_subexpressions(Function& f);

}  // namespace grape::ir
