// Helpers shared by the code-generation tests (tests/jit_codegen/*_test.cpp): a .grp text or a
// repository file compiled to IR, with its diagnostics as the failure message.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "frontend/compile.h"

namespace grape::codegen_test {

inline std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Compiled {
  SourceManager sm;
  std::optional<ir::Module> mod;
};

inline std::unique_ptr<Compiled> compile_text(const std::string& path, const std::string& text,
                                              std::map<std::string, int64_t> defines = {}) {
  auto c = std::make_unique<Compiled>();
  int id = c->sm.add(path, text);
  CompileOptions o;
  o.defines = std::move(defines);
  Diagnostics d;
  c->mod = compile_source(c->sm, id, o, d);
  EXPECT_TRUE(c->mod.has_value()) << d.render(c->sm);
  return c;
}

// A file of the repository (GRAPE_SOURCE_DIR), e.g. "examples/gpt2.grp".
inline std::unique_ptr<Compiled> compile_file(const std::string& rel,
                                              std::map<std::string, int64_t> defines = {}) {
  std::filesystem::path p = std::filesystem::path(GRAPE_SOURCE_DIR) / rel;
  return compile_text(p.string(), read(p), std::move(defines));
}

}  // namespace grape::codegen_test
