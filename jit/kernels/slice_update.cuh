// slice_update: x with a (strided, possibly dynamically placed) slice replaced by a value, the
// function of runtime/cpu/shape.cpp slice_update. A dynamic start wraps once and is clamped so the
// slice fits (grape_dyn_start, in Ops::starts). In place, a position is tested against x's extent
// where the shapes do not show that it fits, and not written when outside (the CPU rejects such a
// slice).
//
// grape_slice_update_in_place: out is x's memory (the group reads x nowhere else), work item gi
// is the region's element gi. Its value is computed before it is stored, so a value that reads
// x's own region (ir/passes/narrow_updates.h writes the old slice back where a predicate is
// false) sees the old element: each work item reads only the element it writes.
//
// grape_slice_update_copy: out is another buffer, work item gi is out's element gi: the value's
// element inside the region, x's elsewhere (the writes are disjoint).
//
// The glue's entry point computes the starts once (Ops::starts) and loops over the work items.
//
// Ops (jit/emit_kernels.cpp, slice_update()):
//   struct Starts; static Starts starts(p)     the dynamic starts, resolved
//   static long long n(p)                      the work items
//   struct At; static At at(p, s, gi)          work item gi's indices (the region's; a copy's
//                                              out index too)
//   static bool inside(p, s, const At&)        in the region (copy), in x (in place)
//   static T value(p, const At&)               the value's element (fused)
//   static T x(p, const At&)                   x's element (copy only)
//   static void store(p, s, const At&, T v)    out's element
#ifndef GRAPE_KERNELS_SLICE_UPDATE_CUH
#define GRAPE_KERNELS_SLICE_UPDATE_CUH

template <class Ops>
__device__ void grape_slice_update_in_place(const KParams* p, const typename Ops::Starts& s, long long gi) {
  const typename Ops::At a = Ops::at(p, s, gi);
  const auto v = Ops::value(p, a);
  if (Ops::inside(p, s, a)) Ops::store(p, s, a, v);
}

template <class Ops>
__device__ void grape_slice_update_copy(const KParams* p, const typename Ops::Starts& s, long long gi) {
  const typename Ops::At a = Ops::at(p, s, gi);
  if (Ops::inside(p, s, a))
    Ops::store(p, s, a, Ops::value(p, a));
  else
    Ops::store(p, s, a, Ops::x(p, a));
}

#endif  // GRAPE_KERNELS_SLICE_UPDATE_CUH
