#include "ir/ir.h"

namespace grape::ir {

std::string Type::str() const { return std::string(dtype_name(dtype)) + "[" + dims_to_string(shape) + "]"; }

ValueId Function::new_value(Type type, std::string hint) {
  values.push_back(ValueInfo{std::move(type), std::move(hint)});
  return static_cast<ValueId>(values.size() - 1);
}

const Function* Module::find(const std::string& n) const {
  for (const auto& f : functions)
    if (f.name == n) return &f;
  return nullptr;
}

}  // namespace grape::ir
