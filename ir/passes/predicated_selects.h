#pragma once
#include "ir/ir.h"

namespace grape::ir {

// Lowering merges every assignment under `if` with a select, so a branch that assigns one
// variable three times,
//
//   if go { y = f(y)  y = g(y)  y = h(y) }
//
// becomes ops under %go separated by selects that run whatever %go is:
//
//   %a = f %y if %go   %s1 = select %go, %a, %y   %b = g %s1 if %go   %s2 = select %go, %b, %s1 ...
//
// An op under %p reads a select on the same %p only when %p holds, so it may read the taken
// branch directly; and a select on %p of a select on %p keeps only the branch it can reach:
//
//   (op ... select(%p, a, b) ...) if %p     ->  (op ... a ...) if %p
//   select %p, select(%p, a, b), c          ->  select %p, a, c
//   select %p, c, select(%p, a, b)          ->  select %p, c, b
//
// The same where an op's predicate implies the select's (a nested `if`: select(%p, %r, false)).
// The branch then runs as one predicated region ending in one select (which executors can skip
// as a whole: the graph executor's conditional IF nodes), and the intermediate selects die.
// Returns true if anything changed; DCE removes what no longer has a use.
bool fold_predicated_selects(Function& f);

}  // namespace grape::ir
