// Diagnostics are collected, never printed-and-exited: the front end reports every error it can
// find in one run. Rendering gives `file:line:col: error: message`, the source line and a caret.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "lang/source.h"

namespace grape {

enum class Severity { Error, Warning, Note };

struct Diagnostic {
  Severity severity = Severity::Error;
  Span span;
  std::string message;
  std::vector<std::pair<Span, std::string>> notes;  // e.g. "declared here"
};

class Diagnostics {
 public:
  // Identical (span, message) pairs are reported once: a function inlined at several call sites
  // must not repeat its errors.
  Diagnostic& error(Span span, std::string message);
  void warning(Span span, std::string message);
  bool has_errors() const { return num_errors_ > 0; }
  int num_errors() const { return num_errors_; }
  const std::vector<Diagnostic>& all() const { return diags_; }
  // A cap keeps pathological inputs (fuzzers) from producing unbounded output.
  static constexpr int kMaxErrors = 100;
  std::string render(const SourceManager& sm) const;

 private:
  std::vector<Diagnostic> diags_;
  Diagnostic overflow_;
  int num_errors_ = 0;
};

std::string render_diagnostic(const SourceManager& sm, const Diagnostic& d);

// "did you mean" helper: the candidate closest to `name` by edit distance (a transposition of two
// adjacent characters counts as one edit), or "" if none is close. Names longer than
// kMaxSuggestLength get no suggestion (the search would only cost time).
constexpr size_t kMaxSuggestLength = 64;
std::string closest_name(const std::string& name, const std::vector<std::string>& candidates);

// A name from the user's program, quoted for a message: 'name'. A name longer than kMaxQuotedName
// bytes shows its first kQuotedNameHead bytes, "..." and its length ('aaaa...' (100000
// characters)), so that a hostile 100k-character name costs a line in each message quoting it,
// as a long source line does (render_diagnostic cuts those around the caret). Every diagnostic
// quoting a user's identifier, keyword, weight path or type name goes through this; cut_name is
// the same without the quotes, for names listed unquoted (a chain "f -> g -> f").
constexpr size_t kMaxQuotedName = 64;
constexpr size_t kQuotedNameHead = 32;
std::string quote_name(std::string_view name);
std::string cut_name(std::string_view name);

}  // namespace grape
