// GRAPE_MONO_TRACE=FILE (docs/execution.md): a file the mono executor's traces cannot be written to
// is reported on stderr once, not silently skipped; the run itself goes on (a measurement switch
// must not fail the computation it measures).
#pragma once
#include <iostream>
#include <set>
#include <string>

namespace grape::cuda {

inline void warn_unwritable_trace(const char* file, const char* knob = "GRAPE_MONO_TRACE") {
  static std::set<std::string> warned;  // once a knob
  if (!warned.insert(knob).second) return;
  std::cerr << "grape: warning: " << knob << ": cannot write '" << file << "'; no trace is written\n";
}

}  // namespace grape::cuda
