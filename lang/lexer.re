// The .grp lexer. re2c turns this into gen/lang/lexer.cpp (see lang/CMakeLists.txt).
#include "lang/lexer.h"

#include <cerrno>
#include <cstdlib>
#include <string>

namespace grape {

namespace {

bool is_ident_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

std::string clip(std::string s) {
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

std::string describe_byte(unsigned char c) {
  static const char hex[] = "0123456789ABCDEF";
  if (c >= 0x21 && c < 0x7f) return std::string("'") + static_cast<char>(c) + "'";
  return std::string("byte 0x") + hex[c >> 4] + hex[c & 15];
}

}  // namespace

Lexer::Lexer(const SourceFile& src, int file, Diagnostics& diags)
    : file_(file),
      diags_(diags),
      cur_(reinterpret_cast<Cursor>(src.text.c_str())),
      lim_(cur_ + src.text.size()),
      line_start_(cur_) {}

Span Lexer::span(Cursor b, Cursor e) const {
  Span s;
  s.file = file_;
  s.begin = SourcePos{line_, static_cast<int>(b - line_start_) + 1};
  s.end = SourcePos{line_, static_cast<int>(e - line_start_) + 1};
  return s;
}

Parser::symbol_type Lexer::next() {
  Parser::symbol_type t = lex();
  switch (t.kind()) {
    case Parser::symbol_kind::S_NEWLINE:
    case Parser::symbol_kind::S_SEMI:
    case Parser::symbol_kind::S_IMPLICIT_SEP:
      prev_ = Prev::Separator;
      break;
    case Parser::symbol_kind::S_IDENT:
    case Parser::symbol_kind::S_RPAREN:
    case Parser::symbol_kind::S_RBRACKET:
      prev_ = Prev::Postfix;
      break;
    case Parser::symbol_kind::S_DOT:
      prev_ = prev_ == Prev::Postfix ? Prev::MemberDot : Prev::Other;
      break;
    default:
      prev_ = Prev::Other;
  }
  return t;
}

// Is the next token (past blanks, newlines and comments) the keyword `else`?
bool Lexer::else_follows(Cursor p, Cursor* else_at) const {
  for (;;) {
    while (p < lim_ && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n' || *p == '\f' || *p == '\v')) ++p;
    if (p < lim_ && *p == '#') {
      while (p < lim_ && *p != '\n') ++p;
      continue;
    }
    break;
  }
  if (lim_ - p >= 4 && p[0] == 'e' && p[1] == 'l' && p[2] == 's' && p[3] == 'e' &&
      (lim_ - p == 4 || !is_ident_char(p[4]))) {
    *else_at = p;
    return true;
  }
  return false;
}

Parser::symbol_type Lexer::open(char c, Cursor tok) {
  brackets_.push_back(c);
  Span s = span(tok, cur_);
  if (static_cast<int>(brackets_.size()) > kMaxNesting) {
    diags_.error(s, "brackets nested too deeply (more than " + std::to_string(kMaxNesting) + " levels)");
    aborted_ = true;
    return Parser::make_END(s);
  }
  switch (c) {
    case '(': return Parser::make_LPAREN(s);
    case '[': return Parser::make_LBRACKET(s);
    default: return Parser::make_LBRACE(s);
  }
}

// A closer pops its opener. A mismatched one is left to the parser to report; `}` also drops any
// unclosed ( or [ inside its block, so one missing `)` does not swallow the rest of the file.
void Lexer::close(char c) {
  char want = c == ')' ? '(' : c == ']' ? '[' : '{';
  for (size_t i = brackets_.size(); i-- > 0;) {
    if (brackets_[i] == want) {
      brackets_.resize(i);
      return;
    }
    if (brackets_[i] == '{') return;
  }
}

Parser::symbol_type Lexer::lex_string(Cursor tok) {
  std::string value;
  Cursor p = cur_;  // just past the opening quote
  while (p < lim_ && *p != '"' && *p != '\n') {
    if (*p == '\\') {
      if (p + 1 >= lim_ || p[1] == '\n') {
        ++p;
        break;
      }
      switch (p[1]) {
        case '"': value += '"'; break;
        case '\\': value += '\\'; break;
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        default:
          diags_.error(span(p, p + 2), "unknown escape sequence '\\" + std::string(1, static_cast<char>(p[1])) +
                                           "' in string (valid: \\\" \\\\ \\n \\t)");
      }
      p += 2;
      continue;
    }
    value += static_cast<char>(*p++);
  }
  if (p < lim_ && *p == '"') {
    cur_ = p + 1;
  } else {
    cur_ = p;
    diags_.error(span(tok, p), "unterminated string literal (missing closing '\"')");
  }
  return Parser::make_STRING(std::move(value), span(tok, cur_));
}

Parser::symbol_type Lexer::lex_int(Cursor tok) {
  int64_t v = 0;
  bool overflow = false;
  for (Cursor p = tok; p < cur_; ++p) {
    int d = *p - '0';
    if (v > (INT64_MAX - d) / 10) {
      overflow = true;
      break;
    }
    v = v * 10 + d;
  }
  Span s = span(tok, cur_);
  if (overflow) {
    diags_.error(s, "integer literal " + clip(std::string(tok, cur_)) + " is out of range of int64");
    v = 0;
  }
  return Parser::make_INT(v, s);
}

Parser::symbol_type Lexer::lex_float(Cursor tok) {
  FloatToken f;
  f.text.assign(tok, cur_);
  errno = 0;
  f.value = std::strtod(f.text.c_str(), nullptr);
  Span s = span(tok, cur_);
  if (errno == ERANGE && (f.value > 1 || f.value < -1)) {
    diags_.error(s, "float literal " + clip(f.text) + " is out of range");
    f.value = 0;
  }
  return Parser::make_FLOAT(std::move(f), s);
}

void Lexer::bad_chars(Cursor tok) {
  unsigned char c = *tok;
  std::string msg;
  if (c >= 0x80) {
    msg = "non-ASCII characters are only allowed in comments and strings";
  } else {
    msg = "unexpected character " + describe_byte(c);
  }
  diags_.error(span(tok, cur_), msg);
}

/*!re2c
  re2c:api:style = free-form;
  re2c:define:YYCTYPE = "unsigned char";
  re2c:define:YYCURSOR = "cur_";
  re2c:define:YYLIMIT = "lim_";
  re2c:define:YYMARKER = "mar";
  re2c:yyfill:enable = 0;
  re2c:eof = 0;

  ident = [A-Za-z_][A-Za-z0-9_]*;
  digits = [0-9]+;
  exponent = [eE] [+-]? digits;
  float = digits "." digits exponent? | "." digits exponent? | digits exponent;
*/

Parser::symbol_type Lexer::lex() {
  for (;;) {
    if (aborted_) return Parser::make_END(span_here());
    Cursor tok = cur_;
    Cursor mar = cur_;
    (void)mar;
    // After `name.`, digits (and letters after them) form a member name: `h.3.attn`.
    if (prev_ == Prev::MemberDot && cur_ < lim_ && is_digit(*cur_)) {
      while (cur_ < lim_ && is_ident_char(*cur_)) ++cur_;
      return Parser::make_IDENT(std::string(tok, cur_), span(tok, cur_));
    }
    // `x.5` right after a name, `)` or `]` is a member access, not the float .5.
    if (prev_ == Prev::Postfix && lim_ - cur_ >= 2 && cur_[0] == '.' && is_digit(cur_[1])) {
      ++cur_;
      return Parser::make_DOT(span(tok, cur_));
    }
    /*!re2c
      $ {
        // Every declaration ends with a separator, also the last one.
        if (prev_ != Prev::Separator && prev_ != Prev::Start) return Parser::make_IMPLICIT_SEP(span(tok, tok));
        return Parser::make_END(span(tok, tok));
      }
      [ \t\r\f\v]+ { continue; }
      "#" [^\n]* { continue; }
      "\n" {
        Span s = span(tok, cur_);
        newline_at(cur_);
        if (!newline_significant() || prev_ == Prev::Separator || prev_ == Prev::Start) continue;
        if (skip_newlines_until_ && cur_ <= skip_newlines_until_) continue;
        Cursor else_at = nullptr;
        if (else_follows(cur_, &else_at)) {
          skip_newlines_until_ = else_at;
          continue;
        }
        return Parser::make_NEWLINE(s);
      }

      "model"    { return Parser::make_MODEL(span(tok, cur_)); }
      "const"    { return Parser::make_CONST(span(tok, cur_)); }
      "weights"  { return Parser::make_WEIGHTS(span(tok, cur_)); }
      "state"    { return Parser::make_STATE(span(tok, cur_)); }
      "fn"       { return Parser::make_FN(span(tok, cur_)); }
      "let"      { return Parser::make_LET(span(tok, cur_)); }
      "var"      { return Parser::make_VAR(span(tok, cur_)); }
      "if"       { return Parser::make_IF(span(tok, cur_)); }
      "else"     { return Parser::make_ELSE(span(tok, cur_)); }
      "for"      { return Parser::make_FOR(span(tok, cur_)); }
      "in"       { return Parser::make_IN(span(tok, cur_)); }
      "while"    { return Parser::make_WHILE(span(tok, cur_)); }
      "break"    { return Parser::make_BREAK(span(tok, cur_)); }
      "continue" { return Parser::make_CONTINUE(span(tok, cur_)); }
      "return"   { return Parser::make_RETURN(span(tok, cur_)); }
      "and"      { return Parser::make_AND(span(tok, cur_)); }
      "or"       { return Parser::make_OR(span(tok, cur_)); }
      "not"      { return Parser::make_NOT(span(tok, cur_)); }
      "true"     { return Parser::make_TRUE(span(tok, cur_)); }
      "false"    { return Parser::make_FALSE(span(tok, cur_)); }
      ident      { return Parser::make_IDENT(std::string(tok, cur_), span(tok, cur_)); }

      digits     { return lex_int(tok); }
      float      { return lex_float(tok); }
      ["]        { return lex_string(tok); }

      "("   { return open('(', tok); }
      "["   { return open('[', tok); }
      "{"   { return open('{', tok); }
      ")"   { close(')'); return Parser::make_RPAREN(span(tok, cur_)); }
      "]"   { close(']'); return Parser::make_RBRACKET(span(tok, cur_)); }
      "}" {
        // `{ x }` ends the statement x: a separator goes before the brace, which is lexed again.
        if (prev_ != Prev::Separator && prev_ != Prev::Start) {
          cur_ = tok;
          return Parser::make_IMPLICIT_SEP(span(tok, tok + 1));
        }
        close('}');
        return Parser::make_RBRACE(span(tok, cur_));
      }
      ","   { return Parser::make_COMMA(span(tok, cur_)); }
      ":"   { return Parser::make_COLON(span(tok, cur_)); }
      ";"   { return Parser::make_SEMI(span(tok, cur_)); }
      "="   { return Parser::make_ASSIGN(span(tok, cur_)); }
      "."   { return Parser::make_DOT(span(tok, cur_)); }
      ".."  { return Parser::make_DOTDOT(span(tok, cur_)); }
      "..." { return Parser::make_ELLIPSIS(span(tok, cur_)); }
      "->"  { return Parser::make_ARROW(span(tok, cur_)); }
      "+"   { return Parser::make_PLUS(span(tok, cur_)); }
      "-"   { return Parser::make_MINUS(span(tok, cur_)); }
      "*"   { return Parser::make_STAR(span(tok, cur_)); }
      "/"   { return Parser::make_SLASH(span(tok, cur_)); }
      "%"   { return Parser::make_PERCENT(span(tok, cur_)); }
      "@"   { return Parser::make_AT(span(tok, cur_)); }
      "=="  { return Parser::make_EQ(span(tok, cur_)); }
      "!="  { return Parser::make_NE(span(tok, cur_)); }
      "<"   { return Parser::make_LT(span(tok, cur_)); }
      "<="  { return Parser::make_LE(span(tok, cur_)); }
      ">"   { return Parser::make_GT(span(tok, cur_)); }
      ">="  { return Parser::make_GE(span(tok, cur_)); }

      // Spellings from other languages: say what to write, and go on as if it had been written.
      "&&" {
        diags_.error(span(tok, cur_), "'&&' is not an operator; use 'and'");
        return Parser::make_AND(span(tok, cur_));
      }
      "||" {
        diags_.error(span(tok, cur_), "'||' is not an operator; use 'or'");
        return Parser::make_OR(span(tok, cur_));
      }
      "!" {
        diags_.error(span(tok, cur_), "'!' is not an operator; use 'not'");
        return Parser::make_NOT(span(tok, cur_));
      }

      [\x80-\xff]+ { bad_chars(tok); continue; }
      *            { bad_chars(tok); continue; }
    */
  }
}

}  // namespace grape
