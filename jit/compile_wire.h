// The messages between a build and its compile worker processes (jit/compile_workers.h): a request
// (one kernel to compile with NVRTC) and its reply (the result, or the error compile_cuda threw),
// each sent as one frame: its length (8 bytes, little-endian) and its bytes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "jit/nvrtc.h"

namespace grape::jit {

struct CompileRequest {
  std::string source;
  std::string name;
  std::string arch;
  std::vector<std::string> options;
};

struct CompileReply {
  bool ok = false;
  CompileResult result;  // when ok
  int code = 0;          // when not ok: the grape::ErrorCode compile_cuda threw
  std::string message;   // and its message
};

// The longest frame either side accepts (a request is a kernel's source, a reply its cubin and PTX:
// a few MB); a longer length prefix means a broken peer.
constexpr std::uint64_t kMaxCompileFrame = std::uint64_t{1} << 30;

std::string encode(const CompileRequest& r);
std::string encode(const CompileReply& r);
// False when `bytes` is not a whole, well-formed message.
bool decode(const std::string& bytes, CompileRequest* out);
bool decode(const std::string& bytes, CompileReply* out);

// One frame on a socket or pipe; false when the peer is gone or the stream broke (never SIGPIPE:
// sockets are written with MSG_NOSIGNAL).
bool write_frame(int fd, const std::string& bytes);
bool read_frame(int fd, std::string* bytes);

}  // namespace grape::jit
