#pragma once
#include "ir/ir.h"

namespace grape::ir {

// A slice write under `if` (or after a `break`) lowers to a predicated slice_update and a select
// of the whole tensor:
//
//   %u = slice_update %x, %v, %i... if %p        %s = select %p, %u, %x
//
// which moves every element of %x (a KV cache: tens of megabytes per token) and keeps %x alive
// past the update, so the update cannot happen in place either. When %u has no other use this
// becomes a select of the slice alone:
//
//   %o = slice %x, %i...    %w = select %p, %v, %o    %s = slice_update %x, %w, %i...
//
// (%p false writes the slice back unchanged). The new ops run whatever %p is, so only where %x
// and the starts %i are computed then too (parameters, loop-carried values, unpredicated ops of
// such values, selects whose branches are computed where taken); values of enclosing blocks count
// as they do there. The same for a predicated gather along an axis it permutes:
//
//   select %p, (take %x, %idx if %p), %x  ->  take %x, (select %p, %idx, arange(n))
//
// Returns true if anything changed; DCE removes the predicated op.
bool narrow_predicated_updates(Function& f);

}  // namespace grape::ir
