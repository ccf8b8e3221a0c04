// The decoder plan of the mono executor (docs/execution.md, "The decoder plan"): an entry that is
// exactly a GPT-2-style decode step (scheduler::match_decoder_step) at GPT-2 small's widths runs
// as ONE persistent kernel with two cluster-partitioned stages a layer (jit/kernels/decoder_step.cuh)
// instead of a body per op. Its weights are laid out per block once, at its first accepted run (a
// second copy of every layer's weights and of lm_head's in device memory); the kernel is built per
// bound row count at the first run with it.
//
// The position is an entry parameter (decode_step) or a state the entry advances by one (decode,
// beam_decode: the plan reads it back before the run, 4 bytes, and sets it to p + 1 after the
// kernel). A run takes the plan only when it fits what the kernel was written for: 1..8 rows, the
// token ids (and a position parameter) as host tensors, every id in [0, V) and 0 <= p < min(T, P)
// (the program's clamping of out-of-range positions and its errors for out-of-range ids stay with
// the general path). Otherwise — and on devices where 12 clusters of 8 blocks do not fit — the
// mono executor runs its general persistent kernel; `why` says which.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/tensor.h"
#include "scheduler/decoder_pattern.h"

namespace grape::cuda {

class DeviceProgram;

class DecoderPlan {
 public:
  // The plan for `p`'s entry, or null with the reason in `why` (not a decode step, widths other
  // than GPT-2 small's, a device without thread-block clusters, GRAPE_MONO_DECODER=0).
  static std::unique_ptr<DecoderPlan> create(DeviceProgram& p, std::string& why);
  ~DecoderPlan();
  DecoderPlan(const DecoderPlan&) = delete;
  DecoderPlan& operator=(const DecoderPlan&) = delete;

  // Whether a run with these inputs can take the plan (see above); `why` if not. The first
  // accepted run of a row count builds its kernel; the very first also lays out the weights.
  bool accepts(const std::vector<Tensor>& inputs, std::string& why);
  // Enqueues the run on the program's stream, after DeviceProgram::bind and upload_inputs: the
  // entry's output and its caches are written as the general path writes them.
  void launch();
  // The last launch's pace (ns per 8 KB weight copy): GRAPE_DECODER_PACE, else tuned per row
  // count and device at the first run of each (the tuning cache keeps it), else with GRAPE_TUNE=0
  // the default, 250.
  unsigned pace() const;
  // Device memory the plan holds: the weights' second copy in the blocks' layouts, its sums,
  // counters and item tables.
  size_t device_bytes() const;
  // Whether the position is a state (the `decode` form): every accepted run reads it back, one
  // host synchronisation.
  bool position_is_state() const;

 private:
  struct Impl;
  explicit DecoderPlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace grape::cuda
