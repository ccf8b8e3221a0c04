// Structural checks of the IR: operand counts per the op table, every use dominated by its
// definition, predicates and loop conditions are bool[], loop signatures agree, results match
// the declared types. Runs after lowering and between passes in debug builds and every test.
#pragma once
#include <string>
#include <vector>

#include "ir/ir.h"

namespace grape::ir {

// Returns the problems found (empty when the function is well formed).
std::vector<std::string> verify(const Function& f);
// Throws std::logic_error listing the problems (an internal compiler error).
void verify_or_throw(const Function& f, const std::string& after_pass);

}  // namespace grape::ir
