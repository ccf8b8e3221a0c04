// The re2c lexer (lexer.re). Internal to lang/: the parser pulls tokens from it one at a time.
//
// Besides splitting text into tokens it implements the layout rules of the language:
//  - a newline ends a statement, except inside ( ) and [ ] and right before `else`;
//  - runs of blank lines and comments give one NEWLINE token;
//  - after `name.` digits are a member name (`h.3.attn` is h . 3 . attn), so `.5` is a float only
//    where a member access cannot be meant.
// Lexical errors become diagnostics; the lexer then skips the offending text and goes on.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "lang/diagnostics.h"
#include "lang/source.h"
#include "parser.hpp"

namespace grape {

class Lexer {
 public:
  // Deeper bracket nesting than this stops the parse with one diagnostic (no recursion anywhere in
  // the parser, but later stages walk the tree recursively).
  static constexpr int kMaxNesting = 256;

  Lexer(const SourceFile& src, int file, Diagnostics& diags);
  Parser::symbol_type next();
  // True once the input was abandoned (nesting too deep): further syntax errors are noise.
  bool aborted() const { return aborted_; }

 private:
  using Cursor = const unsigned char*;
  enum class Prev { Start, Separator, Postfix, MemberDot, Other };

  Parser::symbol_type lex();
  Span span(Cursor b, Cursor e) const;
  Span span_here() const { return span(cur_, cur_); }
  void newline_at(Cursor after) {
    ++line_;
    line_start_ = after;
  }
  bool newline_significant() const { return brackets_.empty() || brackets_.back() == '{'; }
  bool else_follows(Cursor from, Cursor* else_at) const;
  Parser::symbol_type open(char c, Cursor tok);
  void close(char c);
  Parser::symbol_type lex_string(Cursor tok);
  Parser::symbol_type lex_int(Cursor tok);
  Parser::symbol_type lex_float(Cursor tok);
  void bad_chars(Cursor tok);

  int file_;
  Diagnostics& diags_;
  Cursor cur_;
  Cursor lim_;
  Cursor line_start_;
  int line_ = 1;
  std::vector<char> brackets_;  // open ( [ {
  Prev prev_ = Prev::Start;
  Cursor skip_newlines_until_ = nullptr;  // newlines before an `else` found by else_follows
  bool aborted_ = false;
};

}  // namespace grape
