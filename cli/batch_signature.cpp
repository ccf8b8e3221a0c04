#include "cli/batch_signature.h"

#include <cctype>

#include "cli/api.h"

namespace grape::cli {
namespace {

// The identifiers of a dim expression ("S+1" -> {"S"}).
std::vector<std::string> symbols(const std::string& expr) {
  std::vector<std::string> out;
  for (size_t i = 0; i < expr.size();) {
    auto c = static_cast<unsigned char>(expr[i]);
    if (std::isalpha(c) || c == '_') {
      size_t j = i;
      while (j < expr.size() && (std::isalnum(static_cast<unsigned char>(expr[j])) || expr[j] == '_')) ++j;
      out.push_back(expr.substr(i, j - i));
      i = j;
    } else {
      ++i;
    }
  }
  return out;
}

template <class Info>
ParamInfo read_param(grp_session* s, size_t i, const char* name, Info info) {
  ParamInfo p;
  p.name = name ? name : "";
  size_t rank = 0;
  const int64_t* dims = nullptr;
  const char* const* exprs = nullptr;
  check(info(s, i, &p.dtype, &rank, &dims, &exprs));
  p.dims.assign(dims, dims + rank);
  for (size_t k = 0; k < rank; ++k) p.exprs.emplace_back(exprs[k]);
  return p;
}

// Whether X occurs in any dim of p other than a leading dim that is exactly X.
bool used_elsewhere(const ParamInfo& p, const std::string& x) {
  for (size_t k = 0; k < p.exprs.size(); ++k) {
    if (k == 0 && p.exprs[0] == x) continue;
    for (const auto& sym : symbols(p.exprs[k]))
      if (sym == x) return true;
  }
  return false;
}

}  // namespace

int Signature::input_index(const std::string& name) const {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].name == name) return static_cast<int>(i);
  return -1;
}

Signature read_signature(grp_session* s) {
  Signature sig;
  for (size_t i = 0; i < grp_session_num_inputs(s); ++i)
    sig.inputs.push_back(read_param(s, i, grp_session_input_name(s, i), grp_session_input_info));
  for (size_t i = 0; i < grp_session_num_outputs(s); ++i)
    sig.outputs.push_back(read_param(s, i, grp_session_output_name(s, i), grp_session_output_info));
  sig.stateful = grp_session_num_states(s) > 0;

  if (sig.outputs.empty()) {
    sig.why_not = "the entry returns nothing";
    return sig;
  }
  const ParamInfo& first = sig.outputs[0];
  if (first.dims.empty() || first.dims[0] >= 0) {
    sig.why_not = "output " + first.name + " has no symbolic leading dim";
    return sig;
  }
  std::string x = first.exprs[0];
  if (symbols(x) != std::vector<std::string>{x}) {
    sig.why_not = "output " + first.name + " leads with the expression '" + x + "', not a plain symbol";
    return sig;
  }
  for (const auto& o : sig.outputs) {
    if (o.exprs.empty() || o.exprs[0] != x) {
      sig.why_not = "output " + o.name + " does not lead with " + x;
      return sig;
    }
    if (used_elsewhere(o, x)) {
      sig.why_not = "output " + o.name + " uses " + x + " in another dim";
      return sig;
    }
  }
  for (const auto& p : sig.inputs) {
    if (used_elsewhere(p, x)) {
      sig.why_not = "input " + p.name + " uses " + x + " in another dim";
      return sig;
    }
  }
  bool any = false;
  for (auto& p : sig.inputs) {
    p.stacked = !p.exprs.empty() && p.exprs[0] == x;
    any = any || p.stacked;
  }
  if (!any) {
    sig.why_not = "no input leads with " + x;
    return sig;
  }
  sig.batch_dim = x;
  return sig;
}

}  // namespace grape::cli
