#include "runtime/cuda/decoder_plan.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "base/error.h"
#include "base/half.h"
#include "jit/cuda_driver.h"
#include "jit/decoder_abi.h"
#include "jit/hash.h"
#include "jit/kernel_source.h"
#include "runtime/cuda/autotune.h"
#include "runtime/cuda/decoder_items.h"
#include "runtime/cuda/device_program.h"
#include "runtime/cuda/trace_file.h"
#include "runtime/cuda/tuning_cache.h"
#include "scheduler/launch.h"

namespace grape::cuda {

namespace {

using half_bits = uint16_t;  // f16 weights are only moved here, never computed with

// Stage B clusters and c_fc columns a block: 3072 over 16 clusters of 8 (24 columns) where 16
// fit, else over the 12 that stage A needs (32 columns).
constexpr int kMaxClusters = 16;
// The pace of the producers' weight copies (ns per 8 KB copy) and the lm_head items put into L2
// during the last layer steps: the best of scripts/probes/decode_two_stage.cu's measurements on
// H200s (runs 245-250). The pace is tuned per row count and device at the first run (the
// candidates below, the default first; autotune.h's rules and tuning cache);
// GRAPE_DECODER_PACE=NS sets it instead (0: unpaced).
constexpr int kDefaultPaceNs = 250, kLmItemsInL2 = 4;
// lm_head's items each block lists, in rounds over the grid (those its ring and L2 take during the
// last layers; lm_l2 prefetches at most the listed ones); the rest are claimed at run time
// (GRAPE_DECODER_LM_CLAIM). 3 rounds measured 1.1-1.4 us faster than 4 and no slower than 2 or 6
// (runs 299-300, H200s); claims after 4 rounds 1.2 us faster than none (run 298).
constexpr int kLmListedRounds = 3;
constexpr unsigned kPaceCandidates[] = {kDefaultPaceNs, 0, 150, 400};
// The position the pace is measured at: a mid-length context (the issue-7 benchmark's).
constexpr int64_t kTunePosition = 128;

int64_t const_dim(const ir::Function& f, ir::ValueId v, size_t axis) {
  const ir::Type& t = f.type(v);
  if (axis >= t.rank() || !t.shape[axis].is_const()) return -1;
  return t.shape[axis].const_value();
}

}  // namespace

struct DecoderPlan::Impl {
  DeviceProgram& p;
  scheduler::DecoderStepMatch m;
  int tokens_input = -1, position_input = -1;  // position_input -1: the position is a state
  int64_t positions = 0;                       // P, the position table's rows
  // Made at the first accepted run (the clusters that fit are known once a kernel is built).
  std::string unusable;  // non-empty: the device cannot run the plan; every run goes general
  bool laid_out = false;
  int b_clusters = 0, fc_cols = 0, grid = 0, step_blocks = 0, max_items = 0;
  std::vector<jit::DeviceBuffer> blobs;  // per layer: A, B; then lm_head's, ln_f's
  jit::DeviceBuffer eps, counters, sums, items, nitems;
  // GRAPE_DECODER_LM_CLAIM=F (read once, at the first run: it decides the kernel's source): each
  // block's list holds lm_head's first F rounds of items (the ones its ring and L2 take during the
  // last layers); the rest go to the blocks whose producers claim them first (-1: every item in a
  // list).
  int lm_claim_rounds = -1;
  // GRAPE_DECODER_PREFETCH_NEXT=1 (read at the first run): jit::DecoderSwitches::prefetch_next.
  bool prefetch_next = false;
  // GRAPE_DECODER_ONE_POLLER=1 (read at the first run): jit::DecoderSwitches::one_poller.
  bool one_poller = false;
  // GRAPE_DECODER_KV_EVICT_FIRST=1 (read at the first run): jit::DecoderSwitches::kv_evict_first.
  bool kv_evict_first = false;
  // GRAPE_DECODER_LM_LATE=P (read at the first run; with claims only): jit::DecoderSwitches::lm_late.
  int lm_late = 0;
  jit::DecoderSwitches switches() const {
    jit::DecoderSwitches s;
    s.lm_claim = lm_claim_rounds >= 0;
    s.prefetch_next = prefetch_next;
    s.one_poller = one_poller;
    s.kv_evict_first = kv_evict_first;
    s.lm_late = lm_late;
    return s;
  }
  // The two claim counters (jit::DecoderParams::lm_claims) and the first item in no block's list
  // (-1: every item is in a list).
  jit::DeviceBuffer lm_claims;
  int lm_claim_from = -1;
  int items_rows = 0;
  // [grid][max_items]: each item's step, -1 past a block's items; with claimed items, the slots
  // past a block's list are lm_head's (stamped only where the block took one).
  std::vector<int> item_steps;
  std::vector<int> listed;      // [grid]: the items in each block's list
  jit::DeviceBuffer trace;      // GRAPE_MONO_TRACE: the kernel's stamps
  unsigned epoch = 0;
  struct Built {
    jit::Module module;
    CUfunction function = nullptr;
    unsigned shared = 0, ring = 0;
  };
  std::map<int64_t, Built> built;     // by rows
  int64_t rows = 0;                   // of the last accepted run
  int32_t position = 0;               // of the last accepted run
  int32_t tokens[jit::kDecMaxRows]{};  // of the last accepted run
  std::map<int64_t, unsigned> paces;  // the tuned pace by rows
  unsigned last_pace = 0;             // of the last launch

  Impl(DeviceProgram& program, scheduler::DecoderStepMatch match) : p(program), m(std::move(match)) {}

  const ir::Function& f() const { return p.function(); }
  CUdeviceptr value_address(ir::ValueId v) const { return p.address(p.plan().storage(v)); }
  CUdeviceptr state_address(const std::string& name) const {
    const auto& st = p.plan().storages;
    for (size_t i = 0; i < st.size(); ++i)
      if (st[i].kind == scheduler::StorageKind::State && st[i].name == name)
        return p.address(static_cast<int>(i));
    throw Error(ErrorCode::Internal, "the decoder plan: no storage for state '" + name + "'");
  }
  std::string label() const { return "the decoder kernel of " + f().name; }
  // The `decode` form's position: the state's current value.
  int64_t read_position() const {
    int32_t at = 0;
    jit::check(jit::driver().cuMemcpyDtoHAsync(&at, value_address(m.position), sizeof at, p.stream()),
               "cuMemcpyDtoHAsync", label() + " (its position state)");
    p.synchronize(label() + " (its position state)");
    return at;
  }

  Built& kernel_for(int64_t r) {
    auto it = built.find(r);
    if (it != built.end()) return it->second;
    const int T = static_cast<int>(m.cache_len);
    const unsigned ring = jit::decoder_ring_bytes(static_cast<int>(r), fc_cols);
    if (ring == 0) throw Error(ErrorCode::Internal, label() + ": no room for the weight ring");
    Built b;
    b.module =
        p.build_module(jit::decoder_kernel_source(static_cast<int>(r), static_cast<int>(m.layers.size()), T,
                                                  m.vocab, fc_cols, ring, switches()),
                       label(), jit::kDecoderArch);
    b.function = b.module.function(jit::kDecoderSymbol);
    b.ring = ring;
    b.shared = jit::decoder_shared(static_cast<int>(r), ring).total;
    jit::check(jit::driver().cuFuncSetAttribute(b.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                static_cast<int>(b.shared)),
               "cuFuncSetAttribute", label());
    return built.emplace(r, std::move(b)).first->second;
  }

  // How many clusters of 8 of `b` fit at once.
  int clusters_that_fit(const Built& b) const {
    if (!jit::driver().cuOccupancyMaxActiveClusters) return 0;
    CUlaunchConfig config{};
    config.gridDimX = jit::kDecCluster * kMaxClusters;
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = jit::kDecLaunchThreads;
    config.blockDimY = config.blockDimZ = 1;
    config.sharedMemBytes = b.shared;
    config.hStream = p.stream();
    int n = 0;
    jit::check(jit::driver().cuOccupancyMaxActiveClusters(&n, b.function, &config),
               "cuOccupancyMaxActiveClusters", label());
    return n;
  }

  std::vector<half_bits> download(ir::ValueId v, size_t elements) const {
    std::vector<half_bits> host(elements);
    jit::check(jit::driver().cuMemcpyDtoHAsync(host.data(), value_address(v), elements * 2, p.stream()),
               "cuMemcpyDtoHAsync", label() + " (its weights)");
    p.synchronize(label() + " (its weights)");
    return host;
  }
  jit::DeviceBuffer upload(const std::vector<half_bits>& host, const char* what) const {
    jit::DeviceBuffer b(p.device(), host.size() * 2, what);
    b.copy_from_host(host.data(), host.size() * 2, p.stream());
    p.synchronize(label() + " (its weights)");
    return b;
  }

  // Every layer's weights in the blocks' item layouts (jit/decoder_abi.h), lm_head's tiles, ln_f.
  void lay_out_weights() {
    constexpr int E = jit::kDecEmbed, F = jit::kDecFfn, HD = jit::kDecHeadDim, NH = jit::kDecHeads,
                  CL = jit::kDecCluster, QC = jit::kDecQkvCols, PC = jit::kDecProjCols;
    const int C = fc_cols, KC = CL * C, b_blocks = CL * b_clusters;
    const jit::DecoderBLayout BL = jit::decoder_b_layout(C);
    blobs.clear();
    for (const scheduler::DecoderLayerMatch& l : m.layers) {
      const auto wqkv = download(l.qkv_weight, size_t{E} * 3 * E), bqkv = download(l.qkv_bias, 3 * E),
                 wproj = download(l.proj_weight, size_t{E} * E), bproj = download(l.proj_bias, E),
                 g1 = download(l.ln1_scale, E), b1 = download(l.ln1_shift, E), g2 = download(l.ln2_scale, E),
                 b2 = download(l.ln2_shift, E), wfc = download(l.fc_weight, size_t{E} * F),
                 bfc = download(l.fc_bias, F), wmp = download(l.fc2_weight, size_t{F} * E),
                 bmp = download(l.fc2_bias, E);
      std::vector<half_bits> a(size_t{NH} * CL * jit::kDecABytes / 2);
      for (int h = 0; h < NH; ++h)
        for (int r = 0; r < CL; ++r) {
          half_bits* t = a.data() + (size_t{static_cast<unsigned>(h)} * CL + r) * jit::kDecABytes / 2;
          for (int j = 0; j < QC; ++j) {
            const int hc = r * QC + j, col = (hc / HD) * E + h * HD + hc % HD;
            for (int k = 0; k < E; ++k)
              t[jit::kDecAT / 2 + k * QC + j] = wqkv[size_t{static_cast<unsigned>(k)} * 3 * E + col];
            t[jit::kDecAB / 2 + j] = bqkv[col];
          }
          std::memcpy(t + jit::kDecAG / 2, g1.data(), E * 2);
          std::memcpy(t + jit::kDecAG / 2 + E, b1.data(), E * 2);
          for (int d = 0; d < HD; ++d)
            for (int n = 0; n < PC; ++n)
              t[jit::kDecAW / 2 + ((n / 8) * HD + d) * 8 + n % 8] =
                  wproj[size_t{static_cast<unsigned>(h * HD + d)} * E + r * PC + n];
          std::memcpy(t + jit::kDecAPB / 2, bproj.data(), E * 2);
        }
      blobs.push_back(upload(a, "the decoder plan's attention weights"));
      std::vector<half_bits> b(size_t{static_cast<unsigned>(b_blocks)} * BL.bytes / 2);
      for (int g = 0; g < b_blocks; ++g) {
        half_bits* t = b.data() + size_t{static_cast<unsigned>(g)} * BL.bytes / 2;
        for (int j = 0; j < C; ++j) {
          const int col = g * C + j;
          for (int k = 0; k < E; ++k)
            t[BL.t / 2 + jit::decoder_tile_at(k, j, C)] = wfc[size_t{static_cast<unsigned>(k)} * F + col];
          t[BL.b / 2 + j] = bfc[col];
        }
        std::memcpy(t + BL.g / 2, g2.data(), E * 2);
        std::memcpy(t + BL.g / 2 + E, b2.data(), E * 2);
        std::memcpy(t + BL.pb / 2, bmp.data(), E * 2);
        const int cl = g / CL, rk = g % CL;
        for (int nb = 0; nb < PC / 8; ++nb)
          for (int k = 0; k < KC; ++k)
            for (int e = 0; e < 8; ++e)
              t[BL.w2 / 2 + (size_t{static_cast<unsigned>(nb)} * KC + k) * 8 + e] =
                  wmp[size_t{static_cast<unsigned>(cl * KC + k)} * E + rk * PC + nb * 8 + e];
      }
      blobs.push_back(upload(b, "the decoder plan's MLP weights"));
    }
    const int64_t V = m.vocab, lm_items = (V + jit::kDecLmCols - 1) / jit::kDecLmCols;
    const auto w = download(m.head_weight, size_t(V) * E);
    std::vector<half_bits> lm(size_t(lm_items) * E * jit::kDecLmCols, 0);
    for (int64_t i = 0; i < lm_items; ++i)
      for (int j = 0; j < jit::kDecLmCols; ++j) {
        const int64_t n = i * jit::kDecLmCols + j;
        if (n >= V) continue;
        half_bits* t = lm.data() + size_t(i) * E * jit::kDecLmCols;
        for (int k = 0; k < E; ++k)
          t[jit::decoder_tile_at(k, j, jit::kDecLmCols)] =
              m.head_transposed ? w[size_t(n) * E + k] : w[size_t(k) * V + n];
      }
    blobs.push_back(upload(lm, "the decoder plan's lm_head tiles"));
    std::vector<half_bits> lnf = download(m.lnf_scale, E);
    const auto shift = download(m.lnf_shift, E);
    lnf.insert(lnf.end(), shift.begin(), shift.end());
    blobs.push_back(upload(lnf, "the decoder plan's ln_f"));

    std::vector<float> e;
    for (const scheduler::DecoderLayerMatch& l : m.layers) {
      e.push_back(static_cast<float>(l.ln1_eps));
      e.push_back(static_cast<float>(l.ln2_eps));
    }
    e.push_back(static_cast<float>(m.lnf_eps));
    eps = jit::DeviceBuffer(p.device(), e.size() * sizeof(float), "the decoder plan's epsilons");
    eps.copy_from_host(e.data(), e.size() * sizeof(float), p.stream());
    const size_t steps = 2 * m.layers.size();
    counters = jit::DeviceBuffer(p.device(), steps * sizeof(unsigned), "the decoder plan's counters");
    counters.fill_bytes(0, p.stream());
    lm_claims = jit::DeviceBuffer(p.device(), 2 * sizeof(unsigned), "the decoder plan's lm_head claims");
    lm_claims.fill_bytes(0, p.stream());
    epoch = 0;
    p.synchronize(label());
    laid_out = true;
  }

  // Each block's items for `r` rows: its layer steps (stage A, B), then its lm_head items.
  void make_items(int64_t r) {
    const int L = static_cast<int>(m.layers.size()), steps = 2 * L, CL = jit::kDecCluster;
    const int lm_items = static_cast<int>((m.vocab + jit::kDecLmCols - 1) / jit::kDecLmCols);
    const jit::DecoderBLayout BL = jit::decoder_b_layout(fc_cols);
    // GRAPE_DECODER_LM_EXTRA=N (read when the items are laid out): the lm_head-only blocks take N
    // more lm_head items than the layer blocks, and the remainder first (decoder_items.h); -1,
    // the default, splits them evenly over all blocks, the remainder to blocks 0, 1, ...
    const int claim_rounds = lm_claim_rounds;
    const int listed_lm = claim_rounds < 0 ? lm_items : std::min(lm_items, claim_rounds * grid);
    lm_claim_from = claim_rounds < 0 ? -1 : listed_lm;
    const std::vector<std::vector<int>> lm = decoder_lm_items(
        listed_lm, grid, step_blocks, scheduler::env_knob("GRAPE_DECODER_LM_EXTRA", -1, 16, -1));
    size_t most_lm = 0;
    for (const std::vector<int>& l : lm) most_lm = std::max(most_lm, l.size());
    // Room in the trace for a block's claimed items: twice an even share, and 8 more (a block that
    // takes more has its later items unstamped).
    const int claim_slots = claim_rounds < 0 ? 0 : 2 * ((lm_items - listed_lm + grid - 1) / grid) + 8;
    max_items = steps + static_cast<int>(most_lm) + claim_slots;
    std::vector<jit::DecoderItem> table(size_t(grid) * max_items);
    std::vector<int> count(grid, 0);
    for (int g = 0; g < grid; ++g) {
      const int cl = g / CL, rk = g % CL;
      auto add = [&](const jit::DecoderItem& it) { table[size_t(g) * max_items + count[g]++] = it; };
      for (int l = 0; l < L && g < step_blocks; ++l) {
        jit::DecoderItem a{};
        a.step = 2 * l;
        a.index = -1;
        if (cl < jit::kDecHeads) {
          a.src[0] =
              reinterpret_cast<const void*>(blobs[2 * l].ptr() + (size_t(cl) * CL + rk) * jit::kDecABytes);
          a.len[0] = a.bytes = jit::kDecABytes;
          a.pieces = 1;
          if (rk < r) a.index = rk;
        }
        add(a);
        jit::DecoderItem b{};
        b.step = 2 * l + 1;
        b.index = -1;
        b.src[0] = reinterpret_cast<const void*>(blobs[2 * l + 1].ptr() + size_t(g) * BL.bytes);
        b.len[0] = b.bytes = BL.bytes;
        b.pieces = 1;
        add(b);
      }
      bool first = true;
      for (int i : lm[g]) {
        jit::DecoderItem it{};
        it.step = steps;
        it.index = i;
        it.src[0] = reinterpret_cast<const void*>(blobs[2 * L].ptr() + size_t(i) * jit::kDecLmG);
        it.len[0] = it.bytes = jit::kDecLmG;
        it.pieces = 1;
        if (first) {  // ln_f's scale and shift after the block's first tile
          it.src[1] = reinterpret_cast<const void*>(blobs[2 * L + 1].ptr());
          it.len[1] = 2 * jit::kDecEmbed * 2;
          it.off[1] = jit::kDecLmG;
          it.pieces = 2;
          it.bytes += it.len[1];
        }
        first = false;
        add(it);
      }
    }
    items =
        jit::DeviceBuffer(p.device(), table.size() * sizeof(jit::DecoderItem), "the decoder plan's items");
    items.copy_from_host(table.data(), table.size() * sizeof(jit::DecoderItem), p.stream());
    item_steps.assign(table.size(), -1);
    for (int g = 0; g < grid; ++g)
      for (int n = 0; n < max_items; ++n)
        item_steps[size_t(g) * max_items + n] = n < count[g]       ? table[size_t(g) * max_items + n].step
                                                : claim_rounds < 0 ? -1
                                                                   : steps;
    listed = count;
    nitems = jit::DeviceBuffer(p.device(), count.size() * sizeof(int), "the decoder plan's item counts");
    nitems.copy_from_host(count.data(), count.size() * sizeof(int), p.stream());
    // Two sets of the steps' sums, zero (each launch zeroes the other set for the next).
    const size_t sum_bytes = 2 * size_t(steps) * size_t(r) * jit::kDecEmbed * sizeof(float);
    sums = jit::DeviceBuffer(p.device(), sum_bytes, "the decoder plan's sums");
    sums.fill_bytes(0, p.stream());
    p.synchronize(label());
    items_rows = static_cast<int>(r);
  }

  // The parameter block of a launch with pace `pace`; the caller sets epoch.
  jit::DecoderParams params_for(unsigned pace) const {
    jit::DecoderParams params{};
    params.items = reinterpret_cast<const jit::DecoderItem*>(items.ptr());
    params.nitems = reinterpret_cast<const int*>(nitems.ptr());
    params.max_items = max_items;
    params.counters = reinterpret_cast<unsigned*>(counters.ptr());
    params.Y = reinterpret_cast<float*>(sums.ptr());
    std::copy(std::begin(tokens), std::end(tokens), std::begin(params.tokens));
    params.position = position;
    params.token_table = reinterpret_cast<const void*>(value_address(m.token_table));
    params.position_table = reinterpret_cast<const void*>(value_address(m.position_table));
    params.k_cache = reinterpret_cast<void*>(state_address(m.k_cache));
    params.v_cache = reinterpret_cast<void*>(state_address(m.v_cache));
    params.logits = reinterpret_cast<void*>(p.address(p.plan().outputs.at(0)));
    params.eps = reinterpret_cast<const float*>(eps.ptr());
    // The program's f16 constants, as f16.
    params.scale = f16_to_f32(f32_to_f16(static_cast<float>(m.scale)));
    params.masked = f16_to_f32(f32_to_f16(static_cast<float>(m.masked_value)));
    params.step_blocks = step_blocks;
    params.b_clusters = b_clusters;
    params.pace_ns = pace;
    // GRAPE_DECODER_LM_L2=N: lm_head items each block puts into L2 during the last N layer steps
    // (listed items only: with the claims, at most the listed rounds).
    params.lm_l2 = scheduler::env_knob("GRAPE_DECODER_LM_L2", 0, 24, kLmItemsInL2);
    // GRAPE_DECODER_LM_SPREAD (1, the default): each such item goes into L2 a piece after every
    // weight copy of the producer's next item, not as one prefetch (the traces' A-step wakes grew
    // by 0.3-1.1 us during those steps, run 290). 0.4-0.6 us a launch less than 0 in runs 295 and
    // 301, the same in run 302.
    params.lm_l2_spread = scheduler::env_knob("GRAPE_DECODER_LM_SPREAD", 0, 1, 1);
    // GRAPE_DECODER_L2_HINTS=0: no L2 cache policies on the weight copies and lm_head's prefetches.
    params.l2_hints = scheduler::env_knob("GRAPE_DECODER_L2_HINTS", 0, 1, 1);
    // GRAPE_DECODER_KV_RING=0: the attention always reads the past keys and values from L2.
    params.kv_ring = scheduler::env_knob("GRAPE_DECODER_KV_RING", 0, 1, 1);
    // GRAPE_DECODER_MULTICAST=0: every block reads a layer step's rows from L2 itself.
    params.rows_multicast = scheduler::env_knob("GRAPE_DECODER_MULTICAST", 0, 1, 1);
    if (lm_claim_from >= 0) {
      const int L = static_cast<int>(m.layers.size());
      params.lm_claims = reinterpret_cast<unsigned*>(lm_claims.ptr());
      params.lm_claim_from = lm_claim_from;
      params.lm_items = static_cast<int>((m.vocab + jit::kDecLmCols - 1) / jit::kDecLmCols);
      params.lm_tiles = reinterpret_cast<const void*>(blobs[2 * L].ptr());
      params.lnf = reinterpret_cast<const void*>(blobs[2 * L + 1].ptr());
    }
    return params;
  }
  // GRAPE_MONO_TRACE=FILE: the launch's stamps (jit::DecoderParams::trace), summarised per step into
  // FILE after it (a measurement tool: it synchronises).
  const char* trace_file() const {
    const char* file = std::getenv("GRAPE_MONO_TRACE");
    return file && *file ? file : nullptr;
  }
  unsigned long long* trace_buffer() {
    const size_t bytes = item_steps.size() * jit::kDecTraceStamps * sizeof(unsigned long long);
    if (trace.size() != bytes) trace = jit::DeviceBuffer(p.device(), bytes, "the decoder plan's trace");
    trace.fill_bytes(0, p.stream());
    return reinterpret_cast<unsigned long long*>(trace.ptr());
  }
  // One line a step: its span (from the previous step's last block done to its own), and the
  // medians over its blocks of: waiting for the counter after that (wake), for the item's bytes
  // (item), staging the rows (rows), the work to done (work), with the work's maximum and the
  // block that finished last; then the work's inner phases (medians over the blocks that have
  // them): stage A's q/k/v product, waiting for the row's q/k/v, the attention, waiting for the
  // head's outputs, attn c_proj, the rest to done; stage B's c_fc product, gelu, waiting for the
  // cluster's gelu outputs, mlp c_proj, the rest; then the item's time split into issuing the
  // rows' loads (their L2 latency shows there; under the rows' multicast, at layer steps, nothing
  // is loaded there and the copy's wait is in `rows`) and waiting for the item; then, at a stage-A step,
  // a row block's attention split into its keys, the warps' meeting and the combine.
  // Whether block g had item n: every listed item; a claimed slot only if the block took an item
  // there (its done stamp is set).
  bool taken(const std::vector<unsigned long long>& t, int g, int n) const {
    return n < listed[size_t(g)] || t[(size_t(g) * max_items + n) * jit::kDecTraceStamps + 4] != 0;
  }
  void write_trace(const char* file) const {
    constexpr int S = jit::kDecTraceStamps;
    std::vector<unsigned long long> t(item_steps.size() * S);
    trace.copy_to_host(t.data(), t.size() * sizeof(unsigned long long), p.stream());
    p.synchronize(label() + " (its trace)");
    const int steps = 2 * static_cast<int>(m.layers.size());
    auto median = [](std::vector<double> v) {
      if (v.empty()) return 0.0;
      std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
      return v[v.size() / 2];
    };
    std::ofstream out(file, std::ios::trunc);
    if (!out) {
      warn_unwritable_trace(file);
      return;
    }
    out << "# step  span_us  wake_us  item_us  rows_us  work_us  work_max_us  last_block  (medians over the "
           "step's blocks; step "
        << steps
        << " is lm_head) | A: product qkv_wait attend out_wait proj rest | B: product gelu in_wait proj "
           "rest | item: rows_issue wait | A's attend: keys meet combine\n";
    auto us = [](unsigned long long from, unsigned long long to) {
      return from && to > from ? (to - from) / 1e3 : 0.0;
    };
    unsigned long long begin = ~0ull, start = ~0ull;
    for (size_t i = 0; i < item_steps.size(); ++i)
      if (item_steps[i] >= 0 && t[i * S]) begin = std::min(begin, t[i * S]);
    start = begin;
    for (int st = 0; st <= steps; ++st) {
      std::vector<double> wake, item, rows, work;
      std::vector<std::vector<double>> inner(6), issue(2), attend(3);
      unsigned long long end = 0;
      int last = -1;
      double last_work = 0, work_max = 0;
      for (int g = 0; g < grid; ++g) {
        int first = -1, final_n = -1;
        for (int n = 0; n < max_items; ++n)
          if (item_steps[size_t(g) * max_items + n] == st && taken(t, g, n))
            final_n = n, first = first < 0 ? n : first;
        if (first < 0) continue;
        const unsigned long long* a = &t[(size_t(g) * max_items + first) * S];
        const unsigned long long done = t[(size_t(g) * max_items + final_n) * S + 4];
        if (!a[0] || !done) continue;  // not stamped (the launch failed)
        wake.push_back(a[1] > begin ? (a[1] - begin) / 1e3 : 0.0);
        item.push_back((a[2] - a[1]) / 1e3);
        issue[0].push_back(us(a[1], a[10]));
        issue[1].push_back(us(a[10], a[2]));
        if (st < steps && st % 2 == 0 && a[6] && a[11] && a[12] && a[7]) {  // a row block's attention
          attend[0].push_back(us(a[6], a[11]));
          attend[1].push_back(us(a[11], a[12]));
          attend[2].push_back(us(a[12], a[7]));
        }
        rows.push_back((a[3] - a[2]) / 1e3);
        const double w = (done - a[3]) / 1e3;
        work.push_back(w);
        work_max = std::max(work_max, w);
        if (done > end) end = done, last = g, last_work = w;
        if (st < steps && a[5] && a[9]) {  // an active block of a layer step
          const bool attends = a[6] != 0;
          const double phases[6] = {us(a[3], a[5]),
                                    us(a[5], a[6]),
                                    st % 2 == 0 ? us(a[6], a[7]) : us(a[6], a[8]),
                                    st % 2 == 0 ? us(attends ? a[7] : a[5], a[8]) : 0.0,
                                    us(a[8], a[9]),
                                    us(a[9], done)};
          for (int k = 0; k < 6; ++k)
            if (phases[k] > 0 || (k != 1 && k != 2)) inner[k].push_back(phases[k]);
        }
      }
      if (last < 0) continue;
      out << st << " " << (end - begin) / 1e3 << " " << median(wake) << " " << median(item) << " "
          << median(rows) << " " << median(work) << " " << work_max << " " << last << " (work " << last_work
          << ")";
      if (!inner[0].empty()) {
        out << " | " << (st % 2 == 0 ? "A" : "B");
        for (int k = 0; k < 6; ++k)
          if (st % 2 == 0 || k != 3) out << " " << median(inner[k]);
      }
      out << " | item " << median(issue[0]) << " " << median(issue[1]);
      if (!attend[0].empty())
        out << " | attend " << median(attend[0]) << " " << median(attend[1]) << " " << median(attend[2]);
      out << "\n";
      begin = end;
    }
    out << "# total " << (begin - start) / 1e3 << " us from the first block's start to the last step's end\n";
    if (const char* raw = std::getenv("GRAPE_MONO_TRACE_STAMPS"); raw && *raw) write_stamps(raw, t, start);
  }
  // GRAPE_MONO_TRACE_STAMPS=FILE (with GRAPE_MONO_TRACE): every item's stamps as they are, in ns
  // from the launch's first block's start (0: not stamped), one line an item, for questions the
  // medians cannot answer (which block was last and why).
  void write_stamps(const char* file, const std::vector<unsigned long long>& t,
                    unsigned long long start) const {
    constexpr int S = jit::kDecTraceStamps;
    std::ofstream out(file, std::ios::trunc);
    if (!out) {
      warn_unwritable_trace(file, "GRAPE_MONO_TRACE_STAMPS");
      return;
    }
    out << "# block item step  stamps 0.." << S - 1 << " (ns from the first block's start; 0: not stamped)\n";
    for (int g = 0; g < grid; ++g)
      for (int n = 0; n < max_items; ++n) {
        const size_t i = size_t(g) * max_items + n;
        if (item_steps[i] < 0 || !taken(t, g, n)) continue;
        out << g << " " << n << " " << item_steps[i];
        for (int k = 0; k < S; ++k)
          out << " " << (t[i * S + k] >= start ? static_cast<long long>(t[i * S + k] - start) : 0);
        out << "\n";
      }
  }

  void launch_with(const Built& b, jit::DecoderParams params) {
    params.epoch = ++epoch;
    void* args[] = {&params};
    jit::launch(b.function, jit::Dim3{static_cast<unsigned>(grid), 1, 1},
                jit::Dim3{static_cast<unsigned>(jit::kDecLaunchThreads), 1, 1}, b.shared, p.stream(), args,
                label());
  }

  // The pace for `r` rows: from the tuning cache, or measured now (each candidate after a warm-up
  // launch, the best of 3 rounds of 5 launches), with the caches and logits pointing at zeroed
  // scratch memory and the position kTunePosition, so measuring changes nothing a run reads.
  unsigned tuned_pace(int64_t r) {
    if (auto it = paces.find(r); it != paces.end()) return it->second;
    const Built& b = kernel_for(r);
    std::vector<scheduler::LaunchCandidate> names;
    for (unsigned pace : kPaceCandidates) names.push_back({"pace" + std::to_string(pace), {}});
    const std::string source =
        jit::decoder_kernel_source(static_cast<int>(r), static_cast<int>(m.layers.size()), m.cache_len,
                                   m.vocab, fc_cols, b.ring, switches());
    const jit::Hash128 key =
        tuning_key(jit::xxh3_128(source.data(), source.size()).hex(), names, {r, m.cache_len, grid},
                   p.device().name(), p.device().arch(), p.device().sm_count());
    TuningCache cache(TuningCache::default_path());
    size_t pick = names.size();
    if (auto hit = cache.lookup(key)) {
      pick = 0;
      while (pick < names.size() && names[pick].name != hit->choice) ++pick;  // else: measure again
    }
    if (pick == names.size()) {
      try {
        const std::vector<double> us = measure_paces(b, r);
        pick = pick_fastest(us);
        cache.record(key, {names[pick].name, us[pick]});
      } catch (const Error& e) {
        // No device memory for the scratch caches: the default pace, measured again next session.
        if (e.code() != ErrorCode::OutOfMemory) throw;
        pick = 0;
      }
      try {
        cache.save();
      } catch (const Error&) {
        // The decision holds for this session (DeviceProgram warns about an unwritable cache).
      }
    }
    return paces[r] = kPaceCandidates[pick];
  }
  // Microseconds per launch at each of kPaceCandidates (a warm-up launch each, then the best of
  // kTuneRounds rounds of kTuneLaunches launches), into zeroed scratch caches and logits.
  std::vector<double> measure_paces(const Built& b, int64_t r) {
    const size_t cache_bytes =
        size_t(m.layers.size()) * size_t(r) * jit::kDecHeads * size_t(m.cache_len) * jit::kDecHeadDim * 2;
    jit::DeviceBuffer kc(p.device(), cache_bytes, "the decoder plan's tuning caches"),
        vc(p.device(), cache_bytes, "the decoder plan's tuning caches"),
        logits(p.device(), size_t(r) * size_t(m.vocab) * 2, "the decoder plan's tuning logits");
    kc.fill_bytes(0, p.stream());
    vc.fill_bytes(0, p.stream());
    const int at = static_cast<int>(std::min({kTunePosition, m.cache_len - 1, positions - 1}));
    std::vector<double> us(std::size(kPaceCandidates), 1e30);
    jit::Event start(p.device()), stop(p.device());
    for (int round = -1; round < kTuneRounds; ++round)
      for (size_t c = 0; c < us.size(); ++c) {
        jit::DecoderParams params = params_for(kPaceCandidates[c]);
        params.k_cache = reinterpret_cast<void*>(kc.ptr());
        params.v_cache = reinterpret_cast<void*>(vc.ptr());
        params.logits = reinterpret_cast<void*>(logits.ptr());
        params.position = at;
        const int launches = round < 0 ? 1 : kTuneLaunches;  // round -1: warm-up
        start.record(p.stream());
        for (int n = 0; n < launches; ++n) launch_with(b, params);
        stop.record(p.stream());
        stop.synchronize();
        if (round >= 0) us[c] = std::min(us[c], 1000.0 * stop.elapsed_ms_since(start) / launches);
      }
    return us;
  }

  // The first run of each row count: the kernel, and at the very first the layout.
  void prepare(int64_t r) {
    if (!laid_out) {
      lm_claim_rounds = scheduler::env_knob("GRAPE_DECODER_LM_CLAIM", -1, 64, kLmListedRounds);
      prefetch_next = scheduler::env_knob("GRAPE_DECODER_PREFETCH_NEXT", 0, 1, 0) != 0;
      one_poller = scheduler::env_knob("GRAPE_DECODER_ONE_POLLER", 0, 1, 0) != 0;
      kv_evict_first = scheduler::env_knob("GRAPE_DECODER_KV_EVICT_FIRST", 0, 1, 0) != 0;
      lm_late = scheduler::env_knob("GRAPE_DECODER_LM_LATE", 0, 8, 0);
      fc_cols = 32;  // for the occupancy query; decided below
      const int fit = clusters_that_fit(kernel_for(r));
      if (fit < jit::kDecHeads) {
        unusable = "only " + std::to_string(fit) + " clusters of 8 blocks fit on " + p.device().label() +
                   " (one a head needs 12)";
        return;
      }
      b_clusters = fit >= kMaxClusters ? kMaxClusters : jit::kDecHeads;
      fc_cols = jit::kDecFfn / (jit::kDecCluster * b_clusters);
      step_blocks = jit::kDecCluster * b_clusters;
      // The clusters that fit beyond those (at most 16 in all) join for lm_head only.
      grid = jit::kDecCluster * std::min(fit, kMaxClusters);
      // fc_cols is a define of the kernel: built again if the count changed it.
      if (fc_cols != 32) built.clear();
      lay_out_weights();
    }
    if (items_rows != r) make_items(r);
  }
};

std::unique_ptr<DecoderPlan> DecoderPlan::create(DeviceProgram& p, std::string& why) {
  if (scheduler::env_knob("GRAPE_MONO_DECODER", 0, 1, 1) == 0) {
    why = "GRAPE_MONO_DECODER=0";
    return nullptr;
  }
  std::optional<scheduler::DecoderStepMatch> m = scheduler::match_decoder_step(p.function(), why);
  if (!m) return nullptr;
  if (m->embed != jit::kDecEmbed || m->heads != jit::kDecHeads || m->head_dim != jit::kDecHeadDim ||
      m->ffn != jit::kDecFfn) {
    why =
        "the decoder kernel is written for GPT-2 small's widths (768 wide, 12 heads of 64, 3072 in the MLP); "
        "this step has " +
        std::to_string(m->embed) + ", " + std::to_string(m->heads) + " of " + std::to_string(m->head_dim) +
        ", " + std::to_string(m->ffn);
    return nullptr;
  }
  if (p.device().cc_major() < 9) {
    why = "thread-block clusters need compute capability 9.0; " + p.device().label() + " has " +
          std::to_string(p.device().cc_major()) + "." + std::to_string(p.device().cc_minor());
    return nullptr;
  }
  auto impl = std::make_unique<Impl>(p, std::move(*m));
  const ir::Function& f = p.function();
  for (size_t i = 0; i < f.params.size(); ++i) {
    if (f.params[i].value == impl->m.tokens) impl->tokens_input = static_cast<int>(i);
    if (f.params[i].value == impl->m.position) impl->position_input = static_cast<int>(i);
  }
  impl->positions = const_dim(f, impl->m.position_table, 0);
  if (impl->tokens_input < 0 || (impl->m.position_state.empty() && impl->position_input < 0) ||
      impl->positions < 1) {
    why =
        "the token ids and the position are neither entry parameters nor the token ids a parameter and "
        "the position a state";
    return nullptr;
  }
  return std::unique_ptr<DecoderPlan>(new DecoderPlan(std::move(impl)));
}

DecoderPlan::DecoderPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DecoderPlan::~DecoderPlan() = default;

size_t DecoderPlan::device_bytes() const {
  const Impl& d = *impl_;
  size_t n = d.eps.size() + d.counters.size() + d.sums.size() + d.items.size() + d.nitems.size() +
             d.lm_claims.size();
  for (const jit::DeviceBuffer& b : d.blobs) n += b.size();
  return n;
}

bool DecoderPlan::accepts(const std::vector<Tensor>& inputs, std::string& why) {
  Impl& d = *impl_;
  if (!d.unusable.empty()) {
    why = d.unusable;
    return false;
  }
  const Tensor& tok = inputs.at(static_cast<size_t>(d.tokens_input));
  const bool pos_param = d.position_input >= 0;
  if (tok.on_device() || (pos_param && inputs.at(static_cast<size_t>(d.position_input)).on_device())) {
    why = "the token ids or the position are in device memory (the host checks their range)";
    return false;
  }
  const int64_t rows = tok.numel();
  if (rows < 1 || rows > jit::kDecMaxRows) {
    why = std::to_string(rows) + " rows (the decoder kernel takes 1 to " + std::to_string(jit::kDecMaxRows) +
          ")";
    return false;
  }
  int32_t ids[jit::kDecMaxRows]{};
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t id = tok.get_int(i);
    if (id < 0 || id >= d.m.vocab) {
      why = "token id " + std::to_string(id) + " is outside the vocabulary";
      return false;
    }
    ids[i] = static_cast<int32_t>(id);
  }
  // The `decode` form's position is a state: read back (4 bytes; the stream is idle between runs).
  const int64_t at = pos_param ? inputs[static_cast<size_t>(d.position_input)].get_int(0) : d.read_position();
  if (at < 0 || at >= std::min(d.m.cache_len, d.positions)) {
    why = "position " + std::to_string(at) + " is outside the cache";
    return false;
  }
  try {
    d.prepare(rows);
  } catch (const Error& e) {
    // Out of device memory for the second copy of the weights, say: the general kernel still runs.
    if (e.code() == ErrorCode::Interrupted) throw;
    d.unusable = std::string("it could not be prepared: ") + e.what();
    d.blobs.clear();
  }
  if (!d.unusable.empty()) {
    why = d.unusable;
    return false;
  }
  d.rows = rows;
  d.position = static_cast<int32_t>(at);
  std::copy(std::begin(ids), std::end(ids), std::begin(d.tokens));
  return true;
}

void DecoderPlan::launch() {
  Impl& d = *impl_;
  const Impl::Built& b = d.kernel_for(d.rows);
  const char* forced = std::getenv("GRAPE_DECODER_PACE");
  d.last_pace = forced && *forced
                    ? static_cast<unsigned>(scheduler::env_knob("GRAPE_DECODER_PACE", 0, 100000, 0))
                : tuning_enabled() ? d.tuned_pace(d.rows)
                                   : kDefaultPaceNs;
  jit::DecoderParams params = d.params_for(d.last_pace);
  const char* trace = d.trace_file();
  if (trace) params.trace = d.trace_buffer();
  d.launch_with(b, params);
  // The `decode` form advances its position state by one, as the entry's last op does (the kernel
  // read it when it started; stream order puts this after its end). Before the trace, which
  // synchronises and may fail: the state stays consistent with the caches the kernel wrote.
  if (!d.m.position_state.empty())
    jit::check(jit::driver().cuMemsetD32Async(d.state_address(d.m.position_state),
                                              static_cast<unsigned>(d.position + 1), 1, d.p.stream()),
               "cuMemsetD32Async", d.label() + " (its position state)");
  if (trace) d.write_trace(trace);
}

unsigned DecoderPlan::pace() const { return impl_->last_pace; }

bool DecoderPlan::position_is_state() const { return !impl_->m.position_state.empty(); }

}  // namespace grape::cuda
