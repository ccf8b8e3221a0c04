#include "jit/kernel_bundle.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "base/error.h"
#include "jit/little_endian.h"

namespace grape::jit {
namespace {

constexpr char kMagic[8] = {'G', 'R', 'A', 'P', 'E', 'K', 'B', '\x01'};
constexpr std::size_t kHeaderSize = 40;  // magic, u32 version, u32 0, u64 payload, u64 XXH64, u64 compressed
// A bundle of every kernel of GPT-2 for two targets is about 30 MB uncompressed; the limit only
// keeps a hostile header from asking for an absurd allocation.
constexpr std::uint64_t kMaxPayload = std::uint64_t{4} << 30;
constexpr std::uint64_t kMaxRatio = 1000;
constexpr int kZstdLevel = 3;

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>(v >> (8 * i));
}
void put_str(std::string& out, std::string_view s) {
  put_u64(out, s.size());
  out.append(s);
}

// Reads the payload's fields in order; every read is checked against what is left.
class Reader {
 public:
  Reader(const std::string& data, const std::string& path) : data_(data), path_(path) {}
  std::uint64_t u64(const char* what) {
    need(8, what);
    std::uint64_t v = get_le64(reinterpret_cast<const unsigned char*>(data_.data() + at_));
    at_ += 8;
    return v;
  }
  std::string str(const char* what) {
    std::uint64_t n = u64(what);
    need(n, what);
    std::string s = data_.substr(at_, n);
    at_ += n;
    return s;
  }
  bool done() const { return at_ == data_.size(); }

 private:
  void need(std::uint64_t n, const char* what) {
    if (n > data_.size() - at_)
      throw Error(ErrorCode::Format, "kernel bundle " + path_ + ": corrupt (" + what + " runs past the end)");
  }
  const std::string& data_;
  const std::string& path_;
  std::size_t at_ = 0;
};

// The whole file; a FIFO or directory is refused before anything could block on it.
std::string read_regular_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw Error(ErrorCode::IO, "kernel bundle " + path + ": cannot be opened: " + errno_text());
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(ErrorCode::IO, "kernel bundle " + path + ": not a regular file");
  }
  std::string data;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      std::string why = errno_text();
      ::close(fd);
      throw Error(ErrorCode::IO, "kernel bundle " + path + ": cannot be read: " + why);
    }
    if (n == 0) break;
    data.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return data;
}

std::mutex& bundles_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::shared_ptr<const KernelBundle>>& bundles_in_use() {
  static std::vector<std::shared_ptr<const KernelBundle>> v;
  return v;
}

}  // namespace

Hash128 bundle_key(const std::string& source, const std::string& arch,
                   const std::vector<std::string>& options) {
  KeyInputs k = KeyInputs::for_compile(source, "", arch, options);
  k.nvrtc_version = "(bundle: any NVRTC)";
  return cache_key(k);
}

void write_bundle(const std::string& path, const std::vector<BundledKernel>& kernels,
                  const std::string& nvrtc_version) {
  std::string payload;
  put_str(payload, grape_version());
  put_str(payload, nvrtc_version);
  put_u64(payload, kernels.size());
  for (const BundledKernel& k : kernels) {
    put_u64(payload, k.key.high);
    put_u64(payload, k.key.low);
    put_str(payload, k.arch);
    put_str(payload, std::string_view(reinterpret_cast<const char*>(k.cubin.data()), k.cubin.size()));
    put_str(payload, k.ptx);
  }
  std::string compressed(ZSTD_compressBound(payload.size()), '\0');
  std::size_t n =
      ZSTD_compress(compressed.data(), compressed.size(), payload.data(), payload.size(), kZstdLevel);
  if (ZSTD_isError(n))
    throw Error(ErrorCode::Internal,
                std::string("zstd cannot compress the kernel bundle: ") + ZSTD_getErrorName(n));
  compressed.resize(n);
  std::string file(kMagic, sizeof kMagic);
  put_u64(file, kBundleFormatVersion);  // u32 version, u32 0
  put_u64(file, payload.size());
  put_u64(file, xxh64(payload.data(), payload.size()));
  put_u64(file, compressed.size());
  file += compressed;

  const std::string tmp = path + ".partial.tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw Error(ErrorCode::IO, "kernel bundle " + path + ": cannot be written: " + errno_text());
  bool ok = std::fwrite(file.data(), 1, file.size(), f) == file.size();
  ok = std::fflush(f) == 0 && ok;
  ok = ::fsync(::fileno(f)) == 0 && ok;
  std::string why = ok ? "" : errno_text();
  ok = std::fclose(f) == 0 && ok;
  if (ok && std::rename(tmp.c_str(), path.c_str()) == 0) return;
  if (why.empty()) why = errno_text();
  std::remove(tmp.c_str());
  throw Error(ErrorCode::IO, "kernel bundle " + path + ": cannot be written: " + why);
}

std::shared_ptr<const KernelBundle> KernelBundle::load(const std::string& path) {
  return parse(read_regular_file(path), path);
}

std::shared_ptr<const KernelBundle> KernelBundle::parse(const std::string& file, const std::string& path) {
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::Format, "kernel bundle " + path + ": " + why);
  };
  if (file.size() < kHeaderSize || std::memcmp(file.data(), kMagic, sizeof kMagic) != 0)
    throw bad("not a Grape kernel bundle (write one with `grape compile FILE --bundle OUT`)");
  const auto* h = reinterpret_cast<const unsigned char*>(file.data());
  const std::uint64_t version = get_le64(h + 8), size = get_le64(h + 16), sum = get_le64(h + 24),
                      compressed = get_le64(h + 32);
  if (version != kBundleFormatVersion)
    throw bad("format version " + std::to_string(version & 0xffffffffu) + ", this Grape reads version " +
              std::to_string(kBundleFormatVersion) + "; write it again with this Grape");
  if (compressed != file.size() - kHeaderSize)
    throw bad("truncated or padded (" + std::to_string(file.size() - kHeaderSize) +
              " bytes of payload, the header says " + std::to_string(compressed) + ")");
  // Nothing is allocated for a size the file cannot back: the zstd frame must declare the same
  // size, and kernels do not compress 1000-fold (a hostile header could otherwise ask for 4 GiB).
  const unsigned long long declared = ZSTD_getFrameContentSize(file.data() + kHeaderSize, compressed);
  if (size > kMaxPayload || size > compressed * kMaxRatio + (1u << 20) || declared != size)
    throw bad("corrupt (payload size " + std::to_string(size) + ")");
  std::string payload(size, '\0');
  std::size_t got = ZSTD_decompress(payload.data(), payload.size(), file.data() + kHeaderSize, compressed);
  if (ZSTD_isError(got)) throw bad(std::string("corrupt (") + ZSTD_getErrorName(got) + ")");
  if (got != size || xxh64(payload.data(), payload.size()) != sum)
    throw bad("corrupt (payload checksum mismatch)");

  auto b = std::make_shared<KernelBundle>();
  b->path_ = path;
  Reader r(payload, path);
  const std::string built_by = r.str("the Grape version");
  if (built_by != grape_version())
    throw bad("written by Grape " + built_by + ", this is Grape " + grape_version() +
              "; its kernels would not match: write it again with this Grape");
  b->nvrtc_version_ = r.str("the NVRTC version");
  const std::uint64_t count = r.u64("the kernel count");
  // Each kernel takes at least 40 bytes: the count cannot promise more than the payload holds.
  if (count > payload.size() / 40) throw bad("corrupt (kernel count " + std::to_string(count) + ")");
  b->kernels_.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    BundledKernel k;
    k.key.high = r.u64("a kernel key");
    k.key.low = r.u64("a kernel key");
    k.arch = r.str("a kernel's target");
    std::string cubin = r.str("a kernel's cubin");
    k.cubin.assign(cubin.begin(), cubin.end());
    k.ptx = r.str("a kernel's PTX");
    if (k.cubin.empty() && k.ptx.empty()) throw bad("corrupt (kernel " + std::to_string(i) + " has no code)");
    b->kernels_.push_back(std::move(k));
  }
  if (!r.done()) throw bad("corrupt (bytes after the last kernel)");
  return b;
}

const BundledKernel* KernelBundle::find(const Hash128& key) const {
  for (const BundledKernel& k : kernels_)
    if (k.key == key) return &k;
  return nullptr;
}

void use_bundle(std::shared_ptr<const KernelBundle> bundle) {
  std::lock_guard<std::mutex> lock(bundles_mutex());
  auto& v = bundles_in_use();
  for (const auto& b : v)
    if (b->path() == bundle->path()) return;
  v.push_back(std::move(bundle));
}

std::optional<CompileResult> find_bundled(const std::string& source, const std::string& arch,
                                          const std::vector<std::string>& options) {
  std::vector<std::shared_ptr<const KernelBundle>> bundles;
  {
    std::lock_guard<std::mutex> lock(bundles_mutex());
    bundles = bundles_in_use();
  }
  if (bundles.empty()) return std::nullopt;
  const Hash128 key = bundle_key(source, arch, options);
  for (const auto& b : bundles) {
    if (const BundledKernel* k = b->find(key)) {
      CompileResult r;
      r.cubin = k->cubin;
      r.ptx = k->ptx;
      r.nvrtc_version = b->nvrtc_version();
      r.from_cache = true;
      return r;
    }
  }
  return std::nullopt;
}

}  // namespace grape::jit
