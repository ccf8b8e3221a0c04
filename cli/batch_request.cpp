#include "cli/batch_request.h"

#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "cli/api.h"
#include "cli/values.h"

namespace grape::cli {
namespace {

using nlohmann::json;

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

std::string kind(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_float: return "the number " + v.dump();
    default: return "the integer " + v.dump();
  }
}

// Stores one JSON scalar as element i of dtype `dtype`.
void store(const json& v, grp_dtype dtype, void* data, size_t i, const std::string& where) {
  if (is_float_dtype(dtype)) {
    if (v.is_number()) return store_float(dtype, data, i, v.get<double>());
    if (v.is_string()) {
      const auto& s = v.get_ref<const std::string&>();
      if (s == "NaN") return store_float(dtype, data, i, std::numeric_limits<double>::quiet_NaN());
      if (s == "Infinity") return store_float(dtype, data, i, std::numeric_limits<double>::infinity());
      if (s == "-Infinity") return store_float(dtype, data, i, -std::numeric_limits<double>::infinity());
    }
    throw Reject{where + ": expected a number, found " + kind(v)};
  }
  if (dtype == GRP_BOOL) {
    if (v.is_boolean()) return store_integer(dtype, data, i, v.get<bool>() ? 1 : 0);
    if (v.is_number_integer() && (v == 0 || v == 1)) return store_integer(dtype, data, i, v.get<int64_t>());
    throw Reject{where + ": expected true, false, 0 or 1, found " + kind(v)};
  }
  int64_t lo = dtype == GRP_I32 ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min();
  int64_t hi = dtype == GRP_I32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > static_cast<uint64_t>(hi))
      throw Reject{where + ": " + v.dump() + " does not fit in " + grp_dtype_name(dtype)};
    return store_integer(dtype, data, i, static_cast<int64_t>(v.get<uint64_t>()));
  }
  if (v.is_number_integer()) {
    int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) throw Reject{where + ": " + v.dump() + " does not fit in " + grp_dtype_name(dtype)};
    return store_integer(dtype, data, i, x);
  }
  throw Reject{where + ": expected an integer, found " + kind(v)};
}

// Fills `out` from the nested arrays of v, whose shape was taken from the first elements; every
// other element must agree with it.
void fill(const json& v, const std::vector<int64_t>& shape, size_t depth, std::vector<int64_t>& at,
          grp_dtype dtype, uint8_t* out, size_t& next, const std::string& name) {
  if (depth == shape.size()) {
    if (v.is_array() || v.is_object())
      throw Reject{"input '" + name + "' element " + index_text(at) + ": expected a scalar, found " +
                   kind(v) + " (the arrays are deeper than the entry's rank " + std::to_string(shape.size()) +
                   ")"};
    store(v, dtype, out, next++, "input '" + name + "' element " + index_text(at));
    return;
  }
  if (!v.is_array() || static_cast<int64_t>(v.size()) != shape[depth]) {
    std::string found = v.is_array() ? "an array of " + std::to_string(v.size()) : kind(v);
    throw Reject{"input '" + name + "' at " + (at.empty() ? std::string("the top level") : index_text(at)) +
                 ": expected an array of " + std::to_string(shape[depth]) +
                 " (the arrays are not rectangular), found " + found};
  }
  at.push_back(0);
  for (const auto& e : v) {
    fill(e, shape, depth + 1, at, dtype, out, next, name);
    ++at.back();
  }
  at.pop_back();
}

HostTensor from_json(const json& v, const ParamInfo& p) {
  std::vector<int64_t> shape;
  const json* cur = &v;
  while (cur->is_array() && shape.size() <= p.dims.size()) {
    shape.push_back(static_cast<int64_t>(cur->size()));
    if (cur->empty()) break;
    cur = &(*cur)[0];
  }
  if (shape.size() > p.dims.size())
    throw Reject{"input '" + p.name + "' is nested deeper than the entry's " + declared(p) + " (rank " +
                 std::to_string(p.dims.size()) + ")"};
  if (shape.size() != p.dims.size())
    throw Reject{"input '" + p.name + "' has rank " + std::to_string(shape.size()) + ", the entry declares " +
                 declared(p) + " (rank " + std::to_string(p.dims.size()) + ")"};
  size_t numel = 1;
  for (int64_t d : shape) numel *= static_cast<size_t>(d);
  auto bytes = std::make_shared<std::vector<uint8_t>>(numel * grp_dtype_size(p.dtype));
  std::vector<int64_t> at;
  size_t next = 0;
  fill(v, shape, 0, at, p.dtype, bytes->data(), next, p.name);
  return HostTensor{p.dtype, std::move(shape), std::move(bytes)};
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

std::string strip_json_exception_prefix(const std::string& what) {
  // "[json.exception.parse_error.101] parse error at line 1, column 5: ..." -> "parse error at ..."
  auto close = what.find("] ");
  return what.rfind("[json.exception", 0) == 0 && close != std::string::npos ? what.substr(close + 2) : what;
}

void parse_into(Request& r, std::string_view text, const RequestContext& ctx) {
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    throw Reject{"not valid JSON: " + strip_json_exception_prefix(e.what())};
  }
  if (!doc.is_object()) throw Reject{"a request must be a JSON object, found " + kind(doc)};
  // The id first, so that later errors are reported under it.
  auto id = doc.find("id");
  if (id == doc.end()) throw Reject{"the request has no \"id\""};
  if (id->is_string()) {
    r.id = id->get<std::string>();
  } else if (id->is_number_integer()) {
    r.id = id->dump();
  } else {
    throw Reject{"\"id\" must be a string or an integer, found " + kind(*id)};
  }
  r.has_id = true;
  r.id_json = id->dump();
  for (const auto& [key, value] : doc.items())
    if (key != "id" && key != "inputs")
      throw Reject{"unknown field " + json(key).dump() + " (a request has \"id\" and \"inputs\")"};

  const Signature& sig = *ctx.sig;
  r.inputs.assign(sig.inputs.size(), HostTensor{});
  std::vector<bool> given(sig.inputs.size(), false);
  auto inputs = doc.find("inputs");
  if (inputs != doc.end()) {
    if (!inputs->is_object()) throw Reject{"\"inputs\" must be an object, found " + kind(*inputs)};
    for (const auto& [name, value] : inputs->items()) {
      int i = sig.input_index(name);
      if (i < 0) {
        std::string names;
        for (const auto& p : sig.inputs) names += (names.empty() ? "" : ", ") + p.name;
        throw Reject{"unknown input " + json(name).dump() + " (the entry takes " +
                     (names.empty() ? std::string("no inputs") : names) + ")"};
      }
      const ParamInfo& p = sig.inputs[static_cast<size_t>(i)];
      if (value.is_object()) {
        auto npy = value.find("npy");
        if (value.size() != 1 || npy == value.end() || !npy->is_string())
          throw Reject{"input '" + name + "': an object value must be {\"npy\": \"PATH\"}"};
        std::filesystem::path path(npy->get<std::string>());
        if (path.is_relative() && !ctx.base_dir.empty()) path = std::filesystem::path(ctx.base_dir) / path;
        try {
          r.inputs[static_cast<size_t>(i)] = read_npy(path.string());
        } catch (const ApiError& e) {
          throw Reject{"input '" + name + "': " + e.message};
        }
        check_declared(r.inputs[static_cast<size_t>(i)], p, " (" + path.string() + ")");
      } else {
        r.inputs[static_cast<size_t>(i)] = from_json(value, p);
        check_declared(r.inputs[static_cast<size_t>(i)], p, "");
      }
      given[static_cast<size_t>(i)] = true;
    }
  }
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

}  // namespace

HostTensor read_npy(const std::string& path) {
  grp_tensor* raw = nullptr;
  check(grp_tensor_read_npy(path.c_str(), &raw));
  TensorPtr t(raw);
  const auto* data = static_cast<const uint8_t*>(grp_tensor_data(t.get()));
  auto bytes = std::make_shared<std::vector<uint8_t>>(data, data + grp_tensor_nbytes(t.get()));
  const int64_t* shape = grp_tensor_shape(t.get());
  return HostTensor{grp_tensor_dtype(t.get()), std::vector<int64_t>(shape, shape + grp_tensor_rank(t.get())),
                    std::move(bytes)};
}

Request parse_request(std::string_view text, size_t line, const RequestContext& ctx) {
  Request r;
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
