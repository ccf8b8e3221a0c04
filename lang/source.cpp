#include "lang/source.h"

namespace grape {

std::string_view SourceFile::line(int line_no) const {
  if (line_no < 1 || static_cast<size_t>(line_no) > line_starts.size()) return {};
  size_t begin = line_starts[static_cast<size_t>(line_no - 1)];
  size_t end = begin;
  while (end < text.size() && text[end] != '\n') ++end;
  if (end > begin && text[end - 1] == '\r') --end;
  return std::string_view(text).substr(begin, end - begin);
}

int SourceManager::add(std::string path, std::string text) {
  SourceFile f;
  f.path = std::move(path);
  f.text = std::move(text);
  f.line_starts.push_back(0);
  for (size_t i = 0; i < f.text.size(); ++i)
    if (f.text[i] == '\n') f.line_starts.push_back(i + 1);
  files_.push_back(std::move(f));
  return static_cast<int>(files_.size() - 1);
}

}  // namespace grape
