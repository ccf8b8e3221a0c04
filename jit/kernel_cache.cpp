#include "jit/kernel_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "base/error.h"
#include "jit/kernel_bundle.h"
#include "jit/little_endian.h"

#ifndef GRAPE_JIT_GRAPE_VERSION
#error "GRAPE_JIT_GRAPE_VERSION must be defined by the build (jit/CMakeLists.txt)"
#endif

namespace grape::jit {
namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'G', 'R', 'P', 'K', 'C', 'A', 'C', 'H'};
constexpr const char* kEntrySuffix = ".grpk";
constexpr const char* kTempInfix = ".grpk.tmp.";
constexpr int kZstdLevel = 3;
// No kernel comes near this; a header claiming more is corrupt, and is not trusted with an allocation.
constexpr std::uint64_t kMaxPayload = std::uint64_t{1} << 30;

// The header, little-endian, fixed size:
//   0 magic[8] | 8 schema u32 | 12 reserved u32 (0) | 16 key high u64 | 24 key low u64 |
//  32 cubin size | 40 ptx size | 48 log size | 56 compressed size | 64 XXH64(payload) |
//  72 XXH64(bytes 0..72)
constexpr std::size_t kHeaderSize = 80;

// mkdir -p, giving each directory it creates mode 0700 (kernels are private to their user).
void make_private_dirs(const fs::path& dir) {
  fs::path partial;
  for (const fs::path& part : dir) {
    partial /= part;
    if (partial.empty() || partial == partial.root_path()) continue;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) {
      throw Error(ErrorCode::IO,
                  "cannot create the kernel cache directory " + partial.string() + ": " + errno_text());
    }
  }
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw Error(ErrorCode::IO, "the kernel cache location " + dir.string() + " is not a directory");
  }
}

bool is_entry(const fs::path& p) { return p.extension() == kEntrySuffix; }
bool is_temp(const fs::path& p) { return p.filename().string().find(kTempInfix) != std::string::npos; }

void write_all(int fd, const unsigned char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(ErrorCode::IO, errno_text());
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

// Reads a whole file; false when it does not exist.
bool read_file(const std::string& path, std::vector<unsigned char>* out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return false;
    throw Error(ErrorCode::IO, "cannot be opened: " + errno_text());
  }
  out->clear();
  unsigned char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::string why = errno_text();
      ::close(fd);
      throw Error(ErrorCode::IO, "cannot be read: " + why);
    }
    if (n == 0) break;
    out->insert(out->end(), buf, buf + n);
  }
  ::close(fd);
  return true;
}

// Why `file` is not a valid entry for `key`, or "" (and *entry filled) when it is.
std::string decode(const std::vector<unsigned char>& file, const Hash128& key, CacheEntry* entry) {
  if (file.empty()) return "empty file";
  if (file.size() < kHeaderSize) {
    return "truncated: " + std::to_string(file.size()) + " bytes, shorter than the " +
           std::to_string(kHeaderSize) + "-byte header";
  }
  const unsigned char* h = file.data();
  if (std::memcmp(h, kMagic, sizeof kMagic) != 0) return "not a Grape kernel cache entry (wrong magic)";
  std::uint32_t schema = get_le32(h + 8);
  if (schema != kCacheSchemaVersion) {
    return "written with cache schema version " + std::to_string(schema) + ", this Grape uses " +
           std::to_string(kCacheSchemaVersion);
  }
  if (get_le64(h + 72) != xxh64(h, 72)) return "header checksum mismatch";
  if (get_le64(h + 16) != key.high || get_le64(h + 24) != key.low) return "holds a different key";
  std::uint64_t cubin_size = get_le64(h + 32), ptx_size = get_le64(h + 40), log_size = get_le64(h + 48);
  std::uint64_t compressed_size = get_le64(h + 56);
  if (cubin_size > kMaxPayload || ptx_size > kMaxPayload || log_size > kMaxPayload ||
      cubin_size + ptx_size + log_size > kMaxPayload) {
    return "implausible section sizes";
  }
  std::uint64_t body = file.size() - kHeaderSize;
  if (body < compressed_size) {
    return "truncated: payload has " + std::to_string(body) + " of " + std::to_string(compressed_size) +
           " bytes";
  }
  if (body > compressed_size) return "trailing bytes after the payload";

  std::size_t total = cubin_size + ptx_size + log_size;
  std::vector<unsigned char> payload(total);
  std::size_t got = ZSTD_decompress(payload.data(), payload.size(), h + kHeaderSize, compressed_size);
  if (ZSTD_isError(got)) return std::string("payload does not decompress: ") + ZSTD_getErrorName(got);
  if (got != total)
    return "payload decompresses to " + std::to_string(got) + " bytes, expected " + std::to_string(total);
  if (xxh64(payload.data(), payload.size()) != get_le64(h + 64)) return "payload checksum mismatch";

  const unsigned char* p = payload.data();
  entry->cubin.assign(p, p + cubin_size);
  entry->ptx.assign(reinterpret_cast<const char*>(p + cubin_size), ptx_size);
  entry->log.assign(reinterpret_cast<const char*>(p + cubin_size + ptx_size), log_size);
  return "";
}

std::vector<unsigned char> encode(const Hash128& key, const CacheEntry& entry) {
  std::vector<unsigned char> payload;
  payload.reserve(entry.cubin.size() + entry.ptx.size() + entry.log.size());
  payload.insert(payload.end(), entry.cubin.begin(), entry.cubin.end());
  payload.insert(payload.end(), entry.ptx.begin(), entry.ptx.end());
  payload.insert(payload.end(), entry.log.begin(), entry.log.end());

  std::vector<unsigned char> file(kHeaderSize + ZSTD_compressBound(payload.size()));
  std::size_t compressed = ZSTD_compress(file.data() + kHeaderSize, file.size() - kHeaderSize, payload.data(),
                                         payload.size(), kZstdLevel);
  if (ZSTD_isError(compressed)) {
    throw Error(ErrorCode::Internal,
                std::string("zstd cannot compress a kernel: ") + ZSTD_getErrorName(compressed));
  }
  file.resize(kHeaderSize + compressed);
  unsigned char* h = file.data();
  std::memcpy(h, kMagic, sizeof kMagic);
  put_le32(h + 8, kCacheSchemaVersion);
  put_le32(h + 12, 0);
  put_le64(h + 16, key.high);
  put_le64(h + 24, key.low);
  put_le64(h + 32, entry.cubin.size());
  put_le64(h + 40, entry.ptx.size());
  put_le64(h + 48, entry.log.size());
  put_le64(h + 56, compressed);
  put_le64(h + 64, xxh64(payload.data(), payload.size()));
  put_le64(h + 72, xxh64(h, 72));
  return file;
}

}  // namespace

const char* grape_version() { return GRAPE_JIT_GRAPE_VERSION; }

KeyInputs KeyInputs::for_compile(const std::string& source, const std::string& nvrtc_version,
                                 const std::string& arch, const std::vector<std::string>& options) {
  KeyInputs k;
  k.grape_version = jit::grape_version();
  k.source = source;
  k.nvrtc_version = nvrtc_version;
  k.arch = arch;
  k.options = default_compile_options(arch);
  k.options.insert(k.options.end(), options.begin(), options.end());
  return k;
}

Hash128 cache_key(const KeyInputs& inputs) {
  FieldHasher h;
  h.field(std::uint64_t{inputs.schema_version})
      .field(inputs.grape_version)
      .field(inputs.source)
      .field(inputs.nvrtc_version)
      .field(inputs.arch)
      .field(static_cast<std::uint64_t>(inputs.options.size()));
  for (const std::string& o : inputs.options) h.field(o);
  return h.digest();
}

std::string default_cache_dir() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  if (std::string d = env("GRAPE_CACHE_DIR"); !d.empty()) return d;
  if (std::string d = env("XDG_CACHE_HOME"); !d.empty()) return d + "/grape";
  if (std::string d = env("HOME"); !d.empty()) return d + "/.cache/grape";
  throw Error(ErrorCode::IO,
              "cannot place the kernel cache: set GRAPE_CACHE_DIR (neither XDG_CACHE_HOME nor HOME is set)");
}

KernelCache::KernelCache(std::string dir) : dir_(std::move(dir)) {
  make_private_dirs(dir_);
  reporter_ = [](const std::string& path, const std::string& problem) {
    std::fprintf(stderr, "grape: warning: kernel cache: %s: %s\n", path.c_str(), problem.c_str());
  };
}

KernelCache KernelCache::open_default() { return KernelCache(default_cache_dir() + "/kernels"); }

std::string KernelCache::entry_path(const Hash128& key) const {
  return dir_ + "/" + key.hex() + kEntrySuffix;
}

void KernelCache::report(const std::string& path, const std::string& problem) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!reported_.insert(path).second) return;
  }
  if (reporter_) reporter_(path, problem);
}

std::optional<CacheEntry> KernelCache::lookup(const Hash128& key) {
  const std::string path = entry_path(key);
  std::vector<unsigned char> file;
  try {
    if (!read_file(path, &file)) return std::nullopt;
  } catch (const Error& e) {
    report(path, std::string(e.what()) + "; the kernel will be compiled again");
    return std::nullopt;
  }
  CacheEntry entry;
  std::string problem = decode(file, key, &entry);
  if (problem.empty()) return entry;
  if (::unlink(path.c_str()) == 0 || errno == ENOENT) {
    report(path, "corrupt entry (" + problem + "); deleted, it will be rebuilt");
    // Resolved: a later, new problem with this file is news again.
    std::lock_guard<std::mutex> lock(mutex_);
    reported_.erase(path);
  } else {
    report(path, "corrupt entry (" + problem + ") that cannot be deleted (" + errno_text() +
                     "); the kernel will be compiled again");
  }
  return std::nullopt;
}

void KernelCache::store(const Hash128& key, const CacheEntry& entry) {
  std::vector<unsigned char> file = encode(key, entry);
  const std::string path = entry_path(key);
  std::string temp = dir_ + "/" + key.hex() + kTempInfix + "XXXXXX";
  int fd = ::mkstemp(temp.data());
  if (fd < 0)
    throw Error(ErrorCode::IO,
                "cannot create a temporary file in the kernel cache " + dir_ + ": " + errno_text());
  try {
    write_all(fd, file.data(), file.size());
    if (::close(fd) != 0) {
      fd = -1;
      throw Error(ErrorCode::IO, errno_text());
    }
    fd = -1;
    // rename() replaces atomically: readers see the old entry or the new one, never a mix, and two
    // writers of one key both leave a complete (identical) entry.
    if (::rename(temp.c_str(), path.c_str()) != 0) throw Error(ErrorCode::IO, errno_text());
  } catch (const Error& e) {
    if (fd >= 0) ::close(fd);
    ::unlink(temp.c_str());
    throw Error(ErrorCode::IO, "cannot write the kernel cache entry " + path + ": " + e.what());
  }
}

CacheInfo KernelCache::info() const {
  CacheInfo info;
  info.dir = dir_;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_, ec)) {
    if (!is_entry(e.path()) || !e.is_regular_file(ec)) continue;
    std::uintmax_t size = e.file_size(ec);
    if (ec) continue;  // deleted meanwhile
    ++info.entries;
    info.bytes += size;
  }
  return info;
}

void KernelCache::clear() {
  std::error_code ec;
  std::vector<fs::path> doomed;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_, ec)) {
    if (is_entry(e.path()) || is_temp(e.path())) doomed.push_back(e.path());
  }
  if (ec) throw Error(ErrorCode::IO, "cannot list the kernel cache " + dir_ + ": " + ec.message());
  for (const fs::path& p : doomed) {
    if (::unlink(p.c_str()) != 0 && errno != ENOENT) {
      throw Error(ErrorCode::IO, "cannot delete the kernel cache entry " + p.string() + ": " + errno_text());
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  reported_.clear();
}

CompileResult compile_cached(const std::string& source, const std::string& name, const std::string& arch,
                             const std::vector<std::string>& options, KernelCache* cache,
                             const NvrtcCompileFn& nvrtc) {
  // An ahead-of-time bundle in use (jit/kernel_bundle.h) wins: no NVRTC is needed for its kernels.
  if (std::optional<CompileResult> bundled = find_bundled(source, arch, options)) return *std::move(bundled);
  auto compile = [&] {
    return nvrtc ? nvrtc(source, name, arch, options) : compile_cuda(source, name, arch, options);
  };
  if (!cache) return compile();
  const std::string version = nvrtc_version();
  const Hash128 key = cache_key(KeyInputs::for_compile(source, version, arch, options));
  if (std::optional<CacheEntry> hit = cache->lookup(key)) {
    CompileResult result;
    result.cubin = std::move(hit->cubin);
    result.ptx = std::move(hit->ptx);
    result.log = std::move(hit->log);
    result.nvrtc_version = version;
    result.from_cache = true;
    return result;
  }
  CompileResult result = compile();
  try {
    cache->store(key, CacheEntry{result.cubin, result.ptx, result.log});
  } catch (const Error& e) {
    cache->report(cache->entry_path(key), std::string(e.what()) + "; kernel " + name + " stays uncached");
  }
  return result;
}

}  // namespace grape::jit
