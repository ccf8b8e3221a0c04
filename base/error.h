// The one exception type of Grape's library code (base/: included by every folder, so that jit/
// and scheduler/ need nothing from runtime/). Its code maps 1:1 onto the C API's grp_code; its
// message is complete and user-facing (it names the file, position, argument or tensor).
#pragma once
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

namespace grape {

enum class ErrorCode {
  InvalidArgument = 1,
  Syntax,
  Type,
  IO,
  Format,
  Unsupported,
  NoDevice,
  Device,
  OutOfMemory,
  Internal,
  Interrupted,  // a run stopped by Session::interrupt() or its timeout (state unchanged)
};

// Longer runs of letters, digits and '_' than this are cut in error messages.
constexpr size_t kMaxMessageWord = 200;

// `message` with every run of letters, digits and '_' longer than kMaxMessageWord bytes cut to its
// first 32 bytes, "..." and its length: a 100,000-character name, dimension or number from the
// user's program or call then cannot make a message of 100,000 characters, wherever it is quoted
// (names in compile errors are cut more tightly by quote_name, lang/diagnostics.h).
inline std::string shorten_long_words(const std::string& message) {
  auto word_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  };
  std::string out;
  size_t i = 0;
  while (i < message.size()) {
    size_t j = i;
    while (j < message.size() && word_char(message[j])) ++j;
    if (j == i) {
      out += message[i++];
      continue;
    }
    if (j - i > kMaxMessageWord)
      out += message.substr(i, 32) + "... (" + std::to_string(j - i) + " characters)";
    else
      out.append(message, i, j - i);
    i = j;
  }
  return out;
}

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message)
      : std::runtime_error(shorten_long_words(message)), code_(code) {}
  ErrorCode code() const { return code_; }

 protected:
  // A message that is already fit to print as it is (rendered diagnostics, whose caret lines up
  // with the echoed source line).
  struct Verbatim {};
  Error(ErrorCode code, const std::string& message, Verbatim) : std::runtime_error(message), code_(code) {}

 private:
  ErrorCode code_;
};

// An error about a position of the program: a compile error (its message: every diagnostic,
// rendered) or a run-time error of an op (throw_at). The C API reports the position.
class SourceError : public Error {
 public:
  SourceError(ErrorCode code, const std::string& message, std::string file, int line, int column)
      : Error(code, message, Verbatim{}), file_(std::move(file)), line_(line), column_(column) {}
  const std::string& file() const { return file_; }
  int line() const { return line_; }
  int column() const { return column_; }

 private:
  std::string file_;
  int line_, column_;
};

// Where in the program an op came from; an empty file: nowhere known.
struct SourcePosition {
  std::string file;
  int line = 0, column = 0;
};

// Throws a SourceError whose message reads `FILE:LINE:COL: error: MESSAGE` (`internal error` for
// ErrorCode::Internal), as the first line of a compile error does; without a position, an Error
// with `message` alone.
[[noreturn]] inline void throw_at(ErrorCode code, const SourcePosition& at, const std::string& message) {
  if (at.file.empty()) throw Error(code, message);
  throw SourceError(code,
                    at.file + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) +
                        (code == ErrorCode::Internal ? ": internal error: " : ": error: ") +
                        shorten_long_words(message),
                    at.file, at.line, at.column);
}

}  // namespace grape
