#include "jit/compile_wire.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace grape::jit {
namespace {

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
void put_str(std::string& out, const std::string& s) {
  put_u64(out, s.size());
  out += s;
}

// Reads fields front to back; any read past the end fails the whole decode.
struct Reader {
  const std::string& b;
  size_t at = 0;
  bool good = true;
  std::uint64_t u64() {
    if (!good || b.size() - at < 8) return good = false, 0;
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t{static_cast<unsigned char>(b[at + i])} << (8 * i);
    at += 8;
    return v;
  }
  std::string str() {
    const std::uint64_t n = u64();
    if (!good || n > b.size() - at) return good = false, std::string();
    std::string s = b.substr(at, n);
    at += n;
    return s;
  }
  bool done() const { return good && at == b.size(); }
};

}  // namespace

std::string encode(const CompileRequest& r) {
  std::string out;
  put_str(out, r.source);
  put_str(out, r.name);
  put_str(out, r.arch);
  put_u64(out, r.options.size());
  for (const std::string& o : r.options) put_str(out, o);
  return out;
}

bool decode(const std::string& bytes, CompileRequest* out) {
  Reader rd{bytes};
  out->source = rd.str();
  out->name = rd.str();
  out->arch = rd.str();
  const std::uint64_t n = rd.u64();
  if (!rd.good || n > bytes.size() / 8) return false;  // each option takes 8 bytes at least
  out->options.clear();
  for (std::uint64_t i = 0; i < n && rd.good; ++i) out->options.push_back(rd.str());
  return rd.done();
}

std::string encode(const CompileReply& r) {
  std::string out;
  put_u64(out, r.ok ? 1 : 0);
  if (r.ok) {
    put_str(out, std::string(r.result.cubin.begin(), r.result.cubin.end()));
    put_str(out, r.result.ptx);
    put_str(out, r.result.log);
    put_str(out, r.result.nvrtc_version);
  } else {
    put_u64(out, static_cast<std::uint64_t>(r.code));
    put_str(out, r.message);
  }
  return out;
}

bool decode(const std::string& bytes, CompileReply* out) {
  Reader rd{bytes};
  const std::uint64_t ok = rd.u64();
  if (!rd.good || ok > 1) return false;
  out->ok = ok == 1;
  if (out->ok) {
    const std::string cubin = rd.str();
    out->result.cubin.assign(cubin.begin(), cubin.end());
    out->result.ptx = rd.str();
    out->result.log = rd.str();
    out->result.nvrtc_version = rd.str();
  } else {
    const std::uint64_t code = rd.u64();
    if (code > 1000) return false;
    out->code = static_cast<int>(code);
    out->message = rd.str();
  }
  return rd.done();
}

bool write_frame(int fd, const std::string& bytes) {
  std::string frame;
  frame.reserve(8 + bytes.size());
  put_u64(frame, bytes.size());
  frame += bytes;
  size_t sent = 0;
  while (sent < frame.size()) {
    ssize_t n = ::send(fd, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) n = ::write(fd, frame.data() + sent, frame.size() - sent);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

namespace {
bool read_all(int fd, char* p, size_t n) {
  while (n > 0) {
    const ssize_t got = ::read(fd, p, n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}
}  // namespace

bool read_frame(int fd, std::string* bytes) {
  char head[8];
  if (!read_all(fd, head, 8)) return false;
  const std::string length(head, 8);
  Reader rd{length};
  const std::uint64_t n = rd.u64();
  if (n > kMaxCompileFrame) return false;
  bytes->resize(n);
  return n == 0 || read_all(fd, bytes->data(), n);
}

}  // namespace grape::jit
