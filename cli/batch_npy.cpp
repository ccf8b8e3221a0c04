#include "cli/batch_npy.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string_view>

#include "cli/api.h"

namespace grape::cli {

const char* const kTempInfix = ".tmp.";

// A live mapping, as the SIGBUS handler sees it.
struct MappedFile::Slot {
  std::atomic<uintptr_t> begin{0}, end{0};  // whole pages; end 0: no mapping
  std::atomic<bool> faulted{false};         // a read faulted and got zero pages
  bool used = false;                        // taken by a MappedFile (under g_slots_mu)
};

namespace {

// Read by a signal handler, so lock-free: a handler must not wait for a lock that the thread it
// interrupted may hold.
static_assert(std::atomic<uintptr_t>::is_always_lock_free && std::atomic<bool>::is_always_lock_free);

// The table of live mappings: blocks of slots, linked when the ones before are all taken and
// never freed, so that the handler can walk it at any moment without a lock.
struct SlotBlock {
  MappedFile::Slot slots[64];
  std::atomic<SlotBlock*> next{nullptr};
};
static_assert(std::atomic<SlotBlock*>::is_always_lock_free);
SlotBlock g_slots;
std::mutex g_slots_mu;  // taking and giving back slots (never in the handler)

struct sigaction g_previous_sigbus;  // the handler before ours, for faults that are not ours
uintptr_t g_page_mask = 0;
std::once_flag g_installed;

// Maps zero pages over the rest of the live mapping that holds `addr`, from its page on; false
// when no mapping holds it. A SIGBUS in a mapped file means the page lies wholly past the file's
// end, and so do all the pages after it (or the page could not be read: the run stops all the
// same): the read that faulted, and every later one there, then gets zeros instead of a signal.
// The slot is marked first, so that a read that sees the zeros also sees the mark when its
// worker checks the file.
//
// Async-signal-safe: lock-free atomic loads and stores, and the mmap system call made directly
// (no lock, no allocation in user space, and no sanitizer's wrapper around it), like the
// sigaction and raise in on_sigbus.
bool zero_fill(uintptr_t addr) {
  for (SlotBlock* b = &g_slots; b; b = b->next.load(std::memory_order_acquire))
    for (MappedFile::Slot& s : b->slots) {
      uintptr_t begin = s.begin.load(), end = s.end.load();
      if (addr < begin || addr >= end) continue;
      s.faulted.store(true);
      uintptr_t page = addr & g_page_mask;
      long zeros =
          ::syscall(SYS_mmap, page, end - page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
      return zeros == static_cast<long>(page);
    }
  return false;
}

void on_sigbus(int sig, siginfo_t* info, void* context) {
  int saved = errno;  // the interrupted code may be about to read errno
  // si_code > 0: a fault, with its address (kill() and sigqueue() send one <= 0, with none).
  if (info->si_code > 0 && zero_fill(reinterpret_cast<uintptr_t>(info->si_addr))) {
    errno = saved;
    return;  // the faulting read runs again, on zeros
  }
  // Not a read of a mapped file: what would have happened without this handler.
  if (g_previous_sigbus.sa_flags & SA_SIGINFO) {
    g_previous_sigbus.sa_sigaction(sig, info, context);
  } else if (g_previous_sigbus.sa_handler != SIG_DFL && g_previous_sigbus.sa_handler != SIG_IGN) {
    g_previous_sigbus.sa_handler(sig);
  } else if (g_previous_sigbus.sa_handler == SIG_IGN && info->si_code <= 0) {
    // A sent signal that was ignored: still ignored.
  } else {
    // The default action (a fault cannot be ignored): a fault recurs when the access is retried
    // on return, and kills the process with a core dump as before; a sent signal is sent again.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ::sigaction(SIGBUS, &dfl, nullptr);
    if (info->si_code <= 0) ::raise(SIGBUS);
  }
  errno = saved;
}

// Once, before the first file is mapped.
void prepare_mapping() {
  g_page_mask = ~(static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE)) - 1);
  struct sigaction sa {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGBUS, &sa, &g_previous_sigbus);
  // Each mapped file keeps its descriptor for the run (MappedFile::check). The soft limit on
  // descriptors, often 1024 for the sake of select(), which Grape does not use, would cap the
  // files a run can map: raised to the hard limit, which is what the system allows.
  struct rlimit rl;
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
}

constexpr char kMagic[] = "\x93NUMPY";

[[noreturn]] void io_error(const std::string& what) {
  throw ApiError{GRP_ERR_IO, what + ": " + std::strerror(errno)};
}

// The numpy dtype strings that map to a Grape dtype byte for byte ('|b1' is not one: read_npy
// turns every non-zero byte into 1).
bool plain_descr(std::string_view d, grp_dtype& dtype, size_t& itemsize) {
  if (d == "<f4")
    dtype = GRP_F32, itemsize = 4;
  else if (d == "<f2")
    dtype = GRP_F16, itemsize = 2;
  else if (d == "<i4")
    dtype = GRP_I32, itemsize = 4;
  else if (d == "<i8")
    dtype = GRP_I64, itemsize = 8;
  else
    return false;
  return true;
}

bool eat(std::string_view& s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  return true;
}

// A dim as Python's repr writes it: no sign, no leading zero; at most 18 digits, so that the
// element count below cannot overflow unnoticed.
bool eat_dim(std::string_view& s, int64_t& v) {
  size_t n = 0;
  while (n < s.size() && s[n] >= '0' && s[n] <= '9') ++n;
  if (n == 0 || n > 18 || (n > 1 && s[0] == '0')) return false;
  v = 0;
  for (size_t i = 0; i < n; ++i) v = v * 10 + (s[i] - '0');
  s.remove_prefix(n);
  return true;
}

// The header dict in the form np.save writes: "{'descr': 'D', 'fortran_order': False, 'shape':
// (A, B), }", then spaces and a newline. Anything else is left to read_npy.
bool parse_plain_header(std::string_view s, grp_dtype& dtype, size_t& itemsize, std::vector<int64_t>& shape) {
  if (!eat(s, "{'descr': '")) return false;
  size_t q = s.find('\'');
  if (q == std::string_view::npos || !plain_descr(s.substr(0, q), dtype, itemsize)) return false;
  s.remove_prefix(q);
  if (!eat(s, "', 'fortran_order': False, 'shape': (")) return false;
  while (!eat(s, ")")) {
    int64_t d;
    if (!eat_dim(s, d)) return false;
    shape.push_back(d);
    if (eat(s, ")")) {
      if (shape.size() == 1) return false;  // (3) is not a tuple
      break;
    }
    if (!eat(s, ",")) return false;
    if (!eat(s, " ") && !s.starts_with(")")) return false;
  }
  if (!eat(s, ", }")) return false;
  while (eat(s, " ")) {
  }
  return s == "\n";
}

// numel * itemsize, or false when it overflows.
bool data_size(const std::vector<int64_t>& shape, size_t itemsize, uint64_t& bytes) {
  unsigned __int128 n = itemsize;
  for (int64_t d : shape) {
    n *= static_cast<uint64_t>(d);
    if (n > UINT64_MAX) return false;
  }
  bytes = static_cast<uint64_t>(n);
  return true;
}

std::string shape_tuple(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

const char* descr_of(grp_dtype dtype) {
  switch (dtype) {
    case GRP_F32:
    case GRP_BF16: return "<f4";
    case GRP_F16: return "<f2";
    case GRP_I32: return "<i4";
    case GRP_I64: return "<i8";
    case GRP_BOOL: return "|b1";
  }
  return "?";
}

}  // namespace

MappedFile::MappedFile(std::string path, int fd, uint8_t* base, size_t size)
    : path_(std::move(path)),
      fd_(fd),
      base_(base),
      size_(size),
      last_page_(base + ((size - 1) & g_page_mask)) {
  std::lock_guard<std::mutex> lock(g_slots_mu);
  for (SlotBlock* b = &g_slots;; b = b->next.load()) {
    for (Slot& s : b->slots)
      if (!s.used) {
        s.used = true;
        s.faulted.store(false);
        s.begin.store(reinterpret_cast<uintptr_t>(base));
        s.end.store((reinterpret_cast<uintptr_t>(base) + size + ~g_page_mask) & g_page_mask);
        slot_ = &s;
        return;
      }
    if (!b->next.load()) b->next.store(new SlotBlock);  // never freed: see SlotBlock
  }
}

MappedFile::~MappedFile() {
  slot_->end.store(0);
  slot_->begin.store(0);
  ::munmap(base_, size_);
  ::close(fd_);
  std::lock_guard<std::mutex> lock(g_slots_mu);
  slot_->used = false;
}

void MappedFile::check(bool last_page) const {
  // The reads of the call are done (the fence keeps this one after them). If one of them saw
  // zeros past the new end of the file, the file's last page was removed from the mapping
  // before, and this read faults: the handler marks the file.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  (void)*reinterpret_cast<const volatile uint8_t*>(base_ + size_ - 1);
  if (!last_page && !slot_->faulted.load()) return;
  struct stat st;
  if (::fstat(fd_, &st) != 0)
    throw MappedFileChanged{path_ + ": cannot look at its size: " + std::strerror(errno)};
  if (static_cast<uint64_t>(st.st_size) < size_)
    throw MappedFileChanged{path_ + " changed size while it was being read (truncated?): it has " +
                            std::to_string(st.st_size) + " bytes, " + std::to_string(size_) +
                            " when the run opened it"};
  if (slot_->faulted.load())
    throw MappedFileChanged{path_ + " could not be read while the run used it (an I/O error, or it was " +
                            "truncated and written again)"};
}

std::shared_ptr<const HostTensor> map_npy(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;  // read_npy says why
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 10) {
    ::close(fd);
    return nullptr;
  }
  // The handler is in place before any page is read, the header's included.
  std::call_once(g_installed, prepare_mapping);
  auto size = static_cast<size_t>(st.st_size);
  void* base = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (base == MAP_FAILED) {
    ::close(fd);
    return nullptr;
  }
  std::shared_ptr<const MappedFile> file(new MappedFile(path, fd, static_cast<uint8_t*>(base), size));
  const auto* b = static_cast<const uint8_t*>(base);
  // (A file truncated under these reads gives zeros here: a header that does not parse, read
  // again by read_npy, or rows that MappedFile::check rejects.)
  if (std::memcmp(b, kMagic, 6) != 0 || (b[6] != 1 && b[6] != 2 && b[6] != 3) || b[7] != 0) return nullptr;
  size_t len_bytes = b[6] == 1 ? 2 : 4, start = 8 + len_bytes;
  if (size < start) return nullptr;
  uint64_t hlen = 0;
  for (size_t i = len_bytes; i-- > 0;) hlen = (hlen << 8) | b[8 + i];
  if (hlen > size - start) return nullptr;
  HostTensor t;
  size_t itemsize = 0;
  std::string_view text(reinterpret_cast<const char*>(b + start), static_cast<size_t>(hlen));
  uint64_t bytes = 0;
  if (!parse_plain_header(text, t.dtype, itemsize, t.shape) || !data_size(t.shape, itemsize, bytes) ||
      bytes != size - start - hlen)
    return nullptr;
  // Rows are taken in file order, mostly: read ahead generously.
  ::madvise(base, size, MADV_SEQUENTIAL);
  t.size = static_cast<size_t>(bytes);
  t.bytes = std::shared_ptr<const uint8_t>(file, b + start + hlen);
  t.mapped = file.get();
  return std::make_shared<const HostTensor>(std::move(t));
}

NpyRowsFile::NpyRowsFile(std::string path, grp_dtype dtype, std::vector<int64_t> row_shape)
    : path_(std::move(path)), dtype_(dtype), row_shape_(std::move(row_shape)) {
  static std::atomic<uint64_t> counter{0};
  tmp_ = path_ + kTempInfix + std::to_string(::getpid()) + "." + std::to_string(counter++);
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) io_error("cannot create " + tmp_);
  // Room for the largest row count: finish() pads the real header to the same size.
  std::string most = header(INT64_MAX);
  len_bytes_ = most[6] == 1 ? 2 : 4;
  header_size_ = most.size();
  offset_ = header_size_;
}

NpyRowsFile::~NpyRowsFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

std::string NpyRowsFile::header(int64_t rows) const {
  std::vector<int64_t> shape{rows};
  shape.insert(shape.end(), row_shape_.begin(), row_shape_.end());
  std::string dict = std::string("{'descr': '") + descr_of(dtype_) +
                     "', 'fortran_order': False, 'shape': " + shape_tuple(shape) + ", }";
  // As grape run writes it: magic, version, length, dict, spaces, newline, a multiple of 64 bytes.
  // (Version 1.0 unless the placeholder's dict does not fit its 2-byte length.)
  size_t len_bytes = header_size_ ? len_bytes_ : dict.size() + 64 <= 65535 ? 2 : 4;
  size_t size = header_size_ ? header_size_ : (6 + 2 + len_bytes + dict.size() + 1 + 63) / 64 * 64;
  std::string text = dict + std::string(size - (6 + 2 + len_bytes + dict.size() + 1), ' ') + "\n";
  std::string out(kMagic, 6);
  out += static_cast<char>(len_bytes == 2 ? 1 : 2);
  out += '\0';
  for (size_t i = 0; i < len_bytes; ++i) out += static_cast<char>((text.size() >> (8 * i)) & 0xff);
  return out + text;
}

bool NpyRowsFile::fits(grp_dtype dtype, const int64_t* row_shape, size_t rank) const {
  return dtype == dtype_ && rank == row_shape_.size() &&
         std::equal(row_shape_.begin(), row_shape_.end(), row_shape);
}

void NpyRowsFile::write_all(const void* data, size_t n, uint64_t at) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    ssize_t put = ::pwrite(fd_, p, n, static_cast<off_t>(at));
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) io_error("cannot write " + tmp_);
    p += put;
    at += static_cast<uint64_t>(put);
    n -= static_cast<size_t>(put);
  }
}

int64_t NpyRowsFile::append(const void* data, int64_t rows, size_t nbytes) {
  int64_t first = rows_;
  if (dtype_ == GRP_BF16) {
    // bf16 has no numpy dtype: widened to f32, which holds it exactly (its bits, shifted).
    std::vector<uint32_t> wide(nbytes / 2);
    const auto* src = static_cast<const uint16_t*>(data);
    for (size_t i = 0; i < wide.size(); ++i) wide[i] = static_cast<uint32_t>(src[i]) << 16;
    write_all(wide.data(), wide.size() * 4, offset_);
    offset_ += wide.size() * 4;
  } else {
    write_all(data, nbytes, offset_);
    offset_ += nbytes;
  }
  rows_ += rows;
  return first;
}

void NpyRowsFile::finish() {
  std::string h = header(rows_);
  write_all(h.data(), h.size(), 0);
  if (::fdatasync(fd_) != 0) io_error("cannot sync " + tmp_);
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    ::unlink(tmp_.c_str());
    io_error("cannot close " + tmp_);
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp_.c_str());
    errno = e;
    io_error("cannot rename " + tmp_ + " to " + path_);
  }
}

void remove_stale_temporaries(const std::string& outputs_dir) {
  DIR* d = ::opendir(outputs_dir.c_str());
  if (!d) return;
  std::string infix = std::string(".npy") + kTempInfix;
  while (dirent* e = ::readdir(d))
    if (std::strstr(e->d_name, infix.c_str())) ::unlink((outputs_dir + "/" + e->d_name).c_str());
  ::closedir(d);
}

}  // namespace grape::cli
