#include "runtime/npy.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>

#include "base/error.h"
#include "runtime/file_io.h"
#include "base/half.h"

namespace grape {

static_assert(std::endian::native == std::endian::little, "Grape's file formats assume a little-endian host");

namespace {

constexpr char kMagic[] = "\x93NUMPY";  // 6 bytes
constexpr size_t kMagicLen = 6;

std::string printable(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == 80) { out += "..."; break; }
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c >= 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

[[noreturn]] void format_error(const std::string& file, const std::string& what) {
  throw Error(ErrorCode::Format, file + ": " + what);
}

// A strict reader for the header's Python dict literal.
class LiteralReader {
 public:
  LiteralReader(std::string_view s, const std::string& file, bool allow_long_suffix)
      : s_(s), file_(file), allow_long_suffix_(allow_long_suffix) {}

  [[noreturn]] void fail(const std::string& what) const {
    format_error(file_, "invalid .npy header at byte " + std::to_string(pos_) + ": " + what + " (header: " + printable(s_) + ")");
  }
  void ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool at_end() { ws(); return pos_ >= s_.size(); }
  char peek() {
    ws();
    if (pos_ >= s_.size()) fail("unexpected end of header");
    return s_[pos_];
  }
  bool consume(char c) {
    if (peek() == c) { ++pos_; return true; }
    return false;
  }
  void expect(char c) {
    if (!consume(c)) fail(std::string("expected '") + c + "'");
  }
  std::string string_value() {
    char q = peek();
    if (q != '\'' && q != '"') fail("expected a string");
    ++pos_;
    std::string out;
    for (;;) {
      if (pos_ >= s_.size()) fail("unterminated string");
      char c = s_[pos_++];
      if (c == q) return out;
      if (c == '\\') fail("escapes in strings are not supported");
      if (c == '\n' || c == '\r') fail("unterminated string");
      out += c;
    }
  }
  bool bool_value() {
    ws();
    if (s_.substr(pos_, 4) == "True") { pos_ += 4; return true; }
    if (s_.substr(pos_, 5) == "False") { pos_ += 5; return false; }
    fail("'fortran_order' must be True or False");
  }
  // A Python int literal (decimal); negative values are returned as such for the caller to report.
  // Returns nullopt on overflow beyond int64 (the caller reports it).
  std::optional<int64_t> int_value(bool& negative) {
    ws();
    negative = false;
    if (pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+')) {
      negative = s_[pos_] == '-';
      ++pos_;
      ws();
    }
    if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9') fail("'shape' must be a tuple of integers");
    size_t start = pos_;
    uint64_t v = 0;
    bool overflow = false;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      auto d = static_cast<uint64_t>(s_[pos_] - '0');
      if (v > (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - d) / 10) overflow = true;
      else v = v * 10 + d;
      ++pos_;
    }
    // Python 3 rejects leading zeros in decimal literals ("0", "00" are fine).
    if (s_[start] == '0' && v != 0) fail("invalid integer literal (leading zero)");
    if (allow_long_suffix_ && pos_ < s_.size() && (s_[pos_] == 'L' || s_[pos_] == 'l')) ++pos_;  // Python 2
    if (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' || s_[pos_] == '.'))
      fail("'shape' must be a tuple of integers");
    if (overflow) return std::nullopt;
    return static_cast<int64_t>(v);
  }
  size_t pos() const { return pos_; }

 private:
  std::string_view s_;
  const std::string& file_;
  bool allow_long_suffix_;
  size_t pos_ = 0;
};

struct NpyDtype {
  DType dtype;
  size_t itemsize;
  const char* descr;
};

NpyDtype parse_descr(const std::string& d, const std::string& file) {
  if (d == "<f4") return {DType::F32, 4, "<f4"};
  if (d == "<f2") return {DType::F16, 2, "<f2"};
  if (d == "<i4") return {DType::I32, 4, "<i4"};
  if (d == "<i8") return {DType::I64, 8, "<i8"};
  if (d == "|b1" || d == "<b1" || d == ">b1" || d == "=b1" || d == "b1" || d == "?") return {DType::Bool, 1, "|b1"};
  std::string q = "'" + printable(d) + "'";
  if (d.find('O') != std::string::npos)
    format_error(file, "object arrays (dtype " + q + ") are not supported");
  if (d.size() >= 2 && d[0] == '>') {
    std::string le = "<" + d.substr(1);
    format_error(file, "big-endian dtype " + q + " is not supported; convert with arr.astype('" + printable(le) + "')");
  }
  format_error(file, "unsupported dtype " + q + " (supported: '<f4', '<f2', '<i4', '<i8', '|b1')");
}

struct NpyHeader {
  DType dtype;
  size_t itemsize;
  const char* descr;
  Shape shape;
  uint64_t nbytes;       // numel * itemsize
  uint64_t data_start;   // offset of the data in the file
};

std::string tuple_string(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  if (s.size() == 1) out += ",";
  return out + ")";
}

NpyHeader parse_header_dict(std::string_view text, bool allow_long_suffix, const std::string& file) {
  LiteralReader r(text, file, allow_long_suffix);
  r.expect('{');
  std::optional<std::string> descr;
  std::optional<bool> fortran;
  std::optional<Shape> shape;
  bool closed = false;
  while (!closed) {
    if (r.consume('}')) break;
    std::string key = r.string_value();
    r.expect(':');
    if (key == "descr") {
      if (descr) r.fail("duplicate key 'descr'");
      char c = r.peek();
      if (c == '[') format_error(file, "structured dtypes are not supported");
      descr = r.string_value();
    } else if (key == "fortran_order") {
      if (fortran) r.fail("duplicate key 'fortran_order'");
      fortran = r.bool_value();
    } else if (key == "shape") {
      if (shape) r.fail("duplicate key 'shape'");
      if (!r.consume('(')) r.fail("'shape' must be a tuple of integers");
      Shape s;
      bool trailing_comma = false;
      while (!r.consume(')')) {
        bool neg = false;
        std::optional<int64_t> v = r.int_value(neg);
        if (!v) format_error(file, "shape dimension too large in .npy header");
        if (neg && *v != 0) format_error(file, "negative dimension -" + std::to_string(*v) + " in the shape of the .npy header");
        s.push_back(*v);
        trailing_comma = r.consume(',');
        if (!trailing_comma) {
          r.expect(')');
          break;
        }
      }
      if (s.size() == 1 && !trailing_comma) r.fail("'shape' must be a tuple of integers, e.g. (3,)");
      shape = std::move(s);
    } else {
      r.fail("unexpected key '" + printable(key) + "' (expected 'descr', 'fortran_order', 'shape')");
    }
    if (!r.consume(',')) {
      r.expect('}');
      closed = true;
    }
  }
  if (!r.at_end()) r.fail("trailing characters after the header dict");
  if (!descr) r.fail("missing key 'descr'");
  if (!fortran) r.fail("missing key 'fortran_order'");
  if (!shape) r.fail("missing key 'shape'");

  NpyDtype dt = parse_descr(*descr, file);
  NpyHeader h{dt.dtype, dt.itemsize, dt.descr, std::move(*shape), 0, 0};
  // Product of the non-zero dims must fit in int64; the byte size in uint64.
  uint64_t product = 1;
  bool has_zero = false;
  size_t big_dims = 0;
  for (int64_t d : h.shape) {
    if (d == 0) { has_zero = true; continue; }
    if (d > 1) ++big_dims;
    if (product > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / static_cast<uint64_t>(d))
      format_error(file, "shape " + tuple_string(h.shape) + " overflows the element count");
    product *= static_cast<uint64_t>(d);
  }
  uint64_t numel = has_zero ? 0 : product;
  if (numel > std::numeric_limits<uint64_t>::max() / dt.itemsize)
    format_error(file, "shape " + tuple_string(h.shape) + " overflows the byte size");
  h.nbytes = numel * dt.itemsize;
  if (*fortran && big_dims > 1 && numel > 0)
    format_error(file, "Fortran-ordered arrays are not supported; use np.ascontiguousarray");
  return h;
}

// `prefix` holds the first min(12, size) bytes of the file; read_header(offset, n) returns n bytes.
template <class ReadAt>
NpyHeader parse_npy_header(const uint8_t* prefix, uint64_t size, const std::string& file, ReadAt&& read_at) {
  if (size < kMagicLen + 2 || std::memcmp(prefix, kMagic, kMagicLen) != 0)
    format_error(file, "not a .npy file (bad magic; expected \\x93NUMPY)");
  unsigned major = prefix[6], minor = prefix[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    format_error(file, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                           " (supported: 1.0, 2.0, 3.0)");
  size_t len_bytes = major == 1 ? 2 : 4;
  if (size < 8 + len_bytes) format_error(file, "truncated .npy file (no header length)");
  uint64_t hlen = 0;
  for (size_t i = len_bytes; i-- > 0;) hlen = (hlen << 8) | prefix[8 + i];
  if (hlen > kNpyMaxHeaderSize)
    format_error(file, "header is " + std::to_string(hlen) + " bytes, more than the limit of " +
                           std::to_string(kNpyMaxHeaderSize) + " bytes");
  uint64_t hstart = 8 + len_bytes;
  if (hlen > size - hstart)
    format_error(file, "truncated .npy file (header of " + std::to_string(hlen) + " bytes, file of " +
                           std::to_string(size) + " bytes)");
  std::string text = read_at(hstart, static_cast<size_t>(hlen));
  if (major == 3) {
    if (!is_valid_utf8(text)) format_error(file, "header is not valid UTF-8");
  }
  NpyHeader h = parse_header_dict(text, major <= 2, file);
  h.data_start = hstart + hlen;
  uint64_t have = size - h.data_start;
  if (have < h.nbytes)
    format_error(file, "truncated .npy file: data is " + std::to_string(have) + " bytes but shape " +
                           tuple_string(h.shape) + " of '" + h.descr + "' needs " + std::to_string(h.nbytes));
  if (have > h.nbytes)
    format_error(file, "data is " + std::to_string(have) + " bytes but shape " + tuple_string(h.shape) + " of '" +
                           h.descr + "' needs " + std::to_string(h.nbytes) + " (trailing data)");
  return h;
}

void normalize_bools(Tensor& t) {
  if (t.dtype() != DType::Bool) return;
  auto* p = t.data<uint8_t>();
  for (int64_t i = 0, n = t.numel(); i < n; ++i) p[i] = p[i] != 0;
}

const char* descr_for(DType t) {
  switch (t) {
    case DType::F32: case DType::BF16: return "<f4";
    case DType::F16: return "<f2";
    case DType::I32: return "<i4";
    case DType::I64: return "<i8";
    case DType::Bool: return "|b1";
  }
  return "?";
}

std::string make_header(const Tensor& t) {
  std::string dict = std::string("{'descr': '") + descr_for(t.dtype()) + "', 'fortran_order': False, 'shape': " +
                     tuple_string(t.shape()) + ", }";
  // Magic + version + length + dict + padding + '\n' is a multiple of 64.
  size_t len_bytes = dict.size() + 64 <= 65535 ? 2 : 4;  // version 1.0 unless it does not fit
  size_t total = kMagicLen + 2 + len_bytes + dict.size() + 1;
  size_t pad = (64 - total % 64) % 64;
  std::string header = dict + std::string(pad, ' ') + "\n";
  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(len_bytes == 2 ? 1 : 2);
  out += '\0';
  uint64_t hlen = header.size();
  for (size_t i = 0; i < len_bytes; ++i) out += static_cast<char>((hlen >> (8 * i)) & 0xff);
  return out + header;
}

// The data bytes of t as written (bf16 widened to f32).
std::vector<uint8_t> bf16_as_f32(const Tensor& t) {
  std::vector<uint8_t> out(static_cast<size_t>(t.numel()) * 4);
  const auto* src = t.data<uint16_t>();
  for (int64_t i = 0, n = t.numel(); i < n; ++i) {
    float f = bf16_to_f32(src[i]);
    std::memcpy(out.data() + 4 * i, &f, 4);
  }
  return out;
}

void check_writable(const Tensor& t, const std::string& what) {
  if (!t.defined()) throw Error(ErrorCode::InvalidArgument, what + ": cannot write an undefined tensor");
}

}  // namespace

Tensor read_npy_bytes(const uint8_t* data, size_t size, const std::string& name) {
  NpyHeader h = parse_npy_header(data, size, name, [&](uint64_t off, size_t n) {
    return std::string(reinterpret_cast<const char*>(data) + off, n);
  });
  Tensor t(h.dtype, std::move(h.shape));
  if (h.nbytes) std::memcpy(t.raw(), data + h.data_start, static_cast<size_t>(h.nbytes));
  normalize_bools(t);
  return t;
}

Tensor read_npy(const std::string& path) {
  InputFile f(path);
  uint8_t prefix[12] = {};
  f.read_at(0, prefix, static_cast<size_t>(std::min<uint64_t>(12, f.size())));
  NpyHeader h = parse_npy_header(prefix, f.size(), path, [&](uint64_t off, size_t n) {
    std::string s(n, '\0');
    if (n) f.read_at(off, s.data(), n);
    return s;
  });
  Tensor t(h.dtype, std::move(h.shape));
  if (h.nbytes) f.read_at(h.data_start, t.raw(), static_cast<size_t>(h.nbytes));
  normalize_bools(t);
  return t;
}

std::vector<uint8_t> serialize_npy(const Tensor& t) {
  check_writable(t, "serialize_npy");
  std::string header = make_header(t);
  std::vector<uint8_t> out(header.begin(), header.end());
  if (t.dtype() == DType::BF16) {
    std::vector<uint8_t> d = bf16_as_f32(t);
    out.insert(out.end(), d.begin(), d.end());
  } else {
    const auto* b = static_cast<const uint8_t*>(t.raw());
    out.insert(out.end(), b, b + t.nbytes());
  }
  return out;
}

void write_npy(const std::string& path, const Tensor& t) {
  check_writable(t, path);
  std::string header = make_header(t);
  if (t.dtype() == DType::BF16) {
    std::vector<uint8_t> d = bf16_as_f32(t);
    write_file_atomic(path, {{header.data(), header.size()}, {d.data(), d.size()}});
  } else {
    write_file_atomic(path, {{header.data(), header.size()}, {t.raw(), t.nbytes()}});
  }
}

}  // namespace grape
