#pragma once
#include "ir/ir.h"

namespace grape::ir {

// Dead-code elimination: removes ops none of whose results are used (ops with side effects stay),
// and loop-carried values that neither the results after the loop nor the loop's condition need.
// Returns true if anything changed.
bool eliminate_dead_code(Function& f);

}  // namespace grape::ir
