#include "runtime/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "base/error.h"
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

// Called as grape::quoted: <nlohmann/json.hpp> brings in <iomanip>, whose std::quoted argument-dependent
// lookup would find for a std::string.
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

[[noreturn]] void fail_at(const std::string& file, const std::string& where, const std::string& what) {
  throw Error(ErrorCode::Format, file + ": " + where + ": " + what);
}

// The fields of one tensor entry as read; checked and turned into an Entry by make_entry.
struct RawEntry {
  std::string name;
  bool have_dtype = false, have_shape = false, have_offsets = false;
  std::string dtype_text;
  std::vector<uint64_t> shape, offsets;
};

Entry make_entry(RawEntry& raw, const std::string& file) {
  const std::string where = "tensor " + grape::quoted(raw.name);
  Entry e{raw.name, DType::F32, nullptr, {}, 0, 0};
  if (!raw.have_dtype) fail_at(file, where, "missing field 'dtype'");
  if (!raw.have_shape) fail_at(file, where, "missing field 'shape'");
  if (!raw.have_offsets) fail_at(file, where, "missing field 'data_offsets'");

  const StDtype* known = nullptr;
  for (const StDtype& d : kStDtypes)
    if (raw.dtype_text == d.name) known = &d;
  if (!known) throw Error(ErrorCode::Format, file + ": unknown dtype " + grape::quoted(raw.dtype_text) + " for " + where);
  if (!known->dtype)
    throw Error(ErrorCode::Format, file + ": unsupported dtype " + known->name + " for " + where +
                                       " (Grape supports F32, F16, BF16, I32, I64, BOOL)");
  e.dtype = *known->dtype;
  e.st_dtype = known->name;

  const auto& offsets = raw.offsets;
  const auto& shape = raw.shape;
  if (offsets.size() != 2)
    fail_at(file, where, "data_offsets must be [begin, end], found " + std::to_string(offsets.size()) + " values");
  e.begin = offsets[0];
  e.end = offsets[1];
  if (e.end < e.begin)
    fail_at(file, where, "data_offsets " + offsets_to_string(e.begin, e.end) + " end before they begin");

  // numel * size with overflow checks, in the reference's order (dims left to right, then size).
  // The product of the non-zero dims must fit in int64 too (stricter than the reference for
  // empty tensors), so that strides of an empty tensor never overflow either.
  uint64_t product = 1;
  bool has_zero = false;
  for (uint64_t d : shape) {
    if (d == 0) { has_zero = true; continue; }
    if (product > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / d)
      fail_at(file, where, "shape " + u64_shape_to_string(shape) + " overflows the element count");
    product *= d;
  }
  uint64_t numel = has_zero ? 0 : product;
  uint64_t esize = dtype_size(e.dtype);
  if (numel > std::numeric_limits<uint64_t>::max() / esize)
    fail_at(file, where, "shape " + u64_shape_to_string(shape) + " overflows the byte size");
  uint64_t need = numel * esize;
  if (e.end - e.begin != need)
    fail_at(file, where, "data_offsets " + offsets_to_string(e.begin, e.end) + " hold " +
                             std::to_string(e.end - e.begin) + " bytes but shape " + u64_shape_to_string(shape) +
                             " of " + e.st_dtype + " needs " + std::to_string(need));
  e.shape.assign(shape.begin(), shape.end());
  return e;
}

struct Header {
  std::vector<Entry> entries;  // sorted by data offset
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;     // 8 + N
};

// A strict, schema-directed reader of the header on nlohmann-json's SAX interface. It never
// builds a document: values are taken where the schema expects them, so memory stays proportional
// to what is kept (names, shapes), and the first value out of place (a nested array where a
// number belongs, say) stops the parse, so nesting never goes deeper than the schema
// (object > object > array) however deep the text is. Unlike a document parser it sees every key,
// so duplicate names and fields are reported.
class HeaderReader final : public nlohmann::json::json_sax_t {
 public:
  HeaderReader(std::string_view text, const std::string& file, Header& h) : text_(text), file_(file), h_(h) {}

  // The first problem, as the complete message; empty when the header is valid.
  std::string error;

  bool null() override {
    if (depth_ == 1 && in_metadata_key_) return done_value();  // "__metadata__": null
    return unexpected("null");
  }
  bool boolean(bool) override { return unexpected("a boolean"); }
  bool number_integer(number_integer_t v) override {
    // Only a token with a minus sign arrives here (nlohmann reports the others as unsigned).
    if (in_uints())
      return fail_at(field_ + " must hold non-negative integers, found " + (v == 0 ? "-0" : std::to_string(v)));
    return unexpected("a number");
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (in_uints()) {
      (field_ == "shape" ? raw_.shape : raw_.offsets).push_back(v);
      return true;
    }
    return unexpected("a number");
  }
  bool number_float(number_float_t, const string_t& text) override {
    if (in_uints()) {
      // The reference reads these fields as usize: no sign, fraction or exponent. Digits alone
      // arrive here only when they overflow uint64.
      std::string shown = text.substr(0, 40);
      bool digits = text.find_first_not_of("0123456789") == std::string::npos;
      if (digits) return fail_at(field_ + " value " + shown + " is too large");
      return fail_at(field_ + " must hold non-negative integers, found " + shown);
    }
    return unexpected("a number");
  }
  bool string(string_t& s) override {
    if (depth_ == 2 && in_metadata_) {
      if (!h_.metadata.emplace(meta_key_, s).second) return fail_at("duplicate key " + grape::quoted(meta_key_));
      return true;
    }
    if (depth_ == 2 && in_entry_ && field_ == "dtype") {
      raw_.dtype_text = s;
      return true;
    }
    return unexpected("a string");
  }
  bool binary(binary_t&) override { return unexpected("a binary value"); }

  bool start_object(std::size_t) override {
    if (depth_ == 0) return enter();
    if (depth_ == 1 && in_metadata_key_) {
      in_metadata_ = true;
      return enter();
    }
    if (depth_ == 1) {
      in_entry_ = true;
      raw_ = RawEntry{};
      raw_.name = key_;
      return enter();
    }
    return unexpected("an object");
  }
  bool end_object() override {
    --depth_;
    if (depth_ == 0) {
      closed_ = true;
      return true;
    }
    if (in_metadata_) {
      in_metadata_ = false;
      return done_value();
    }
    in_entry_ = false;
    try {
      h_.entries.push_back(make_entry(raw_, file_));
    } catch (const Error& e) {
      error = e.what();
      return false;
    }
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth_ == 2 && in_entry_ && (field_ == "shape" || field_ == "data_offsets")) return enter();
    return unexpected("an array");
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool key(string_t& k) override {
    if (depth_ == 1) {
      key_ = k;
      in_metadata_key_ = k == "__metadata__";
      if (in_metadata_key_) {
        if (have_metadata_) return fail_at("__metadata__", "duplicate __metadata__ entry");
        have_metadata_ = true;
      } else if (!names_.insert(k).second) {
        return fail_at("tensor " + grape::quoted(k), "duplicate tensor name");
      }
      return true;
    }
    if (in_metadata_) {
      meta_key_ = k;
      return true;
    }
    field_ = k;
    auto dup = [&](bool& seen) {
      if (seen) return fail_at("duplicate field " + grape::quoted(k));
      seen = true;
      return true;
    };
    if (k == "dtype") return dup(raw_.have_dtype);
    if (k == "shape") return dup(raw_.have_shape);
    if (k == "data_offsets") return dup(raw_.have_offsets);
    return fail_at("unknown field " + grape::quoted(k) + " (expected dtype, shape, data_offsets)");
  }

  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& ex) override {
    std::string what = ex.what();
    auto has = [&](const char* fragment) { return what.find(fragment) != std::string::npos; };
    std::string at = file_ + ": invalid header JSON at byte " + std::to_string(position) + ": ";
    // nlohmann's last token can hold the text since the previous token; the last character is the
    // one that did not fit.
    std::string found = last_token.empty() ? "end of header" : grape::quoted(last_token.substr(last_token.size() - 1));
    if (closed_) {
      error = at + "trailing characters after the header object";
    } else if (has("control character")) {
      error = at + "control character in string";
    } else if (has("forbidden character after backslash")) {
      error = at + "invalid escape in string";
    } else if (has("must be followed by U+DC00")) {
      error = at + "lone leading surrogate in \\u escape";
    } else if (has("must follow U+D800")) {
      error = at + "lone trailing surrogate in \\u escape";
    } else if (has("must be followed by 4 hex digits")) {
      error = at + "invalid \\u escape";
    } else if (has("missing closing quote")) {
      error = at + "unterminated string";
    } else if (has("end of input")) {
      error = at + "unexpected end of header";
    } else if (in_uints() && leading_zero(position, last_token)) {
      error = at + "invalid number (leading zero)";
    } else if (in_uints()) {
      fail_at(field_ + " must hold non-negative integers, found " + found);
    } else if (has("expected string literal")) {
      error = at + "expected a string, found " + found;
    } else {
      // nlohmann's own words: "syntax error while parsing value - invalid literal; last read: ..."
      auto colon = what.find(": ", what.find("parse error"));
      error = at + (colon == std::string::npos ? what : what.substr(colon + 2));
    }
    return false;
  }

 private:
  bool enter() {
    ++depth_;
    return true;
  }
  bool in_uints() const { return depth_ == 3 && in_entry_; }
  bool done_value() {
    in_metadata_key_ = false;
    return true;
  }
  // "01": nlohmann's lexer ends the number after the 0 and trips on the 1.
  bool leading_zero(std::size_t position, const std::string& last_token) const {
    size_t start = position >= last_token.size() ? position - last_token.size() : 0;
    return !last_token.empty() && last_token[0] >= '0' && last_token[0] <= '9' && start > 0 &&
           start <= text_.size() && text_[start - 1] == '0';
  }

  std::string where() const {
    if (depth_ >= 1 && in_metadata_key_) return "__metadata__";
    return "tensor " + grape::quoted(depth_ >= 2 && in_entry_ ? raw_.name : key_);
  }
  bool fail_at(const std::string& place, const std::string& what) {
    if (error.empty()) error = file_ + ": " + place + ": " + what;
    return false;
  }
  bool fail_at(const std::string& what) { return fail_at(where(), what); }

  // A value where the schema has no place for it.
  bool unexpected(const std::string& found) {
    if (depth_ == 1 && in_metadata_key_) return fail_at("must be an object of strings, found " + found);
    if (depth_ == 1) return fail_at("entry must be an object, found " + found);
    if (depth_ == 2 && in_metadata_) return fail_at("value of " + grape::quoted(meta_key_) + " must be a string, found " + found);
    if (in_uints()) return fail_at(field_ + " must hold non-negative integers, found " + found);
    if (field_ == "dtype") return fail_at("dtype must be a string, found " + found);
    return fail_at(field_ + " must be an array of non-negative integers, found " + found);
  }

  std::string_view text_;
  const std::string& file_;
  Header& h_;
  int depth_ = 0;
  bool closed_ = false;           // the top-level object has ended
  std::string key_;               // the current top-level key
  bool in_metadata_key_ = false;  // ... is "__metadata__"
  bool have_metadata_ = false;
  bool in_metadata_ = false;      // inside the __metadata__ object
  std::string meta_key_;
  bool in_entry_ = false;         // inside a tensor entry
  std::string field_;             // the entry's current field
  RawEntry raw_;
  std::set<std::string> names_;
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
  HeaderReader reader(text, file, h);
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(text.begin(), text.end(), &reader);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::Format, file + ": invalid header JSON: " + e.what());
  }
  if (!ok || !reader.error.empty())
    throw Error(ErrorCode::Format, reader.error.empty() ? file + ": invalid header JSON" : reader.error);

  std::stable_sort(h.entries.begin(), h.entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t expected = 0;
  for (const Entry& e : h.entries) {
    if (e.begin != expected) {
      std::string what = e.begin < expected ? "overlap the previous tensor, which ends at byte "
                                            : "leave a gap after the previous tensor, which ends at byte ";
      throw Error(ErrorCode::Format, file + ": tensor " + grape::quoted(e.name) + ": data_offsets " +
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
      throw Error(ErrorCode::InvalidArgument, what + ": tensor " + grape::quoted(kv.first) + " is undefined");
    if (kv.first == "__metadata__")
      throw Error(ErrorCode::InvalidArgument, what + ": a tensor cannot be named '__metadata__'");
    if (!is_valid_utf8(kv.first))
      throw Error(ErrorCode::InvalidArgument, what + ": tensor name " + grape::quoted(kv.first) + " is not valid UTF-8");
    p.order.push_back(&kv);
  }
  for (const auto& kv : metadata)
    if (!is_valid_utf8(kv.first) || !is_valid_utf8(kv.second))
      throw Error(ErrorCode::InvalidArgument, what + ": metadata entry " + grape::quoted(kv.first) + " is not valid UTF-8");
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
