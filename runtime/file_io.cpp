#include "runtime/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/error.h"

namespace grape {

namespace {

std::string errno_text(int e) { return std::strerror(e); }

[[noreturn]] void io_error(const std::string& path, const std::string& what, int e) {
  throw Error(ErrorCode::IO, path + ": " + what + ": " + errno_text(e));
}

}  // namespace

InputFile::InputFile(const std::string& path) : path_(path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever. It is
  // refused below (not a regular file); for regular files the flag changes nothing.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) io_error(path, "cannot open file", errno);
  struct stat st;
  if (::fstat(fd_, &st) != 0) {
    int e = errno;
    ::close(fd_);
    io_error(path, "cannot stat file", e);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw Error(ErrorCode::IO, path + ": not a regular file" +
                                   (S_ISDIR(st.st_mode)                          ? " (a directory)"
                                    : S_ISFIFO(st.st_mode)                       ? " (a FIFO or pipe)"
                                    : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? " (a device)"
                                    : S_ISSOCK(st.st_mode)                       ? " (a socket)"
                                                                                 : ""));
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void InputFile::read_at(uint64_t offset, void* dst, size_t n) const {
  auto* p = static_cast<uint8_t*>(dst);
  while (n > 0) {
    size_t chunk = n < (size_t{1} << 30) ? n : (size_t{1} << 30);
    ssize_t got = ::pread(fd_, p, chunk, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      io_error(path_, "read failed", errno);
    }
    if (got == 0) throw Error(ErrorCode::IO, path_ + ": unexpected end of file (file changed while reading?)");
    p += got;
    offset += static_cast<uint64_t>(got);
    n -= static_cast<size_t>(got);
  }
}

std::vector<uint8_t> read_file_bytes(const std::string& path, uint64_t max_size) {
  InputFile f(path);
  if (f.size() > max_size || f.size() > static_cast<uint64_t>(SIZE_MAX / 2))
    throw Error(ErrorCode::IO, path + ": file too large (" + std::to_string(f.size()) +
                                   " bytes; the limit is " +
                                   std::to_string(std::min<uint64_t>(max_size, SIZE_MAX / 2)) + ")");
  std::vector<uint8_t> out(static_cast<size_t>(f.size()));
  if (!out.empty()) f.read_at(0, out.data(), out.size());
  return out;
}

void write_file_atomic(const std::string& path, const std::vector<ByteSpan>& parts) {
  static std::atomic<uint64_t> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) io_error(path, "cannot create temporary file '" + tmp + "'", errno);
  auto fail = [&](const std::string& what, int e) {
    ::close(fd);
    ::unlink(tmp.c_str());
    io_error(path, what, e);
  };
  for (const ByteSpan& part : parts) {
    const auto* p = static_cast<const uint8_t*>(part.data);
    size_t n = part.size;
    while (n > 0) {
      size_t chunk = n < (size_t{1} << 30) ? n : (size_t{1} << 30);
      ssize_t put = ::write(fd, p, chunk);
      if (put < 0) {
        if (errno == EINTR) continue;
        fail("write failed", errno);
      }
      p += put;
      n -= static_cast<size_t>(put);
    }
  }
  if (::fsync(fd) != 0) fail("fsync failed", errno);
  if (::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    io_error(path, "close failed", e);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    io_error(path, "cannot rename temporary file into place", e);
  }
}

void write_file_atomic(const std::string& path, const std::string& content) {
  write_file_atomic(path, {ByteSpan{content.data(), content.size()}});
}

bool is_valid_utf8(std::string_view s) {
  size_t i = 0, n = s.size();
  while (i < n) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) { ++i; continue; }
    size_t len;
    uint32_t cp;
    if (c >= 0xc2 && c <= 0xdf) { len = 2; cp = c & 0x1fu; }
    else if (c >= 0xe0 && c <= 0xef) { len = 3; cp = c & 0x0fu; }
    else if (c >= 0xf0 && c <= 0xf4) { len = 4; cp = c & 0x07u; }
    else return false;
    if (n - i < len) return false;
    for (size_t k = 1; k < len; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0u) != 0x80u) return false;
      cp = (cp << 6) | (cc & 0x3fu);
    }
    if (len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) return false;
    if (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) return false;
    i += len;
  }
  return true;
}

}  // namespace grape
