// The one exception type of Grape's library code. Its code maps 1:1 onto the C API's grp_code; its
// message is complete and user-facing (it names the file, position, argument or tensor).
#pragma once
#include <stdexcept>
#include <string>

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

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace grape
