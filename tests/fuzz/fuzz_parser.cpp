// libFuzzer target for lang/: any bytes must parse to diagnostics without crashing, hanging or
// tripping a sanitizer.
#include <cstddef>
#include <cstdint>
#include <string>

#include "lang/diagnostics.h"
#include "lang/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  grape::SourceManager sm;
  grape::Diagnostics diags;
  int file = sm.add("fuzz.grp", std::string(reinterpret_cast<const char*>(data), size));
  grape::ast::Program program = grape::parse_program(sm, file, diags);
  std::string rendered = diags.render(sm);
  (void)program;
  (void)rendered;
  return 0;
}
