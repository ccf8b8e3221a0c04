// The stable textual form of the IR (`grape ir`). Values are renumbered in print order so that
// dumps are stable across compiler changes that only shift internal ids; golden tests rely on it.
#pragma once
#include <map>
#include <string>

#include "ir/ir.h"

namespace grape::ir {

std::string print_function(const Function& f);
// The number print_function gives each value (`%N`), for messages that name values as a dump does.
std::map<ValueId, int> printed_value_numbers(const Function& f);
std::string print_module(const Module& m);

}  // namespace grape::ir
