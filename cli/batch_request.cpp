#include "cli/batch_request.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/api.h"
#include "cli/batch_npy.h"
#include "cli/values.h"

namespace grape::cli {
namespace {

using nlohmann::json;

// A key of the request, as JSON text ("key"), cut as quoted() cuts: "aaaa"... (100000 characters).
std::string json_quoted(const std::string& key) {
  if (key.size() <= kMaxQuotedValue) return json(key).dump();
  return json(head_of(key)).dump() + "... (" + std::to_string(key.size()) + " characters)";
}

// A bad request: the message without the "FILE:LINE: " prefix, which parse_request adds.
struct Reject {
  std::string message;
};

std::string declared(const ParamInfo& p) {
  std::string s = std::string(grp_dtype_name(p.dtype)) + "[";
  for (size_t k = 0; k < p.exprs.size(); ++k) s += (k ? ", " : "") + p.exprs[k];
  return s + "]";
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + "]";
}

std::string index_text(const std::vector<int64_t>& at) {
  std::string s;
  for (int64_t i : at) s += "[" + std::to_string(i) + "]";
  return s;
}

// A JSON scalar as the SAX parser reports it.
struct Scalar {
  enum Kind { Null, Bool, Int, Uint, Float, String } kind;
  explicit Scalar(Kind k) : kind(k) {}
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
  std::string_view text;  // Float: the number as written; String: the string

  std::string describe() const {
    switch (kind) {
      case Null: return "null";
      case Bool: return "a boolean";
      case Int: return "the integer " + std::to_string(i);
      case Uint: return "the integer " + std::to_string(u);
      case Float: return "the number " + std::string(text);
      case String: return "a string";
    }
    return "?";
  }
};

// Stores one scalar as element i of dtype `dtype`. where() names the element in errors (built
// only then: building it for every element would cost more than the conversion).
template <class Where>
void store(const Scalar& v, grp_dtype dtype, void* data, size_t i, Where where) {
  if (is_float_dtype(dtype)) {
    switch (v.kind) {
      case Scalar::Float: return store_float(dtype, data, i, v.f);
      case Scalar::Int: return store_float(dtype, data, i, static_cast<double>(v.i));
      case Scalar::Uint: return store_float(dtype, data, i, static_cast<double>(v.u));
      case Scalar::String:
        if (v.text == "NaN") return store_float(dtype, data, i, std::numeric_limits<double>::quiet_NaN());
        if (v.text == "Infinity") return store_float(dtype, data, i, std::numeric_limits<double>::infinity());
        if (v.text == "-Infinity")
          return store_float(dtype, data, i, -std::numeric_limits<double>::infinity());
        break;
      default: break;
    }
    throw Reject{where() + ": expected a number, found " + v.describe()};
  }
  if (dtype == GRP_BOOL) {
    if (v.kind == Scalar::Bool) return store_integer(dtype, data, i, v.b ? 1 : 0);
    if ((v.kind == Scalar::Int || v.kind == Scalar::Uint) && (v.i == 0 || v.i == 1) && v.u <= 1)
      return store_integer(dtype, data, i, v.kind == Scalar::Int ? v.i : static_cast<int64_t>(v.u));
    throw Reject{where() + ": expected true, false, 0 or 1, found " + v.describe()};
  }
  int64_t lo = dtype == GRP_I32 ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min();
  int64_t hi = dtype == GRP_I32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
  if (v.kind == Scalar::Uint) {
    if (v.u > static_cast<uint64_t>(hi))
      throw Reject{where() + ": " + std::to_string(v.u) + " does not fit in " + grp_dtype_name(dtype)};
    return store_integer(dtype, data, i, static_cast<int64_t>(v.u));
  }
  if (v.kind == Scalar::Int) {
    if (v.i < lo || v.i > hi)
      throw Reject{where() + ": " + std::to_string(v.i) + " does not fit in " + grp_dtype_name(dtype)};
    return store_integer(dtype, data, i, v.i);
  }
  throw Reject{where() + ": expected an integer, found " + v.describe()};
}

void check_declared(const HostTensor& t, const ParamInfo& p, const std::string& source) {
  if (t.dtype != p.dtype)
    throw Reject{"input '" + p.name + "'" + source + " is " + grp_dtype_name(t.dtype) +
                 ", the entry declares " + declared(p)};
  if (t.shape.size() != p.dims.size())
    throw Reject{"input '" + p.name + "'" + source + " has shape " + shape_text(t.shape) +
                 ", the entry declares " + declared(p) + " (rank " + std::to_string(p.dims.size()) + ")"};
  for (size_t k = 0; k < t.shape.size(); ++k)
    if (p.dims[k] >= 0 && t.shape[k] != p.dims[k])
      throw Reject{"input '" + p.name + "'" + source + " has shape " + shape_text(t.shape) +
                   ", the entry declares " + declared(p) + " (dim " + std::to_string(k) + " must be " +
                   std::to_string(p.dims[k]) + ")"};
}

// check_declared without building the message: most values fit.
bool fits_declared(const HostTensor& t, const ParamInfo& p) {
  if (t.dtype != p.dtype || t.shape.size() != p.dims.size()) return false;
  for (size_t k = 0; k < t.shape.size(); ++k)
    if (p.dims[k] >= 0 && t.shape[k] != p.dims[k]) return false;
  return true;
}

// Where a relative {"npy": PATH} is.
std::string resolve(const std::string& file, const RequestContext& ctx) {
  std::filesystem::path path(file);
  if (path.is_relative() && !ctx.base_dir.empty()) path = std::filesystem::path(ctx.base_dir) / path;
  return path.string();
}

// Rows [a, b) of the shared file `path` (resolved) as parameter p's value: a view into the
// cached file, which the view keeps alive.
HostTensor rows_view(const std::shared_ptr<const HostTensor>& all, const std::string& path, int64_t a,
                     int64_t b, const ParamInfo& p) {
  int64_t n = all->shape.empty() ? 0 : all->shape[0];
  if (all->shape.empty() || a > b || b > n)
    throw Reject{"input '" + p.name + "': rows [" + std::to_string(a) + ", " + std::to_string(b) + "] of " +
                 path + ", which has " +
                 (all->shape.empty() ? std::string("no rows (a scalar)") : std::to_string(n) + " rows")};
  size_t row_bytes = n ? all->nbytes() / static_cast<size_t>(n) : 0;
  HostTensor t;
  t.dtype = all->dtype;
  t.shape = all->shape;
  t.shape[0] = b - a;
  t.bytes = std::shared_ptr<const uint8_t>(all, all->bytes.get() + static_cast<size_t>(a) * row_bytes);
  t.size = static_cast<size_t>(b - a) * row_bytes;
  t.mapped = all->mapped;
  if (!fits_declared(t, p)) check_declared(t, p, " (" + path + ")");
  return t;
}

std::string strip_json_exception_prefix(const std::string& what) {
  // "[json.exception.parse_error.101] parse error at line 1, column 5: ..." -> "parse error at ..."
  auto close = what.find("] ");
  return what.rfind("[json.exception", 0) == 0 && close != std::string::npos ? what.substr(close + 2) : what;
}

// Reads a request with nlohmann-json's SAX interface: the numbers of an input go straight into a
// buffer of the parameter's dtype, without a document tree in between (a third of the time of a
// request, measured on 10,000 MLP requests). The first problem found is kept and reading goes on
// only to find the id, so that the error result can carry it.
class RequestReader final : public json::json_sax_t {
 public:
  RequestReader(Request& r, const RequestContext& ctx) : r_(r), ctx_(ctx), sig_(*ctx.sig) {
    r_.inputs.assign(sig_.inputs.size(), HostTensor{});
    given_.assign(sig_.inputs.size(), false);
  }

  std::string error;

  bool null() override { return scalar(Scalar(Scalar::Null)); }
  bool boolean(bool b) override {
    Scalar v(Scalar::Bool);
    v.b = b;
    return scalar(v);
  }
  bool number_integer(number_integer_t i) override {
    Scalar v(Scalar::Int);
    v.i = i;
    return scalar(v);
  }
  bool number_unsigned(number_unsigned_t u) override {
    Scalar v(Scalar::Uint);
    v.u = u;
    return scalar(v);
  }
  bool number_float(number_float_t f, const string_t& text) override {
    Scalar v(Scalar::Float);
    v.f = f;
    v.text = text;
    return scalar(v);
  }
  bool string(string_t& s) override {
    Scalar v(Scalar::String);
    v.text = s;
    return scalar(v);
  }
  bool binary(binary_t&) override { return scalar(Scalar(Scalar::Null)); }

  bool start_object(std::size_t) override {
    ++depth_;
    if (skipping()) return true;
    if (depth_ == 1) return true;  // the request
    if (depth_ == 2 && field_ == "inputs") return true;
    if (depth_ == 3 && param_ >= 0) {  // {"npy": PATH} or {"npy": PATH, "rows": [a, b]}
      npy_ = true;
      npy_path_.reset();
      npy_rows_.reset();
      return true;
    }
    return skip_container(container_error("an object"));
  }
  bool end_object() override {
    --depth_;
    if (skip_until_ >= 0) return end_skip();
    if (!error.empty()) return true;
    if (depth_ == 2 && npy_) {
      npy_ = false;
      if (!npy_path_) return fail(npy_form());
      try {
        read_npy_value(*npy_path_);
      } catch (const Reject& e) {
        return fail(e.message);
      }
      param_ = -1;
    }
    return true;
  }
  bool key(string_t& k) override {
    if (skipping()) return true;
    if (depth_ == 1) {
      field_ = k;
      if (k != "id" && k != "inputs")
        return skip_value("unknown field " + json_quoted(k) + " (a request has \"id\" and \"inputs\")");
      return true;
    }
    if (depth_ == 2) {  // a parameter name
      int i = sig_.input_index(k);
      if (i < 0) {
        std::string names;
        for (const auto& p : sig_.inputs) names += (names.empty() ? "" : ", ") + p.name;
        return skip_value("unknown input " + json_quoted(k) + " (the entry takes " +
                          (names.empty() ? std::string("no inputs") : names) + ")");
      }
      if (given_[static_cast<size_t>(i)]) return skip_value("input " + json_quoted(k) + " given twice");
      param_ = i;
      return true;
    }
    if (depth_ == 3 && npy_) {
      if (k != "npy" && k != "rows") return skip_value(npy_form());
      npy_key_ = k;
      return true;
    }
    return true;
  }
  bool start_array(std::size_t) override {
    ++depth_;
    if (skipping()) return true;
    if (npy_) {
      if (depth_ != 4 || npy_key_ != "rows" || npy_rows_) return skip_container(npy_form());
      npy_rows_.emplace();
      return true;
    }
    if (depth_ == 3 && param_ >= 0) begin_array();
    if (!in_array_) return skip_container(container_error("an array"));
    size_t rel = static_cast<size_t>(depth_ - base_);
    if (rel > 1) ++counts_[rel - 2];
    if (leaf_ >= 0 && static_cast<int>(rel) > leaf_) return skip_container(not_rectangular(rel));
    if (rel > param().dims.size())
      return skip_container("input '" + param_name() + "' is nested deeper than the entry's " +
                            declared(param()) + " (rank " + std::to_string(param().dims.size()) + ")");
    if (counts_.size() < rel) counts_.resize(rel, 0);
    counts_[rel - 1] = 0;
    if (shape_.size() < rel) shape_.resize(rel, -1);
    return true;
  }
  bool end_array() override {
    size_t rel = static_cast<size_t>(depth_ - base_);
    --depth_;
    if (skip_until_ >= 0) return end_skip();
    if (!error.empty()) return true;
    if (npy_) return npy_rows_->size() == 2 ? true : fail(npy_form());
    int64_t n = counts_[rel - 1];
    if (shape_[rel - 1] < 0) {
      shape_[rel - 1] = n;
    } else if (shape_[rel - 1] != n) {
      return fail("input '" + param_name() + "' at " + index_text(path(rel - 1)) + ": expected an array of " +
                  std::to_string(shape_[rel - 1]) + " (the arrays are not rectangular), found an array of " +
                  std::to_string(n));
    }
    if (depth_ == base_) {
      in_array_ = false;
      return finish_value();
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    error = "not valid JSON: " + strip_json_exception_prefix(e.what());
    return false;
  }

  const std::vector<bool>& given() const { return given_; }

 private:
  // After a problem only the id is still of interest, and it is on the first level.
  bool skipping() const { return skip_until_ >= 0 || (!error.empty() && depth_ > 1); }

  // Records the first problem. Reading goes on (skipping every input) only while the id is not
  // known yet.
  bool note(const std::string& message) {
    if (error.empty()) error = message;
    in_array_ = false;
    npy_ = false;
    return !r_.has_id;
  }
  // The same, skipping the value that follows the current key.
  bool skip_value(const std::string& message) {
    skip_until_ = depth_;
    return note(message);
  }
  // The same, skipping the container just opened.
  bool skip_container(const std::string& message) {
    skip_until_ = depth_ - 1;
    return note(message);
  }
  bool fail(const std::string& message) { return note(message); }
  // After the end of a container: whether it ended a skipped value.
  bool end_skip() {
    if (depth_ <= skip_until_) skip_until_ = -1;
    return true;
  }

  std::string container_error(const char* what) {
    if (depth_ == 1) return std::string("a request must be a JSON object, found ") + what;
    if (depth_ == 2 && field_ == "id")
      return std::string("\"id\" must be a string or an integer, found ") + what;
    if (depth_ == 2 && field_ == "inputs") return std::string("\"inputs\" must be an object, found ") + what;
    if (npy_) return "input '" + param_name() + "': an object value must be {\"npy\": \"PATH\"}";
    return "input '" + param_name() + "': unexpected " + what;
  }

  const ParamInfo& param() const { return sig_.inputs[static_cast<size_t>(param_)]; }
  std::string param_name() const { return param_ >= 0 ? param().name : "?"; }

  std::vector<int64_t> path(size_t rel) const {
    std::vector<int64_t> at;
    for (size_t k = 0; k < rel; ++k) at.push_back(counts_[k] - 1);
    return at;
  }
  std::string not_rectangular(size_t rel) {
    return "input '" + param_name() + "' element " + index_text(path(rel - 1)) +
           ": the arrays are not rectangular (an array where a number was before)";
  }

  void begin_array() {
    in_array_ = true;
    base_ = depth_ - 1;
    leaf_ = -1;
    counts_.clear();
    shape_.clear();
    bytes_.clear();
    bytes_.reserve(static_cast<size_t>(std::max<int64_t>(param().dims.empty() ? 1 : param().dims.back(), 1)) *
                   grp_dtype_size(param().dtype));
  }

  bool scalar(const Scalar& v) {
    if (skip_until_ >= 0) {
      if (depth_ == skip_until_) skip_until_ = -1;  // it was the skipped value
      return true;
    }
    if (depth_ == 1) {
      if (field_ == "id") {
        if (v.kind == Scalar::String) {
          r_.id = std::string(v.text);
          r_.id_json = json(r_.id).dump();
        } else if (v.kind == Scalar::Int || v.kind == Scalar::Uint) {
          r_.id = v.kind == Scalar::Int ? std::to_string(v.i) : std::to_string(v.u);
          r_.id_json = r_.id;
        } else {
          return note("\"id\" must be a string or an integer, found " + v.describe());
        }
        r_.has_id = true;
        return error.empty();
      }
      if (!error.empty()) return true;
      return note("\"inputs\" must be an object, found " + v.describe());
    }
    if (depth_ == 0) return note("a request must be a JSON object, found " + v.describe());
    if (!error.empty()) return true;
    if (npy_) {
      if (depth_ == 3 && npy_key_ == "npy" && v.kind == Scalar::String) {
        npy_path_ = std::string(v.text);
        return true;
      }
      if (depth_ == 4 && v.kind == Scalar::Uint && npy_rows_->size() < 2) {
        npy_rows_->push_back(static_cast<int64_t>(std::min<uint64_t>(v.u, INT64_MAX)));
        return true;
      }
      return note(npy_form());
    }
    try {
      if (depth_ == 2) {  // a scalar input
        const ParamInfo& p = param();
        if (!p.dims.empty())
          return fail("input '" + p.name + "' has rank 0, the entry declares " + declared(p) + " (rank " +
                      std::to_string(p.dims.size()) + ")");
        std::vector<uint8_t> bytes(grp_dtype_size(p.dtype));
        store(v, p.dtype, bytes.data(), 0, [&] { return "input '" + p.name + "'"; });
        r_.inputs[static_cast<size_t>(param_)] = HostTensor::owning(p.dtype, {}, std::move(bytes));
        given_[static_cast<size_t>(param_)] = true;
        param_ = -1;
        return true;
      }
      // An element of an array.
      size_t rel = static_cast<size_t>(depth_ - base_);
      ++counts_[rel - 1];
      if (leaf_ < 0) {
        leaf_ = static_cast<int>(rel);
        if (rel != param().dims.size())
          return fail("input '" + param_name() + "' has rank " + std::to_string(rel) +
                      ", the entry declares " + declared(param()) + " (rank " +
                      std::to_string(param().dims.size()) + ")");
      } else if (static_cast<int>(rel) != leaf_) {
        return fail("input '" + param_name() + "' element " + index_text(path(rel)) +
                    ": the arrays are not rectangular (a number where an array was before)");
      }
      size_t esize = grp_dtype_size(param().dtype), at = bytes_.size() / esize;
      bytes_.resize(bytes_.size() + esize);
      store(v, param().dtype, bytes_.data(), at,
            [&] { return "input '" + param_name() + "' element " + index_text(path(rel)); });
      return true;
    } catch (const Reject& e) {
      return fail(e.message);
    }
  }

  bool finish_value() {
    const ParamInfo& p = param();
    std::vector<int64_t> shape = shape_;
    if (shape.size() != p.dims.size())
      return fail("input '" + p.name + "' has rank " + std::to_string(shape.size()) +
                  ", the entry declares " + declared(p) + " (rank " + std::to_string(p.dims.size()) + ")");
    HostTensor t = HostTensor::owning(p.dtype, std::move(shape), std::move(bytes_));
    try {
      check_declared(t, p, "");
    } catch (const Reject& e) {
      return fail(e.message);
    }
    r_.inputs[static_cast<size_t>(param_)] = std::move(t);
    given_[static_cast<size_t>(param_)] = true;
    param_ = -1;
    return true;
  }

  std::string npy_form() const {
    return "input '" + param_name() +
           "': an object value must be {\"npy\": \"PATH\"} or {\"npy\": \"PATH\", " +
           "\"rows\": [FIRST, END]}";
  }

  void read_npy_value(const std::string& file) {
    std::string path = resolve(file, ctx_);
    HostTensor t;
    try {
      if (!npy_rows_) {
        t = read_npy(path);
        check_declared(t, param(), " (" + path + ")");
      } else {
        // Rows of a file that many requests share: read once, cut here.
        t = rows_view(ctx_.npy_rows->get(path), path, (*npy_rows_)[0], (*npy_rows_)[1], param());
      }
    } catch (const ApiError& e) {
      throw Reject{"input '" + param_name() + "': " + e.message};
    }
    r_.inputs[static_cast<size_t>(param_)] = std::move(t);
    given_[static_cast<size_t>(param_)] = true;
  }

  Request& r_;
  const RequestContext& ctx_;
  const Signature& sig_;
  std::vector<bool> given_;
  int depth_ = 0;
  int skip_until_ = -1;  // >= 0: skipping until the depth falls to this
  std::string field_;    // the request field being read
  int param_ = -1;       // the input being read
  bool npy_ = false;
  std::string npy_key_;
  std::optional<std::string> npy_path_;
  std::optional<std::vector<int64_t>> npy_rows_;
  // The nested arrays of the input being read: where they began, the depth of the numbers, the
  // elements counted at each depth and the size each depth must have.
  bool in_array_ = false;
  int base_ = 0;
  int leaf_ = -1;
  std::vector<int64_t> counts_, shape_;
  std::vector<uint8_t> bytes_;
};

// After the request's own inputs: the --input values for those it left out, and the rows, which
// its stacked inputs must agree on.
void complete(Request& r, const std::vector<bool>& given, const RequestContext& ctx) {
  if (!r.has_id) throw Reject{"the request has no \"id\""};
  const Signature& sig = *ctx.sig;
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    if (given[i]) continue;
    if (!ctx.shared[i])
      throw Reject{"missing input '" + sig.inputs[i].name + "' (give it in \"inputs\" or with --input " +
                   sig.inputs[i].name + "=F.npy)"};
    r.inputs[i] = *ctx.shared[i];
  }
  // The stacked inputs must agree on the batch dim, since their rows are one request's rows.
  const ParamInfo* first = nullptr;
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    if (!sig.inputs[i].stacked) continue;
    int64_t rows = r.inputs[i].shape[0];
    if (!first) {
      first = &sig.inputs[i];
      r.rows = rows;
    } else if (rows != r.rows) {
      throw Reject{"inputs '" + first->name + "' and '" + sig.inputs[i].name + "' disagree on " +
                   sig.batch_dim + ": " + std::to_string(r.rows) + " and " + std::to_string(rows) + " rows"};
    }
  }
}

void parse_into(Request& r, std::string_view text, const RequestContext& ctx) {
  RequestReader reader(r, ctx);
  json::sax_parse(text.begin(), text.end(), &reader);
  if (!reader.error.empty()) throw Reject{reader.error};
  complete(r, reader.given(), ctx);
}

// The fast path for the request form of high-throughput runs, the one bench_batch.py writes:
//   {"id": "r1", "inputs": {"x": {"npy": "x.npy", "rows": [1, 2]}}}
// (either id form, any order of keys, any whitespace). It accepts only what the SAX reader
// accepts with the same result: strings of printable ASCII without escapes, integers as JSON
// writes them, each key once. Anything else, errors included, goes to the SAX reader, which then
// gives the same messages as always.
class FastScanner {
 public:
  FastScanner(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  void ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r' || *p_ == '\n')) ++p_;
  }
  bool lit(char c) {
    ws();
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }
  bool at_end() {
    ws();
    return p_ == end_;
  }
  // A string whose JSON text is its value.
  bool str(std::string_view& out) {
    if (!lit('"')) return false;
    const char* b = p_;
    while (p_ < end_ && *p_ != '"') {
      if (*p_ < 0x20 || *p_ > 0x7e || *p_ == '\\') return false;
      ++p_;
    }
    if (p_ == end_) return false;
    out = std::string_view(b, static_cast<size_t>(p_ - b));
    ++p_;
    return true;
  }
  // A non-negative integer of at most 18 digits, as JSON writes it (no leading zero).
  bool uint(int64_t& v, std::string_view& digits) {
    ws();
    const char* b = p_;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    size_t n = static_cast<size_t>(p_ - b);
    if (n == 0 || n > 18 || (n > 1 && *b == '0')) return false;
    if (p_ < end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E')) return false;
    v = 0;
    for (const char* q = b; q < p_; ++q) v = v * 10 + (*q - '0');
    digits = std::string_view(b, n);
    return true;
  }

 private:
  const char* p_;
  const char* end_;
};

// {"npy": PATH, "rows": [a, b]}, either key first.
bool fast_npy_rows(FastScanner& sc, std::string_view& path, int64_t& a, int64_t& b) {
  bool have_path = false, have_rows = false;
  if (!sc.lit('{')) return false;
  do {
    std::string_view key, digits;
    if (!sc.str(key) || !sc.lit(':')) return false;
    if (key == "npy" && !have_path) {
      if (!sc.str(path)) return false;
      have_path = true;
    } else if (key == "rows" && !have_rows) {
      if (!sc.lit('[') || !sc.uint(a, digits) || !sc.lit(',') || !sc.uint(b, digits) || !sc.lit(']'))
        return false;
      have_rows = true;
    } else {
      return false;
    }
  } while (sc.lit(','));
  return sc.lit('}') && have_path && have_rows;
}

bool fast_inputs(FastScanner& sc, Request& r, std::vector<bool>& given, const RequestContext& ctx,
                 NpyMemo& memo) {
  if (!sc.lit('{')) return false;
  if (sc.lit('}')) return true;
  do {
    std::string_view name, file;
    int64_t a = 0, b = 0;
    if (!sc.str(name) || !sc.lit(':')) return false;
    int i = ctx.sig->input_index(std::string(name));
    if (i < 0 || given[static_cast<size_t>(i)] || !fast_npy_rows(sc, file, a, b)) return false;
    // Requests of one run mostly name one file: its path is resolved and looked up once.
    if (!memo.file || memo.name != file) {
      memo.name = std::string(file);
      memo.path = resolve(memo.name, ctx);
      memo.file = ctx.npy_rows->get(memo.path);
    }
    r.inputs[static_cast<size_t>(i)] =
        rows_view(memo.file, memo.path, a, b, ctx.sig->inputs[static_cast<size_t>(i)]);
    given[static_cast<size_t>(i)] = true;
  } while (sc.lit(','));
  return sc.lit('}');
}

bool parse_fast(Request& r, std::string_view text, const RequestContext& ctx, NpyMemo& memo) {
  if (!ctx.npy_rows) return false;
  FastScanner sc(text);
  std::vector<bool> given(ctx.sig->inputs.size(), false);
  r.inputs.assign(ctx.sig->inputs.size(), HostTensor{});
  bool have_inputs = false;
  if (!sc.lit('{')) return false;
  do {
    std::string_view key;
    if (!sc.str(key) || !sc.lit(':')) return false;
    if (key == "id" && !r.has_id) {
      std::string_view id;
      int64_t v;
      if (sc.str(id)) {
        r.id = std::string(id);
        r.id_json = "\"" + r.id + "\"";
      } else if (sc.uint(v, id)) {
        r.id = r.id_json = std::string(id);
      } else {
        return false;
      }
      r.has_id = true;
    } else if (key == "inputs" && !have_inputs) {
      if (!fast_inputs(sc, r, given, ctx, memo)) return false;
      have_inputs = true;
    } else {
      return false;
    }
  } while (sc.lit(','));
  if (!sc.lit('}') || !sc.at_end() || !r.has_id) return false;
  complete(r, given, ctx);
  return true;
}

}  // namespace

std::string mismatch(const HostTensor& t, const ParamInfo& p, const std::string& source) {
  try {
    check_declared(t, p, source);
  } catch (const Reject& e) {
    return e.message;
  }
  return "";
}

std::shared_ptr<const HostTensor> NpyCache::get(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(path);
  if (it != files_.end()) return it->second;
  // Mapped where it can be, so that the first call need not wait for the whole file.
  std::shared_ptr<const HostTensor> t = map_npy(path);
  if (!t) t = std::make_shared<const HostTensor>(read_npy(path));
  files_.emplace(path, t);
  return t;
}

HostTensor HostTensor::owning(grp_dtype dtype, std::vector<int64_t> shape, std::vector<uint8_t> data) {
  auto v = std::make_shared<const std::vector<uint8_t>>(std::move(data));
  size_t n = v->size();
  return HostTensor{dtype, std::move(shape), std::shared_ptr<const uint8_t>(v, v->data()), n};
}

HostTensor HostTensor::of(grp_tensor* t) {
  std::shared_ptr<grp_tensor> holder(t, grp_tensor_destroy);
  const int64_t* shape = grp_tensor_shape(t);
  return HostTensor{grp_tensor_dtype(t), std::vector<int64_t>(shape, shape + grp_tensor_rank(t)),
                    std::shared_ptr<const uint8_t>(holder, static_cast<const uint8_t*>(grp_tensor_data(t))),
                    grp_tensor_nbytes(t)};
}

HostTensor read_npy(const std::string& path) {
  grp_tensor* raw = nullptr;
  check(grp_tensor_read_npy(path.c_str(), &raw));
  return HostTensor::of(raw);
}

Request parse_request(std::string_view text, size_t line, const RequestContext& ctx, NpyMemo* memo) {
  Request r;
  r.line = line;
  r.id_json = "null";
  try {
    NpyMemo own;
    if (parse_fast(r, text, ctx, memo ? *memo : own)) return r;
  } catch (const Reject&) {
  } catch (const ApiError&) {
  } catch (const std::bad_alloc&) {
  }
  // Not the fast path's form, or a bad request: read it again from the start (which reports it).
  r = Request{};
  r.line = line;
  r.id_json = "null";
  try {
    parse_into(r, text, ctx);
  } catch (const Reject& e) {
    r.error = ctx.file + ":" + std::to_string(line) + ": " + e.message;
    r.inputs.clear();
  } catch (const nlohmann::json::exception& e) {
    r.error = ctx.file + ":" + std::to_string(line) + ": " + strip_json_exception_prefix(e.what());
    r.inputs.clear();
  } catch (const std::bad_alloc&) {
    r.error = ctx.file + ":" + std::to_string(line) + ": out of memory reading the request";
    r.inputs.clear();
  }
  return r;
}

}  // namespace grape::cli
