// Inclusive scan of a row (cumsum over one axis), the function of runtime/cpu/reduce.cpp cumsum:
// thread 0 of a block per row walks the row serially, in the CPU's order (which accumulates
// floats in double; here in float, rounded to the output type at each element).
//
// Ops (jit/emit_kernels.cpp, cumsum()):
//   using Acc       float (float inputs) or long long (integers)
//   static long long rows(p), cnt(p)
//   struct Row; static Row row(p, row_index)        the row's indices, computed once per row
//   static Acc x(p, const Row&, j)                  the (fused) input
//   static void out(p, const Row&, j, Acc sum)      the rounding, fused epilogue and store
#ifndef GRAPE_KERNELS_SCAN_CUH
#define GRAPE_KERNELS_SCAN_CUH

template <class Ops>
__device__ void grape_cumsum_row(const KParams* p, long long row_index) {
  const long long cnt = Ops::cnt(p);
  const typename Ops::Row row = Ops::row(p, row_index);
  if (threadIdx.x != 0) return;
  typename Ops::Acc acc = 0;
  for (long long j = 0; j < cnt; ++j) {
    acc = grape_plus(acc, Ops::x(p, row, j));
    Ops::out(p, row, j, acc);
  }
}

#endif  // GRAPE_KERNELS_SCAN_CUH
