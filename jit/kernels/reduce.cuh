// Reductions of a row (the input's reduced axes, flattened, for one index of its kept axes) to
// one value: sum, mean, prod, max, min, all, any (grape_reduce_row) and argmax, argmin
// (grape_arg_reduce_row), the same functions as runtime/cpu/reduce.cpp.
//
// One block per row (scheduler/launch.cpp, LaunchRule::Rows; grape_reduce_rows and
// grape_arg_reduce_rows loop over the rows), or on sm_90 one thread-block cluster of `nc` blocks
// per row where a few long rows would leave the GPU idle (LaunchRule::cluster_rows: generate's
// argmax over 5 x 50257 logits), block `rank` taking elements rank * blockDim.x + i + nc *
// blockDim.x * t: each thread combines its elements in order, eight loads in flight at a time
// (grape_span_pass, prelude.cuh), then the block combines the threads' values (warp shuffles, then
// one value per warp through shared memory), the cluster the blocks' in rank order
// (grape_cluster_combine, cluster.cuh), and thread 0 of rank 0 stores the result. Rows of any
// length, known at compile time or not.
//
// Ops of grape_reduce_row (jit/emit_kernels.cpp, reduce()):
//   using Acc          float (float inputs), long long (integers), int (all, any)
//   using Combine      GrapeAdd, GrapeMul, GrapeMax, GrapeMin, GrapeAnd, GrapeOr (prelude.cuh)
//   static Acc init()  the combine's identity
//   static long long rows(p), cnt(p)
//   struct Row; static Row row(p, row_index)   the row's indices, computed once per row
//   static Acc x(p, const Row&, j)             the (fused) input
//   static void out(p, const Row&, Acc acc)    mean's division, the rounding to the output type,
//                                              the fused epilogue and the store (thread 0)
//
// Ops of grape_arg_reduce_row (arg_reduce()):
//   using T                float or long long
//   static constexpr bool kMax   argmax (else argmin)
//   rows, cnt, Row, row, x as above (x returns T)
//   static void out(p, const Row&, long long i)   the index (0 for an empty row)
#ifndef GRAPE_KERNELS_REDUCE_CUH
#define GRAPE_KERNELS_REDUCE_CUH

template <class Ops>
__device__ void grape_reduce_row(const KParams* p, long long row_index, unsigned rank = 0, unsigned nc = 1) {
  using Acc = typename Ops::Acc;
  __shared__ Acc sm[32];
  const long long cnt = Ops::cnt(p);
  const typename Ops::Row row = Ops::row(p, row_index);
  const typename Ops::Combine combine{};
  Acc acc = Ops::init();
  grape_span_pass(
      (long long)rank * blockDim.x + threadIdx.x, (long long)nc * blockDim.x, cnt,
      [&](long long j) { return Ops::x(p, row, j); }, [&](long long, Acc v) { acc = combine(acc, v); });
  acc = grape_block_reduce(acc, combine, sm);
  if (nc > 1) acc = grape_cluster_combine(acc, combine);
  if (threadIdx.x == 0 && rank == 0) Ops::out(p, row, acc);
}

// The first index of the extreme (NaN counts as the extreme; grape_arg_first): each thread's
// best (value, index), then the block's (grape_block_best).
template <class T>
struct GrapeArgBest {
  T v;
  long long i;  // -1: none yet
};
template <class Ops>
__device__ void grape_arg_reduce_row(const KParams* p, long long row_index, unsigned rank = 0, unsigned nc = 1) {
  using T = typename Ops::T;
  __shared__ T smv[32];
  __shared__ long long smi[32];
  auto before = [](T a, long long ia, T b, long long ib) { return grape_arg_first(a, ia, b, ib, Ops::kMax); };
  const long long cnt = Ops::cnt(p);
  const typename Ops::Row row = Ops::row(p, row_index);
  T bv = 0;
  long long bi = -1;
  grape_span_pass(
      (long long)rank * blockDim.x + threadIdx.x, (long long)nc * blockDim.x, cnt,
      [&](long long j) { return Ops::x(p, row, j); },
      [&](long long j, T v) {
        if (before(v, j, bv, bi)) {
          bv = v;
          bi = j;
        }
      });
  grape_block_best(bv, bi, before, smv, smi);
  if (nc > 1) {
    const GrapeArgBest<T> best = grape_cluster_combine(GrapeArgBest<T>{bv, bi}, [&](GrapeArgBest<T> a, GrapeArgBest<T> b) {
      return before(b.v, b.i, a.v, a.i) ? b : a;
    });
    bi = best.i;
  }
  if (threadIdx.x == 0 && rank == 0) Ops::out(p, row, bi < 0 ? 0 : bi);
}

// The kernels' rows (grape_cluster_rows, cluster.cuh).
template <class Ops>
__device__ void grape_reduce_rows(const KParams* p) {
  grape_cluster_rows(Ops::rows(p), [&](long long row, unsigned rank, unsigned nc) { grape_reduce_row<Ops>(p, row, rank, nc); });
}
template <class Ops>
__device__ void grape_arg_reduce_rows(const KParams* p) {
  grape_cluster_rows(Ops::rows(p),
                     [&](long long row, unsigned rank, unsigned nc) { grape_arg_reduce_row<Ops>(p, row, rank, nc); });
}

#endif  // GRAPE_KERNELS_REDUCE_CUH
