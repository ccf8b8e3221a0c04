// The executors' own small kernels, beside the generated ones: predicated copies, and the
// kernels that drive conditional WHILE nodes of CUDA graphs (docs/execution.md). One NVRTC module
// per device, built through the kernel cache like every generated kernel.
#pragma once
#include <cuda.h>

#include <string>

#include "jit/cuda_driver.h"

namespace grape::cuda {

struct ControlKernels {
  jit::Module module;
  // grape_copy(unsigned char* dst, const unsigned char* src, unsigned long long bytes,
  //            const unsigned char* pred): copies when pred is null or *pred != 0.
  CUfunction copy = nullptr;
  // grape_loop_enter(handle, const unsigned char* cond, unsigned long long* trips, long long max):
  // zeroes the trip counter and sets the WHILE node's handle to (*cond && max != 0).
  CUfunction loop_enter = nullptr;
  // grape_loop_next(handle, cond, trips, max, unsigned int* capped): the last node of a WHILE
  // body; counts the trip and sets the handle to (*cond && trips < max); when a loop without a
  // bound (max < 0 encodes the run-time cap as -cap) reaches its cap it sets *capped and stops.
  CUfunction loop_next = nullptr;
  // grape_commit_gate(handle, const unsigned int* capped, unsigned int loops, unsigned int stride):
  // sets an IF node's handle to 1 unless a loop reached its cap (capped[i * stride] != 0 for some
  // i < loops), so that a run stopped by the cap skips the steps that write the states.
  CUfunction commit_gate = nullptr;
  // grape_if_gate(handle, const unsigned char* pred): sets an IF node's handle to (*pred != 0), for
  // a predicated region of the plan run as a conditional node (scheduler::PredicatedRegion).
  CUfunction if_gate = nullptr;
};

// NVRTC source of the module (tests compile it without a GPU).
std::string control_kernels_source();

ControlKernels load_control_kernels(const jit::Device& device);

}  // namespace grape::cuda
