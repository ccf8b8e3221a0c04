// Shared plumbing for passes: substituting values throughout a function.
#pragma once
#include <unordered_map>

#include "ir/ir.h"

namespace grape::ir {

// Replaces every use (operands, predicates, yields, nested blocks) of a key by its mapped value,
// following chains (a -> b -> c).
void replace_uses(Block& b, const std::unordered_map<ValueId, ValueId>& repl);

}  // namespace grape::ir
