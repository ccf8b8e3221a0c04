// Source files and spans. Every AST node and diagnostic points into a SourceFile by id.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace grape {

struct SourcePos {
  int line = 1;    // 1-based
  int column = 1;  // 1-based, in bytes
};

struct Span {
  int file = -1;  // index into SourceManager; -1 for synthesized nodes
  SourcePos begin;
  SourcePos end;  // exclusive column on end.line
  bool valid() const { return file >= 0; }
};

struct SourceFile {
  std::string path;
  std::string text;
  std::vector<size_t> line_starts;  // byte offset of each line's first character
  std::string_view line(int line_no) const;  // without the trailing newline
};

class SourceManager {
 public:
  int add(std::string path, std::string text);
  const SourceFile& file(int id) const { return files_.at(static_cast<size_t>(id)); }
  size_t size() const { return files_.size(); }

 private:
  std::vector<SourceFile> files_;
};

}  // namespace grape
