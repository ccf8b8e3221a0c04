#include "runtime/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <utility>

#include "runtime/error.h"
#include "runtime/file_io.h"

namespace grape {

static_assert(std::endian::native == std::endian::little, "Grape's file formats assume a little-endian host");

namespace {

// ---------------------------------------------------------------------------------------------
// dtypes

struct StDtype {
  const char* name;
  std::optional<DType> dtype;  // nullopt: a safetensors dtype Grape does not support
};

// Every dtype the reference implementation knows; only six map onto Grape's.
constexpr StDtype kStDtypes[] = {
    {"F32", DType::F32}, {"F16", DType::F16}, {"BF16", DType::BF16}, {"I32", DType::I32},
    {"I64", DType::I64}, {"BOOL", DType::Bool}, {"F64", std::nullopt}, {"I8", std::nullopt},
    {"U8", std::nullopt}, {"I16", std::nullopt}, {"U16", std::nullopt}, {"U32", std::nullopt},
    {"U64", std::nullopt}, {"F8_E4M3", std::nullopt}, {"F8_E5M2", std::nullopt},
    {"F8_E8M0", std::nullopt}, {"F4", std::nullopt}, {"F6_E2M3", std::nullopt},
    {"F6_E3M2", std::nullopt}, {"C64", std::nullopt},
};

std::string quoted(std::string_view s) {
  // For error messages: the name between single quotes, control characters escaped and long
  // names shortened so that a hostile header cannot produce an unbounded message.
  std::string out = "'";
  size_t limit = 200;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == limit) { out += "..."; break; }
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "'";
}

// ---------------------------------------------------------------------------------------------
// A strict, schema-directed JSON reader over the header text. It never builds a generic document:
// values are read where the schema expects them, so memory stays proportional to what is kept
// (names, shapes) and nesting never goes deeper than the schema (object > object > array).

class JsonReader {
 public:
  JsonReader(std::string_view text, const std::string& file) : s_(text), file_(file) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorCode::Format, file_ + ": invalid header JSON at byte " + std::to_string(pos_) + ": " + what);
  }
  [[noreturn]] void fail_at(const std::string& where, const std::string& what) const {
    throw Error(ErrorCode::Format, file_ + ": " + where + ": " + what);
  }

  void ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool at_end() const { return pos_ >= s_.size(); }
  char peek() {
    ws();
    if (at_end()) fail("unexpected end of header");
    return s_[pos_];
  }
  bool consume(char c) {
    if (peek() == c) { ++pos_; return true; }
    return false;
  }
  void expect(char c) {
    if (!consume(c)) fail(std::string("expected '") + c + "', found " + describe_here());
  }
  std::string describe_here() {
    if (at_end()) return "end of header";
    char c = s_[pos_];
    if (c == '{') return "an object";
    if (c == '[') return "an array";
    if (c == '"') return "a string";
    if (c == '-' || (c >= '0' && c <= '9')) return "a number";
    if (c == 't' || c == 'f') return "a boolean";
    if (c == 'n') return "null";
    return "unexpected character " + quoted(std::string_view(&s_[pos_], 1));
  }
  bool peek_null() {
    if (peek() == 'n') {
      literal("null");
      return true;
    }
    return false;
  }
  void literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) fail("invalid literal");
    pos_ += word.size();
  }

  // The next value must be a string; returns it decoded.
  std::string string_value() {
    if (peek() != '"') fail("expected a string, found " + describe_here());
    ++pos_;
    std::string out;
    for (;;) {
      if (at_end()) fail("unterminated string");
      auto c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') { ++pos_; return out; }
      if (c < 0x20) fail("control character in string");
      if (c != '\\') { out += static_cast<char>(c); ++pos_; continue; }
      ++pos_;
      if (at_end()) fail("unterminated string");
      char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xdc00 && cp <= 0xdfff) fail("lone trailing surrogate in \\u escape");
          if (cp >= 0xd800 && cp <= 0xdbff) {
            if (s_.substr(pos_, 2) != "\\u") fail("lone leading surrogate in \\u escape");
            pos_ += 2;
            uint32_t lo = hex4();
            if (lo < 0xdc00 || lo > 0xdfff) fail("invalid surrogate pair in \\u escape");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          }
          append_utf8(out, cp);
          break;
        }
        default: fail("invalid escape in string");
      }
    }
  }

  // The next value must be a JSON integer literal >= 0 that fits in uint64 (no sign, fraction or
  // exponent: the reference reads these fields as usize). `where`/`field` name it in errors.
  uint64_t uint_value(const std::string& where, const std::string& field) {
    char c = peek();
    if (c == '-' || (c >= '0' && c <= '9')) {
      size_t start = pos_;
      bool neg = c == '-';
      if (neg) ++pos_;
      if (at_end() || s_[pos_] < '0' || s_[pos_] > '9') fail("invalid number");
      bool leading_zero = s_[pos_] == '0';
      uint64_t v = 0;
      bool overflow = false;
      size_t digits = 0;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        auto d = static_cast<uint64_t>(s_[pos_] - '0');
        if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) overflow = true;
        else v = v * 10 + d;
        ++pos_;
        ++digits;
      }
      if (leading_zero && digits > 1) fail("invalid number (leading zero)");
      bool is_float = false;
      if (pos_ < s_.size() && s_[pos_] == '.') {
        is_float = true;
        ++pos_;
        if (at_end() || s_[pos_] < '0' || s_[pos_] > '9') fail("invalid number");
        while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      }
      if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
        is_float = true;
        ++pos_;
        if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
        if (at_end() || s_[pos_] < '0' || s_[pos_] > '9') fail("invalid number");
        while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      }
      std::string text(s_.substr(start, std::min<size_t>(pos_ - start, 40)));
      if (neg || is_float)
        fail_at(where, field + " must hold non-negative integers, found " + text);
      if (overflow) fail_at(where, field + " value " + text + " is too large");
      return v;
    }
    fail_at(where, field + " must hold non-negative integers, found " + describe_here());
  }

  // An array of non-negative integers.
  std::vector<uint64_t> uint_array(const std::string& where, const std::string& field) {
    if (peek() != '[') fail_at(where, field + " must be an array of non-negative integers, found " + describe_here());
    ++pos_;
    std::vector<uint64_t> out;
    if (consume(']')) return out;
    for (;;) {
      out.push_back(uint_value(where, field));
      if (consume(']')) return out;
      expect(',');
    }
  }

  size_t pos() const { return pos_; }

 private:
  uint32_t hex4() {
    if (s_.size() - pos_ < 4) fail("invalid \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<uint32_t>(c - 'A' + 10);
      else fail("invalid \\u escape");
    }
    return v;
  }
  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  std::string_view s_;
  const std::string& file_;
  size_t pos_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Header parsing and validation

struct Entry {
  std::string name;
  DType dtype;
  const char* st_dtype;
  Shape shape;
  uint64_t begin, end;
};

std::string offsets_to_string(uint64_t b, uint64_t e) {
  return "[" + std::to_string(b) + ", " + std::to_string(e) + "]";
}

std::string u64_shape_to_string(const std::vector<uint64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    if (i == 16 && s.size() > 17) { out += "... (" + std::to_string(s.size()) + " dims)"; break; }
    out += std::to_string(s[i]);
  }
  return out + "]";
}

Entry parse_entry(JsonReader& r, const std::string& name, const std::string& file) {
  const std::string where = "tensor " + quoted(name);
  Entry e{name, DType::F32, nullptr, {}, 0, 0};
  if (r.peek() != '{') r.fail_at(where, "entry must be an object, found " + r.describe_here());
  r.expect('{');
  bool have_dtype = false, have_shape = false, have_offsets = false;
  std::vector<uint64_t> shape, offsets;
  std::string dtype_text;
  if (!r.consume('}')) {
    for (;;) {
      std::string key = r.string_value();
      r.expect(':');
      auto dup = [&](bool& seen) {
        if (seen) r.fail_at(where, "duplicate field " + quoted(key));
        seen = true;
      };
      if (key == "dtype") {
        dup(have_dtype);
        if (r.peek() != '"') r.fail_at(where, "dtype must be a string, found " + r.describe_here());
        dtype_text = r.string_value();
      } else if (key == "shape") {
        dup(have_shape);
        shape = r.uint_array(where, "shape");
      } else if (key == "data_offsets") {
        dup(have_offsets);
        offsets = r.uint_array(where, "data_offsets");
      } else {
        r.fail_at(where, "unknown field " + quoted(key) + " (expected dtype, shape, data_offsets)");
      }
      if (r.consume('}')) break;
      r.expect(',');
    }
  }
  if (!have_dtype) r.fail_at(where, "missing field 'dtype'");
  if (!have_shape) r.fail_at(where, "missing field 'shape'");
  if (!have_offsets) r.fail_at(where, "missing field 'data_offsets'");

  const StDtype* known = nullptr;
  for (const StDtype& d : kStDtypes)
    if (dtype_text == d.name) known = &d;
  if (!known) throw Error(ErrorCode::Format, file + ": unknown dtype " + quoted(dtype_text) + " for " + where);
  if (!known->dtype)
    throw Error(ErrorCode::Format, file + ": unsupported dtype " + known->name + " for " + where +
                                       " (Grape supports F32, F16, BF16, I32, I64, BOOL)");
  e.dtype = *known->dtype;
  e.st_dtype = known->name;

  if (offsets.size() != 2)
    r.fail_at(where, "data_offsets must be [begin, end], found " + std::to_string(offsets.size()) + " values");
  e.begin = offsets[0];
  e.end = offsets[1];
  if (e.end < e.begin)
    r.fail_at(where, "data_offsets " + offsets_to_string(e.begin, e.end) + " end before they begin");

  // numel * size with overflow checks, in the reference's order (dims left to right, then size).
  // The product of the non-zero dims must fit in int64 too (stricter than the reference for
  // empty tensors), so that strides of an empty tensor never overflow either.
  uint64_t product = 1;
  bool has_zero = false;
  for (uint64_t d : shape) {
    if (d == 0) { has_zero = true; continue; }
    if (product > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / d)
      r.fail_at(where, "shape " + u64_shape_to_string(shape) + " overflows the element count");
    product *= d;
  }
  uint64_t numel = has_zero ? 0 : product;
  uint64_t esize = dtype_size(e.dtype);
  if (numel > std::numeric_limits<uint64_t>::max() / esize)
    r.fail_at(where, "shape " + u64_shape_to_string(shape) + " overflows the byte size");
  uint64_t need = numel * esize;
  if (e.end - e.begin != need)
    r.fail_at(where, "data_offsets " + offsets_to_string(e.begin, e.end) + " hold " + std::to_string(e.end - e.begin) +
                         " bytes but shape " + u64_shape_to_string(shape) + " of " + e.st_dtype + " needs " +
                         std::to_string(need));
  e.shape.assign(shape.begin(), shape.end());
  return e;
}

struct Header {
  std::vector<Entry> entries;  // sorted by data offset
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;     // 8 + N
};

// `prefix` holds at least the first min(8, file_size) bytes; `header_text` is read by the caller
// once the length is validated (read_header_text is called with N).
template <class ReadHeader>
Header parse_header(const uint8_t* prefix, uint64_t file_size, const std::string& file, ReadHeader&& read_header_text) {
  if (file_size < 8)
    throw Error(ErrorCode::Format, file + ": file is " + std::to_string(file_size) +
                                       " bytes, too short for a safetensors header (8-byte length + JSON)");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | prefix[i];
  if (n > kSafetensorsMaxHeaderSize)
    throw Error(ErrorCode::Format, file + ": header length " + std::to_string(n) + " exceeds the limit of " +
                                       std::to_string(kSafetensorsMaxHeaderSize) + " bytes (not a safetensors file?)");
  if (n > file_size - 8)
    throw Error(ErrorCode::Format, file + ": header length " + std::to_string(n) + " exceeds the file size (" +
                                       std::to_string(file_size) + " bytes)");
  std::string text = read_header_text(n);
  if (!is_valid_utf8(text)) throw Error(ErrorCode::Format, file + ": header is not valid UTF-8");
  if (text.empty() || text[0] != '{')
    throw Error(ErrorCode::Format, file + ": header does not start with '{' (not a safetensors file?)");

  Header h;
  h.data_start = 8 + n;
  uint64_t data_size = file_size - h.data_start;
  JsonReader r(text, file);
  r.expect('{');
  std::map<std::string, bool> seen;  // names seen so far (tensors and __metadata__)
  bool have_metadata = false;
  if (!r.consume('}')) {
    for (;;) {
      std::string key = r.string_value();
      r.expect(':');
      if (key == "__metadata__") {
        if (have_metadata) r.fail_at("__metadata__", "duplicate __metadata__ entry");
        have_metadata = true;
        if (!r.peek_null()) {
          if (r.peek() != '{') r.fail_at("__metadata__", "must be an object of strings, found " + r.describe_here());
          r.expect('{');
          if (!r.consume('}')) {
            for (;;) {
              std::string mk = r.string_value();
              r.expect(':');
              if (r.peek() != '"')
                r.fail_at("__metadata__", "value of " + quoted(mk) + " must be a string, found " + r.describe_here());
              std::string mv = r.string_value();
              if (!h.metadata.emplace(mk, std::move(mv)).second)
                r.fail_at("__metadata__", "duplicate key " + quoted(mk));
              if (r.consume('}')) break;
              r.expect(',');
            }
          }
        }
      } else {
        if (!seen.emplace(key, true).second) r.fail_at("tensor " + quoted(key), "duplicate tensor name");
        h.entries.push_back(parse_entry(r, key, file));
      }
      if (r.consume('}')) break;
      r.expect(',');
    }
  }
  r.ws();
  if (!r.at_end()) r.fail("trailing characters after the header object");

  std::stable_sort(h.entries.begin(), h.entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t expected = 0;
  for (const Entry& e : h.entries) {
    if (e.begin != expected) {
      std::string what = e.begin < expected ? "overlap the previous tensor, which ends at byte "
                                            : "leave a gap after the previous tensor, which ends at byte ";
      throw Error(ErrorCode::Format, file + ": tensor " + quoted(e.name) + ": data_offsets " +
                                         offsets_to_string(e.begin, e.end) + " " + what + std::to_string(expected));
    }
    expected = e.end;
  }
  if (expected != data_size)
    throw Error(ErrorCode::Format, file + ": the tensors hold " + std::to_string(expected) + " bytes but the data buffer after the header is " +
                                       std::to_string(data_size) + " bytes (truncated file or trailing data?)");
  return h;
}

void normalize_bools(Tensor& t) {
  if (t.dtype() != DType::Bool) return;
  auto* p = t.data<uint8_t>();
  for (int64_t i = 0, n = t.numel(); i < n; ++i) p[i] = p[i] != 0;
}

// ---------------------------------------------------------------------------------------------
// Writer helpers

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          static const char* hex = "0123456789abcdef";
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

struct Prepared {
  std::string prefix;  // 8-byte length + padded header
  std::vector<const std::pair<const std::string, Tensor>*> order;
};

Prepared prepare(const std::map<std::string, Tensor>& tensors, const std::map<std::string, std::string>& metadata,
                 const std::string& what) {
  Prepared p;
  for (const auto& kv : tensors) {
    if (!kv.second.defined())
      throw Error(ErrorCode::InvalidArgument, what + ": tensor " + quoted(kv.first) + " is undefined");
    if (kv.first == "__metadata__")
      throw Error(ErrorCode::InvalidArgument, what + ": a tensor cannot be named '__metadata__'");
    if (!is_valid_utf8(kv.first))
      throw Error(ErrorCode::InvalidArgument, what + ": tensor name " + quoted(kv.first) + " is not valid UTF-8");
    p.order.push_back(&kv);
  }
  for (const auto& kv : metadata)
    if (!is_valid_utf8(kv.first) || !is_valid_utf8(kv.second))
      throw Error(ErrorCode::InvalidArgument, what + ": metadata entry " + quoted(kv.first) + " is not valid UTF-8");
  // Larger elements first (keeps every tensor aligned to its element size), then by name.
  std::stable_sort(p.order.begin(), p.order.end(), [](const auto* a, const auto* b) {
    size_t sa = dtype_size(a->second.dtype()), sb = dtype_size(b->second.dtype());
    return sa != sb ? sa > sb : a->first < b->first;
  });
  std::string h = "{";
  bool first = true;
  if (!metadata.empty()) {
    h += "\"__metadata__\":{";
    bool mfirst = true;
    for (const auto& kv : metadata) {
      if (!mfirst) h += ',';
      mfirst = false;
      append_json_string(h, kv.first);
      h += ':';
      append_json_string(h, kv.second);
    }
    h += '}';
    first = false;
  }
  uint64_t offset = 0;
  for (const auto* kv : p.order) {
    const Tensor& t = kv->second;
    if (!first) h += ',';
    first = false;
    append_json_string(h, kv->first);
    h += ":{\"dtype\":\"";
    h += safetensors_dtype_name(t.dtype());
    h += "\",\"shape\":[";
    for (size_t i = 0; i < t.rank(); ++i) {
      if (i) h += ',';
      h += std::to_string(t.dim(i));
    }
    uint64_t end = offset + t.nbytes();
    h += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(end) + "]}";
    offset = end;
  }
  h += '}';
  while (h.size() % 8 != 0) h += ' ';
  p.prefix.resize(8);
  uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) p.prefix[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  p.prefix += h;
  return p;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

const char* safetensors_dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::I32: return "I32";
    case DType::I64: return "I64";
    case DType::Bool: return "BOOL";
  }
  return "?";
}

std::optional<DType> parse_safetensors_dtype(std::string_view name) {
  for (const StDtype& d : kStDtypes)
    if (name == d.name) return d.dtype;
  return std::nullopt;
}

SafetensorsContents read_safetensors_contents_bytes(const uint8_t* data, size_t size, const std::string& name) {
  Header h = parse_header(data, size, name, [&](uint64_t n) {
    return std::string(reinterpret_cast<const char*>(data) + 8, static_cast<size_t>(n));
  });
  SafetensorsContents out;
  out.metadata = std::move(h.metadata);
  for (Entry& e : h.entries) {
    Tensor t(e.dtype, std::move(e.shape));
    if (e.end > e.begin) std::memcpy(t.raw(), data + h.data_start + e.begin, static_cast<size_t>(e.end - e.begin));
    normalize_bools(t);
    out.tensors.emplace(std::move(e.name), std::move(t));
  }
  return out;
}

SafetensorsContents read_safetensors_contents(const std::string& path) {
  InputFile f(path);
  uint8_t prefix[8] = {};
  if (f.size() >= 8) f.read_at(0, prefix, 8);
  Header h = parse_header(prefix, f.size(), path, [&](uint64_t n) {
    std::string text(static_cast<size_t>(n), '\0');
    if (n) f.read_at(8, text.data(), static_cast<size_t>(n));
    return text;
  });
  SafetensorsContents out;
  out.metadata = std::move(h.metadata);
  for (Entry& e : h.entries) {
    Tensor t(e.dtype, std::move(e.shape));
    if (e.end > e.begin) f.read_at(h.data_start + e.begin, t.raw(), static_cast<size_t>(e.end - e.begin));
    normalize_bools(t);
    out.tensors.emplace(std::move(e.name), std::move(t));
  }
  return out;
}

std::map<std::string, Tensor> read_safetensors(const std::string& path) {
  return read_safetensors_contents(path).tensors;
}

std::map<std::string, Tensor> read_safetensors_bytes(const uint8_t* data, size_t size, const std::string& name) {
  return read_safetensors_contents_bytes(data, size, name).tensors;
}

std::vector<uint8_t> serialize_safetensors(const std::map<std::string, Tensor>& tensors,
                                           const std::map<std::string, std::string>& metadata) {
  Prepared p = prepare(tensors, metadata, "serialize_safetensors");
  std::vector<uint8_t> out(p.prefix.begin(), p.prefix.end());
  for (const auto* kv : p.order) {
    const auto* b = static_cast<const uint8_t*>(kv->second.raw());
    out.insert(out.end(), b, b + kv->second.nbytes());
  }
  return out;
}

void write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  Prepared p = prepare(tensors, metadata, path);
  std::vector<ByteSpan> parts;
  parts.push_back({p.prefix.data(), p.prefix.size()});
  for (const auto* kv : p.order) parts.push_back({kv->second.raw(), kv->second.nbytes()});
  write_file_atomic(path, parts);
}

}  // namespace grape
