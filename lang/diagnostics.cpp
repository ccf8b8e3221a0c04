#include "lang/diagnostics.h"

#include <algorithm>

namespace grape {

Diagnostic& Diagnostics::error(Span span, std::string message) {
  for (auto& d : diags_)
    if (d.severity == Severity::Error && d.span.file == span.file &&
        d.span.begin.line == span.begin.line && d.span.begin.column == span.begin.column &&
        d.message == message)
      return d;
  if (num_errors_ >= kMaxErrors) {
    ++num_errors_;
    return overflow_;
  }
  ++num_errors_;
  diags_.push_back(Diagnostic{Severity::Error, span, std::move(message), {}});
  return diags_.back();
}

void Diagnostics::warning(Span span, std::string message) {
  diags_.push_back(Diagnostic{Severity::Warning, span, std::move(message), {}});
}

static void render_located(const SourceManager& sm, Span span, const char* kind,
                           const std::string& message, std::string& out) {
  if (!span.valid() || static_cast<size_t>(span.file) >= sm.size()) {
    out += std::string(kind) + ": " + message + "\n";
    return;
  }
  const SourceFile& f = sm.file(span.file);
  out += f.path + ":" + std::to_string(span.begin.line) + ":" + std::to_string(span.begin.column) +
         ": " + kind + ": " + message + "\n";
  std::string_view line = f.line(span.begin.line);
  if (line.empty() && span.begin.column <= 1) return;
  out += "  ";
  out += line;
  out += "\n  ";
  int begin = std::max(1, span.begin.column);
  int end = span.end.line == span.begin.line ? span.end.column : static_cast<int>(line.size()) + 1;
  if (end <= begin) end = begin + 1;
  for (int c = 1; c < begin; ++c)
    out += (static_cast<size_t>(c - 1) < line.size() && line[static_cast<size_t>(c - 1)] == '\t') ? '\t' : ' ';
  out += '^';
  for (int c = begin + 1; c < end; ++c) out += '~';
  out += "\n";
}

std::string render_diagnostic(const SourceManager& sm, const Diagnostic& d) {
  std::string out;
  const char* kind = d.severity == Severity::Error ? "error" : d.severity == Severity::Warning ? "warning" : "note";
  render_located(sm, d.span, kind, d.message, out);
  for (const auto& [span, note] : d.notes) render_located(sm, span, "note", note, out);
  return out;
}

std::string Diagnostics::render(const SourceManager& sm) const {
  std::string out;
  for (const auto& d : diags_) out += render_diagnostic(sm, d);
  if (num_errors_ > kMaxErrors)
    out += "error: too many errors (" + std::to_string(num_errors_) + "); stopping after " +
           std::to_string(kMaxErrors) + "\n";
  return out;
}

static size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1] ? 1 : 0)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_name(const std::string& name, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& c : candidates) {
    size_t d = edit_distance(name, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  size_t limit = std::max<size_t>(1, std::min<size_t>(3, (name.size() + 2) / 3));
  return best_d <= limit ? best : std::string();
}

}  // namespace grape
