// grp_model_*: loading, weights, introspection, IR text.
#include <cctype>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "capi/src/internal.h"
#include "capi/src/options.h"
#include "ir/ir.h"
#include "ir/printer.h"
#include "lang/diagnostics.h"

using namespace grape;
using namespace grape::capi;

namespace {

void parse_define(const char* d, size_t i, std::map<std::string, int64_t>& out) {
  std::string what = "defines[" + std::to_string(i) + "]";
  if (d == nullptr) invalid(what + " is NULL");
  std::string kv = d;
  auto eq = kv.find('=');
  std::string name = kv.substr(0, eq == std::string::npos ? kv.size() : eq);
  bool ident = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
  for (char c : name) ident = ident && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (eq == std::string::npos || !ident) invalid(what + ": expected NAME=VALUE, got '" + kv + "'");
  std::string value = kv.substr(eq + 1);
  errno = 0;
  char* end = nullptr;
  long long v = value.empty() ? 0 : std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || errno != 0 || *end != '\0')
    invalid(what + ": " + name + ": expected an integer, got '" + value + "'");
  out[name] = v;
}

grp_model_options library_defaults() {
  grp_model_options o;
  std::memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  return o;
}

ModelOptions model_options(const grp_model_options* given) {
  grp_model_options o = read_options(given, library_defaults(),
                                     offsetof(grp_model_options, num_defines) + sizeof(size_t), "grp_model_options");
  ModelOptions mo;
  if (o.num_defines > 0 && o.defines == nullptr)
    invalid("grp_model_options: defines is NULL but num_defines is " + std::to_string(o.num_defines));
  for (size_t i = 0; i < o.num_defines; ++i) parse_define(o.defines[i], i, mo.defines);
  if (o.num_limits > 0 && o.limits == nullptr)
    invalid("grp_model_options: limits is NULL but num_limits is " + std::to_string(o.num_limits));
  for (size_t i = 0; i < o.num_limits; ++i) {
    if (o.limits[i] == nullptr) invalid("limits[" + std::to_string(i) + "] is NULL");
    mo.limit_overrides.push_back(o.limits[i]);  // checked (names, values) by Model::load_*
  }
  mo.optimize = o.no_optimize == 0;
  mo.require_loop_bounds = o.require_loop_bounds != 0;
  return mo;
}

grp_model* wrap(std::shared_ptr<Model> m) {
  auto h = std::make_unique<grp_model>();
  h->entries = m->entry_names();
  h->weights = m->weight_signatures();
  for (const auto& w : m->module().weights) h->weight_shapes.push_back(w.shape);
  h->model = std::move(m);
  return h.release();
}

}  // namespace

extern "C" {

grp_model_options grp_model_default_options(void) { return library_defaults(); }

void grp_model_options_init(grp_model_options* opts, size_t struct_size) {
  init_options(opts, struct_size, library_defaults());
}

grp_error* grp_model_load_file(const char* path, const grp_model_options* opts, grp_model** out) {
  return guard([&] {
    require(path, "path");
    require(out, "out");
    ModelOptions mo = model_options(opts);
    *out = wrap(Model::load_file(path, mo));
  });
}

grp_error* grp_model_load_source(const char* src, size_t len, const char* name, const grp_model_options* opts,
                                 grp_model** out) {
  return guard([&] {
    if (src == nullptr && len > 0) invalid("src is NULL but len is " + std::to_string(len));
    require(out, "out");
    ModelOptions mo = model_options(opts);
    std::string text = src ? std::string(src, len) : std::string();
    *out = wrap(Model::load_source(text, name ? name : "<source>", mo));
  });
}

grp_error* grp_model_set_weights_file(grp_model* m, const char* path) {
  return guard([&] {
    require(m, "model");
    require(path, "safetensors_path");
    m->model->set_weights_file(path);
  });
}

grp_error* grp_model_set_weights_memory(grp_model* m, const void* data, size_t nbytes, const char* name) {
  return guard([&] {
    require(m, "model");
    if (data == nullptr && nbytes > 0) invalid("data is NULL but nbytes is " + std::to_string(nbytes));
    static const uint8_t kEmpty = 0;
    const uint8_t* bytes = data ? static_cast<const uint8_t*>(data) : &kEmpty;
    m->model->set_weights_bytes(bytes, nbytes, name ? name : "<memory>");
  });
}

grp_error* grp_model_set_random_weights(grp_model* m, uint64_t seed) {
  return guard([&] {
    require(m, "model");
    m->model->set_random_weights(seed);
  });
}

void grp_model_destroy(grp_model* m) { delete m; }

size_t grp_model_num_entries(const grp_model* m) { return m ? m->entries.size() : 0; }

const char* grp_model_entry_name(const grp_model* m, size_t i) {
  return m && i < m->entries.size() ? m->entries[i].c_str() : nullptr;
}

size_t grp_model_num_weights(const grp_model* m) { return m ? m->weights.size() : 0; }

const char* grp_model_weight_name(const grp_model* m, size_t i) {
  return m && i < m->weights.size() ? m->weights[i].name.c_str() : nullptr;
}

grp_error* grp_model_weight_info(const grp_model* m, size_t i, grp_dtype* dtype, const int64_t** shape, size_t* rank) {
  return guard([&] {
    require(m, "model");
    if (i >= m->weights.size())
      invalid("weight index " + std::to_string(i) + " is out of range (the model declares " +
              std::to_string(m->weights.size()) + ")");
    if (dtype) *dtype = from_dtype(m->weights[i].dtype);
    if (shape) *shape = m->weight_shapes[i].data();
    if (rank) *rank = m->weight_shapes[i].size();
  });
}

int grp_model_has_weights(const grp_model* m) { return m && m->model->has_weights() ? 1 : 0; }

grp_error* grp_model_ir_text(const grp_model* m, const char* entry, char** out) {
  return guard([&] {
    require(m, "model");
    require(out, "out");
    std::string text;
    if (entry == nullptr) {
      text = ir::print_module(m->model->module());
    } else {
      const ir::Function* f = m->model->module().find(entry);
      if (!f) {
        std::string best = closest_name(entry, m->entries), list;
        for (const auto& n : m->entries) list += (list.empty() ? "" : ", ") + n;
        invalid(std::string("no entry point '") + entry + "'" +
                (best.empty() ? "" : " (did you mean '" + best + "'?)") + "; entries: " + (list.empty() ? "(none)" : list));
      }
      text = ir::print_function(*f);
    }
    *out = dup_string(text);
  });
}

}  // extern "C"
