// Deterministic random weights, for running models without trained weights (tests, benchmarks).
//
// Every element is a pure function of (seed, tensor name, flat element index): identical on every
// platform and compiler (only integer arithmetic and one exactly-specified double multiplication
// per element), and independent of the order in which tensors are declared or created.
//
//   key      = splitmix64(splitmix64(seed) ^ stable_hash(name))
//   bits(i)  = splitmix64(key + (i + 1) * 0x9E3779B97F4A7C15)     (the i-th splitmix64 output)
//
// Values by dtype:
//   float (f32/f16/bf16): an approximately normal value with mean 0 and standard deviation 0.02
//     (GPT-2's initialisation scale): the sum of four 16-bit uniform integers, centred and scaled
//     (Irwin-Hall; bounded to about +-3.5 std, so never extreme). Exception: 1-D tensors whose name
//     ends in "weight" (normalisation gains such as "ln_1.weight") are 1 + that noise. The f32
//     value is rounded to f16/bf16 with base/half.h (round to nearest even).
//   i32/i64: uniform in [0, 16).
//   bool: true or false with probability 1/2.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/tensor.h"

namespace grape {

// 64-bit FNV-1a over the bytes of s.
uint64_t stable_hash(std::string_view s);
// The splitmix64 finaliser (a bijective mix of 64 bits).
uint64_t splitmix64(uint64_t x);

// The standard deviation of random float values.
inline constexpr double kRandomWeightStd = 0.02;

Tensor random_tensor(DType dtype, const Shape& shape, uint64_t seed, const std::string& name);

}  // namespace grape
