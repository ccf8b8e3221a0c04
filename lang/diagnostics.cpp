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

// Source lines longer than this are shown cut around the caret, with kShownBefore bytes before it.
static constexpr size_t kMaxShownLine = 160;
static constexpr size_t kShownBefore = 60;

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
  int begin = std::max(1, span.begin.column);
  int end = span.end.line == span.begin.line ? span.end.column : static_cast<int>(line.size()) + 1;
  if (end <= begin) end = begin + 1;
  // A long line is cut around the caret (minified or generated sources can have lines of
  // megabytes); "..." marks each cut. Cuts fall on UTF-8 character boundaries.
  std::string_view shown = line;
  int shift = 0;  // columns removed on the left (the "..." added there is not counted)
  bool cut_left = false, cut_right = false;
  if (line.size() > kMaxShownLine) {
    auto at_char = [&](size_t i) {
      return i >= line.size() || (static_cast<unsigned char>(line[i]) & 0xc0u) != 0x80u;
    };
    size_t lo =
        static_cast<size_t>(begin - 1) > kShownBefore ? static_cast<size_t>(begin - 1) - kShownBefore : 0;
    lo = std::min(lo, line.size());
    while (lo > 0 && !at_char(lo)) --lo;
    size_t hi = std::min(line.size(), lo + kMaxShownLine);
    while (hi < line.size() && !at_char(hi)) --hi;
    shown = line.substr(lo, hi - lo);
    shift = static_cast<int>(lo);
    cut_left = lo > 0;
    cut_right = hi < line.size();
    end = std::min(end, static_cast<int>(hi) + 2);
  }
  out += "  ";
  if (cut_left) out += "...";
  out += shown;
  if (cut_right) out += "...";
  out += "\n  ";
  if (cut_left) out += "   ";
  for (int c = shift + 1; c < begin; ++c)
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

// Optimal string alignment distance: insertions, deletions, substitutions and transpositions of
// two adjacent characters ("tahn" is one edit from "tanh") each cost 1.
static size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1] ? 1 : 0)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_name(const std::string& name, const std::vector<std::string>& candidates) {
  // Long names are not typos of short ones, and the search is quadratic in the length: skip it.
  if (name.size() > kMaxSuggestLength) return {};
  size_t limit = std::max<size_t>(1, std::min<size_t>(3, (name.size() + 2) / 3));
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& c : candidates) {
    size_t diff = c.size() > name.size() ? c.size() - name.size() : name.size() - c.size();
    if (diff > limit || c == best) continue;  // too far apart to be within the limit
    size_t d = edit_distance(name, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best_d <= limit ? best : std::string();
}

// The first kQuotedNameHead bytes of a long name, cut on a UTF-8 character boundary.
static std::string_view name_head(std::string_view name) {
  size_t head = kQuotedNameHead;
  while (head > 0 && (static_cast<unsigned char>(name[head]) & 0xc0u) == 0x80u) --head;
  return name.substr(0, head);
}

std::string quote_name(std::string_view name) {
  if (name.size() <= kMaxQuotedName) return "'" + std::string(name) + "'";
  return "'" + std::string(name_head(name)) + "...' (" + std::to_string(name.size()) + " characters)";
}

std::string cut_name(std::string_view name) {
  if (name.size() <= kMaxQuotedName) return std::string(name);
  return std::string(name_head(name)) + "... (" + std::to_string(name.size()) + " characters)";
}

}  // namespace grape
