// Grammar-aware mutations of .grp programs for the program fuzzer (fuzz_program.cpp): the text is
// cut into tokens and lines, and mutated the way programs are really written wrong — a name
// replaced by another name, keyword, builtin or dtype, a number replaced by a boundary value, an
// operator or bracket changed or dropped, a statement duplicated, deleted, moved, wrapped in an
// if / for / while, or a break, continue, return, const or state inserted — so that most results
// are well-formed or nearly so and reach the checker, the lowering and the executor, not only the
// parser. Now and then a whole program comes from the differential tests' generator
// (tests/difftest/program_gen.h), rich in control flow.
#pragma once
#include <cstdint>
#include <string>

namespace grape::fuzz {

// One to three mutations of `program`, chosen by `seed` (deterministic).
std::string mutate_program(const std::string& program, uint64_t seed);

// Lines of `a` up to a random point, then lines of `b` from a random point.
std::string cross_programs(const std::string& a, const std::string& b, uint64_t seed);

}  // namespace grape::fuzz
