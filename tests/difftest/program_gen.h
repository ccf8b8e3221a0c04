// A seeded random generator of valid .grp programs rich in control flow, for differential
// testing of the predication rewriter against the tree-walking interpreter.
//
// Every program has an entry `main` with one of a few fixed signatures (see Signature), nested
// if / else if / else, static and device `for` loops, `while ... max K` loops with counters,
// break and continue under ifs at various depths, vars declared at various scopes and carried
// through loops, slice writes with static and dynamic indices, state read and written under
// conditions, and small helper functions. Values stay finite and exact-friendly: floats are small
// multiples of 0.5, every assignment inside a loop is clamped, loops have bounded trip counts.
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "runtime/tensor.h"

namespace grape::difftest {

struct InputSpec {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
};

struct GeneratedProgram {
  uint64_t seed = 0;
  std::string source;
  std::vector<InputSpec> inputs;         // the parameters of main, in order
  std::vector<std::string> state_names;  // the states it declares
};

GeneratedProgram generate_program(uint64_t seed);

// Random exact-friendly inputs: floats in [-4, 4] in steps of 0.5, i32 scalars in [-1, 6]
// (loop bounds), bools at random.
std::vector<std::pair<std::string, Tensor>> random_inputs(const std::vector<InputSpec>& specs, std::mt19937_64& rng);

}  // namespace grape::difftest
