// The on-disk kernel cache: compiled kernels (cubin and PTX) keyed by everything that shapes them.
//
// Key: XXH3-128 over (kCacheSchemaVersion, Grape version, generated source, NVRTC version, target
// arch, compile options). Entry file "<key hex>.grpk" in the cache directory: a fixed header
// (magic, schema version, key, section lengths, XXH64 of the uncompressed payload) and the payload
// (cubin, PTX and NVRTC's log) zstd-compressed. A corrupt, truncated or foreign entry is detected,
// reported once, deleted and compiled again, never loaded. Writes go to a temporary file in the same
// directory and are renamed into place, so readers see whole entries only and concurrent writers of
// one key are harmless.
#pragma once
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "jit/hash.h"
#include "jit/nvrtc.h"

namespace grape::jit {

// Bump on any change to the entry format or to what an entry means: every old entry then misses.
inline constexpr std::uint32_t kCacheSchemaVersion = 1;

// The inputs of a cache key, all of them, so tests can vary each.
struct KeyInputs {
  std::uint32_t schema_version = kCacheSchemaVersion;
  std::string grape_version;  // this build's Grape version by default (see for_compile)
  std::string source;
  std::string nvrtc_version;
  std::string arch;
  std::vector<std::string> options;  // the default options and the caller's, in order

  // The key inputs of compile_cuda(source, _, arch, options) with this Grape and `nvrtc_version`.
  static KeyInputs for_compile(const std::string& source, const std::string& nvrtc_version,
                               const std::string& arch, const std::vector<std::string>& options);
};

Hash128 cache_key(const KeyInputs& inputs);
// This build's Grape version, as it enters the key.
const char* grape_version();

struct CacheEntry {
  std::vector<std::uint8_t> cubin;
  std::string ptx;
  std::string log;  // NVRTC's warnings, so a cached compile reports them as a fresh one does
};

struct CacheInfo {
  std::string dir;
  std::size_t entries = 0;
  std::uint64_t bytes = 0;  // on disk
};

// $GRAPE_CACHE_DIR, else $XDG_CACHE_HOME/grape, else $HOME/.cache/grape (empty variables count as
// unset). Throws Error(IO) when none is set.
std::string default_cache_dir();

class KernelCache {
 public:
  // Called once per bad entry file with its path and what is wrong with it ("corrupt entry
  // (payload checksum mismatch); deleted, it will be rebuilt"), and for entries that cannot be stored.
  using Reporter = std::function<void(const std::string& path, const std::string& problem)>;

  // Creates `dir` (and missing parents) with mode 0700. Throws Error(IO) when it cannot.
  explicit KernelCache(std::string dir);
  // KernelCache(default_cache_dir() + "/kernels"): kernels get their own folder, so the cache root
  // can hold other caches beside them.
  static KernelCache open_default();

  const std::string& dir() const { return dir_; }
  // Replaces the default reporter, which prints one line to stderr:
  //   "grape: warning: kernel cache: <path>: <problem>".
  void set_reporter(Reporter reporter) { reporter_ = std::move(reporter); }

  // nullopt on a miss. A bad entry is reported, deleted and a miss.
  std::optional<CacheEntry> lookup(const Hash128& key);
  // Throws Error(IO) naming the file when the entry cannot be written.
  void store(const Hash128& key, const CacheEntry& entry);
  CacheInfo info() const;
  // Deletes every entry (and leftover temporary files); keeps the directory.
  void clear();

  std::string entry_path(const Hash128& key) const;
  // Hands a problem with `path` to the reporter, once per path until the problem is resolved.
  void report(const std::string& path, const std::string& problem);

 private:
  std::string dir_;
  Reporter reporter_;
  std::mutex mutex_;  // guards reported_
  std::set<std::string> reported_;
};

// compile_cuda through `cache` (nullptr: no cache): a hit returns the stored cubin, PTX and log
// (from_cache set); a miss compiles and stores. A failed store is reported as a warning, never fatal.
// Kernel bundles in use (use_bundle, jit/kernel_bundle.h) are looked in first, cache or not.
// `nvrtc` compiles a miss (compile_cuda's arguments and result); null: compile_cuda itself.
using NvrtcCompileFn =
    std::function<CompileResult(const std::string& source, const std::string& name, const std::string& arch,
                                const std::vector<std::string>& options)>;
CompileResult compile_cached(const std::string& source, const std::string& name, const std::string& arch,
                             const std::vector<std::string>& options, KernelCache* cache,
                             const NvrtcCompileFn& nvrtc = nullptr);

}  // namespace grape::jit
