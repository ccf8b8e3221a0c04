// How to size the launch of one generated kernel: filled in by code generation (jit/emit_*.cpp),
// evaluated by scheduler::launch_dims (scheduler/launch.h) for the current symbol bindings. Here,
// not in jit/, so that the scheduler includes nothing from jit/ (jit/ depends on the scheduler).
#pragma once
#include <vector>

#include "ir/dim.h"

namespace grape::scheduler {

// How to size a launch. All sizes are symbolic dims: evaluate them with the current bindings
// (scheduler::launch_dims does it). `threads` is the block size the kernel was written for.
struct LaunchRule {
  enum Kind {
    Elementwise,    // grid-stride over `elements` (product of `items`)
    Rows,           // rows_per_block rows per block, grid-stride over rows (product of `items`)
    Tiles,          // matrix products: `items` = {batch, M, N}; M <= gemv_max_m uses a GEMV path
                    // with gemv_cols output columns per block, else tile_m x tile_n tiles
    Single,         // one block
    MatrixProduct,  // the templates of jit/kernels/gemv.cuh and gemm_mma.cuh: `items` = {R, N, K};
                    // scheduler::launch_dims picks the path, K splits, tile configuration, dynamic
                    // shared memory and scratch size
    Attention,      // jit/kernels/attention.cuh: `items` = {batch, S, KV, DK, DV}; launch_dims
                    // picks the query rows per block and whether scores stay in shared memory
                    // (attention_mma.cuh when attention_mma: 64 query rows per block)
  } kind = Elementwise;
  int threads = 256;
  int work = -1;               // the output buffer the launch covers (informational)
  std::vector<ir::Dim> items;  // see Kind
  int rows_per_block = 1;      // Rows: 4 for jit/kernels/row_norm.cuh (a warp per row)
  // Rows, jit/kernels/topk.cuh on float rows: k (0 for other kernels) and the row length. A long
  // row is split over several blocks (LaunchDims::splits per row), which meet in the scratch area.
  int topk_k = 0;
  ir::Dim row_len;
  // Rows, row_norm.cuh's block kernel on rows of row_len: on a device with thread-block clusters
  // (sm_90) a few long rows are each spread over the blocks of one cluster (LaunchDims::cluster).
  bool cluster_rows = false;
  int gemv_max_m = 16;
  int gemv_cols = 32;
  int tile_m = 64;
  int tile_n = 64;
  bool weight_kn = false;  // MatrixProduct: W is [K][N] (else [N][K])
  // MatrixProduct with weight_kn: the GEMV path is jit/kernels/gemv_mma.cuh (64-column tiles on the
  // tensor cores; its own shared-memory layout) instead of gemv.cuh's grape_gemv_kn.
  bool gemv_mma = false;
  // MatrixProduct: products of at most gemv_max_m rows run on the tensor cores (gemm_mma.cuh,
  // 16 x 128 tiles) instead of gemv.cuh (scheduler::gemv_on_tensor_cores says when).
  bool gemv_tensor_cores = false;
  // MatrixProduct: large products may take the 128 x 128 tile entry point (LaunchDims::wide);
  // false when the executor could not build it (then 64 x 64 tiles).
  bool allow_wide = true;
  // MatrixProduct: both operands K-major with 16-byte staging, so on a Hopper device the wide
  // entry point runs jit/kernels/gemm_wgmma.cuh (more shared memory: LaunchDims says how much).
  bool wgmma = false;
  // Attention: the tensor-core kernel (jit/kernels/attention_mma.cuh) for many query rows.
  bool attention_mma = false;
  // MatrixProduct: the kernel buffer (KParams::buf index) holding W when W is a weight of the
  // program (read-only for the session), else -1: the executors have it prefetched into L2 by the
  // kernel before (scheduler/prefetch.h).
  int weight_buffer = -1;

  // A matrix product whose row count is a runtime dim: it has row-count variants (jit::
  // rows_variant_source), built by the executors at a bind with few rows and by bundles on request.
  bool has_row_variants() const { return kind == MatrixProduct && !items.empty() && !items[0].is_const(); }
};

}  // namespace grape::scheduler
