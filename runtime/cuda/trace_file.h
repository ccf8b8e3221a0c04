// GRAPE_MONO_TRACE=FILE (docs/execution.md): a file the mono executor's traces cannot be written to
// is reported on stderr once, not silently skipped; the run itself goes on (a measurement switch
// must not fail the computation it measures).
#pragma once
#include <iostream>

namespace grape::cuda {

inline void warn_unwritable_trace(const char* file) {
  static bool warned = false;
  if (warned) return;
  warned = true;
  std::cerr << "grape: warning: GRAPE_MONO_TRACE: cannot write '" << file << "'; no trace is written\n";
}

}  // namespace grape::cuda
