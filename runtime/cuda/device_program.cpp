#include "runtime/cuda/device_program.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <set>

#include "base/error.h"
#include "jit/codegen.h"
#include "jit/kernel_cache.h"
#include "jit/kernel_source.h"
#include "jit/parallel_compile.h"
#include "jit/sequence_source.h"
#include "runtime/cuda/autotune.h"
#include "scheduler/launch.h"
#include "scheduler/prefetch.h"

namespace grape::cuda {

DeviceProgram::DeviceProgram(const ir::Function& f, const std::map<std::string, Tensor>& weights, int device)
    : f_(f), dev_(device), stream_(dev_) {
  compile();
  upload_weights(weights);
  for (size_t s = 0; s < plan_.storages.size(); ++s)
    dim_slot_.push_back(plan_.storages[s].kind == scheduler::StorageKind::DimValue ? num_dim_values_++ : 0);
  size_t bytes = plan_.num_kernels * sizeof(jit::KParams) + sizeof(int64_t) * num_dim_values_;
  blocks_dev_ = jit::DeviceBuffer(dev_, std::max<size_t>(bytes, 1), "kernel parameter blocks");
  blocks_pinned_ = jit::PinnedBuffer(dev_, std::max<size_t>(bytes, 1), "kernel parameter staging");
  blocks_host_.assign(bytes, 0);
  scratch_.resize(plan_.num_kernels);
  launches_.resize(plan_.num_kernels);
  bound_rows_.assign(plan_.num_kernels, 0);
  output_pool_.resize(plan_.outputs.size());
  // What the plan writes: kernel outputs (in-place updates write their operand's storage),
  // copies' destinations, loop-carried storages.
  written_.assign(plan_.storages.size(), false);
  external_.assign(plan_.storages.size(), 0);
  std::function<void(const std::vector<scheduler::Step>&)> mark =
      [&](const std::vector<scheduler::Step>& steps) {
        for (const scheduler::Step& st : steps) {
          switch (st.kind) {
            case scheduler::Step::Kind::Launch: {
              const jit::KernelSpec& k = specs_[st.index];
              for (size_t j = k.num_inputs; j < k.buffers.size(); ++j)
                written_[static_cast<size_t>(plan_.storage(k.buffers[j]))] = true;
              break;
            }
            case scheduler::Step::Kind::Copy: written_[static_cast<size_t>(st.dst)] = true; break;
            case scheduler::Step::Kind::Loop: {
              const scheduler::LoopPlan& l = plan_.loops[st.index];
              for (int c : l.carried) written_[static_cast<size_t>(c)] = true;
              mark(l.body);
              break;
            }
          }
        }
      };
  mark(plan_.steps);
  if (const char* dump = std::getenv("GRAPE_DUMP_PLAN"); dump && *dump && std::string(dump) != "0")
    std::cerr << "plan of " << f_.name << ":\n" << plan_.str();
}

DeviceProgram::~DeviceProgram() = default;

// The image a compile produced (its cubin, else its PTX), counted as built or taken from the
// cache; rethrows the compile's failure.
const void* DeviceProgram::image_of(const jit::CompileOutcome& built) {
  if (built.failure) std::rethrow_exception(built.failure);
  const jit::CompileResult& r = built.result;
  ++(r.from_cache ? kernels_from_cache_ : kernels_compiled_);
  return r.cubin.empty() ? static_cast<const void*>(r.ptx.c_str()) : r.cubin.data();
}

jit::Module DeviceProgram::build_module(const std::string& source, const std::string& label,
                                        const std::string& arch) {
  const auto t0 = std::chrono::steady_clock::now();
  jit::KernelCache cache = jit::KernelCache::open_default();
  std::vector<jit::CompileOutcome> built =
      jit::compile_parallel({{source, label}}, arch.empty() ? dev_.arch() : arch, &cache);
  jit::Module m(dev_, image_of(built.at(0)), label);
  compile_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return m;
}

void DeviceProgram::compile() {
  auto t0 = std::chrono::steady_clock::now();
  fusion_ = scheduler::plan_fusion(f_);
  specs_ = jit::emit_kernels(f_, fusion_, f_.name);
  std::vector<scheduler::KernelUse> uses;
  for (const auto& s : specs_) uses.push_back({s.root, s.ops, s.buffers, s.num_inputs, s.aliases, s.pred});
  plan_ = scheduler::build_plan(f_, fusion_, uses);
  // Block sequences (scheduler/sequence.h): planned now, compiled when a binding first makes one
  // small enough (build_sequences): most entries run only a few of theirs at the dims they see,
  // and a sequence compiles several kernels' bodies at once.
  if (scheduler::block_sequences_enabled())
    sequences_ = scheduler::plan_block_sequences(plan_, jit::sequence_kernel_threads(specs_));
  for (size_t q = 0; q < sequences_.size(); ++q)
    sequence_start_[{sequences_[q].list, sequences_[q].begin}] = q;
  seq_funcs_.assign(sequences_.size(), nullptr);
  seq_failed_.assign(sequences_.size(), false);
  plan_sequence_locals();
  seq_params_.resize(sequences_.size());
  seq_active_.assign(sequences_.size(), false);
  jit::KernelCache cache = jit::KernelCache::open_default();
  std::vector<jit::CompileJob> jobs;
  for (const auto& spec : specs_) jobs.push_back({spec.source, spec.name});
  std::vector<jit::CompileOutcome> built = jit::compile_parallel(jobs, dev_.arch(), &cache);
  for (size_t k = 0; k < specs_.size(); ++k) {
    const jit::KernelSpec& s = specs_[k];
    modules_.emplace_back(dev_, image_of(built[k]), "kernel " + s.name);
    funcs_.push_back(modules_.back().function(jit::kKernelSymbol));
    tc_funcs_.push_back(nullptr);
    wide_funcs_.push_back(nullptr);
    wgmma64_funcs_.push_back(nullptr);
    wgmma96_funcs_.push_back(nullptr);
    wgmma_m64_funcs_.push_back(nullptr);
    wide_failed_.push_back(false);
    // A second entry point (kTensorCoreSuffix): matrix products' tensor-core path, tensor-core
    // attention's key split over two warps (attention_mma.cuh); both entries may use the most
    // dynamic shared memory their launches ask for.
    const bool product = s.launch.kind == jit::LaunchRule::MatrixProduct;
    if (product || (s.launch.kind == jit::LaunchRule::Attention && s.launch.attention_mma)) {
      tc_funcs_.back() =
          modules_.back().function((std::string(jit::kKernelSymbol) + jit::kTensorCoreSuffix).c_str());
      const unsigned most =
          product ? scheduler::kMatrixProductMaxSharedBytes : scheduler::kAttentionMmaMaxSharedBytes;
      const unsigned gemv =
          product ? scheduler::matrix_product_gemv_max_shared_bytes(s.launch.gemv_tensor_cores) : most;
      for (auto [fn, bytes] : {std::pair{funcs_.back(), gemv}, std::pair{tc_funcs_.back(), most}})
        jit::check(jit::driver().cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                    static_cast<int>(bytes)),
                   "cuFuncSetAttribute", "kernel " + s.name);
    }
  }
  plan_prefetches();
  control_ = load_control_kernels(dev_);
  compile_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The sequences `qs` (not built yet), compiled together. A failure is not an error: the sequence's
// steps run one by one, with a warning once.
void DeviceProgram::build_sequences(const std::vector<size_t>& qs) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<jit::CompileJob> jobs;
  for (size_t q : qs)
    jobs.push_back({jit::block_sequence_source(plan_, sequences_[q], specs_),
                    f_.name + "_sequence" + std::to_string(q)});
  jit::KernelCache cache = jit::KernelCache::open_default();
  std::vector<jit::CompileOutcome> built = jit::compile_parallel(jobs, dev_.arch(), &cache);
  for (size_t i = 0; i < qs.size(); ++i) {
    const size_t q = qs[i];
    try {
      seq_modules_.emplace_back(dev_, image_of(built[i]), sequence_label(q));
      CUfunction fn = seq_modules_.back().function(jit::kKernelSymbol);
      const size_t most =
          sequences_[q].kernels.size() * sizeof(jit::KParams) + scheduler::kSequenceMaxLocalBytes;
      jit::check(jit::driver().cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                  static_cast<int>(most)),
                 "cuFuncSetAttribute", sequence_label(q));
      seq_funcs_[q] = fn;
    } catch (const std::exception& e) {
      seq_failed_[q] = true;
      static bool warned = false;
      if (!warned) {
        warned = true;
        std::cerr << "grape: warning: " << sequence_label(q)
                  << " could not be built; its steps run one by one (" << e.what() << ")\n";
      }
    }
  }
  compile_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The storages each sequence may keep in shared memory. A local needs a patch for every kernel
// field that holds it; locals whose patches would overflow the slots stay in global memory.
void DeviceProgram::plan_sequence_locals() {
  std::vector<std::vector<int>> kernel_storages(specs_.size());
  for (size_t k = 0; k < specs_.size(); ++k) {
    for (ir::ValueId v : specs_[k].buffers) kernel_storages[k].push_back(plan_.storage(v));
    if (plan_.kernel_pred[k] != ir::kNoValue)
      kernel_storages[k].push_back(plan_.storage(plan_.kernel_pred[k]));
  }
  seq_locals_.assign(sequences_.size(), {});
  seq_local_fields_.assign(sequences_.size(), jit::SeqParams{});
  seq_shared_.assign(sequences_.size(), 0);
  if (!scheduler::sequence_locals_enabled()) return;
  for (size_t q = 0; q < sequences_.size(); ++q) {
    size_t patches = 0;
    for (const scheduler::SequenceLocal& l :
         scheduler::sequence_locals(plan_, sequences_[q], kernel_storages)) {
      size_t need = 0;
      for (size_t k : sequences_[q].kernels)
        for (int st : kernel_storages[k]) need += st == l.storage;
      if (patches + need > GRAPE_SEQ_MAX_PATCHES) continue;
      patches += need;
      seq_locals_[q].push_back(l);
    }
  }
}

// The 128 x 128 tile variants of matrix products (jit::kWideSuffix), compiled together on first
// use (and kept in the kernel cache). A failure is not an error: the kernel keeps its 64 x 64
// entry point, with a warning once.
void DeviceProgram::build_wide(const std::vector<size_t>& kernels) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<jit::CompileJob> jobs;
  for (size_t k : kernels)
    jobs.push_back({jit::wide_variant_source(specs_[k].source), specs_[k].name + jit::kWideSuffix});
  jit::KernelCache cache = jit::KernelCache::open_default();
  // On Hopper the wide tiles use warpgroup MMA, which only sm_90a (not sm_90) code may contain.
  const bool wgmma = scheduler::gemm_wgmma_device(dev_.arch());
  std::vector<jit::CompileOutcome> built =
      jit::compile_parallel(jobs, scheduler::gemm_wide_target(dev_.arch()), &cache);
  for (size_t i = 0; i < kernels.size(); ++i) {
    const size_t k = kernels[i];
    try {
      modules_.emplace_back(dev_, image_of(built[i]), "kernel " + jobs[i].name);
      CUfunction fn = modules_.back().function((std::string(jit::kKernelSymbol) + jit::kWideSuffix).c_str());
      jit::check(
          jit::driver().cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                           static_cast<int>(wgmma ? scheduler::gemm_wgmma_max_shared_bytes()
                                                                  : scheduler::gemm_wide_shared_bytes())),
          "cuFuncSetAttribute", "kernel " + jobs[i].name);
      if (wgmma && specs_[k].launch.wgmma) {
        CUfunction f64 =
            modules_.back().function((std::string(jit::kKernelSymbol) + jit::kWgmma64Suffix).c_str());
        jit::check(jit::driver().cuFuncSetAttribute(f64, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                    static_cast<int>(scheduler::gemm_wgmma64_shared_bytes())),
                   "cuFuncSetAttribute", "kernel " + jobs[i].name);
        wgmma64_funcs_[k] = f64;
        CUfunction f96 =
            modules_.back().function((std::string(jit::kKernelSymbol) + jit::kWgmma96Suffix).c_str());
        jit::check(
            jit::driver().cuFuncSetAttribute(f96, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                             static_cast<int>(scheduler::gemm_wgmma96_shared_bytes(4))),
            "cuFuncSetAttribute", "kernel " + jobs[i].name);
        wgmma96_funcs_[k] = f96;
        CUfunction fm64 =
            modules_.back().function((std::string(jit::kKernelSymbol) + jit::kWgmmaM64Suffix).c_str());
        jit::check(
            jit::driver().cuFuncSetAttribute(fm64, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                             static_cast<int>(scheduler::gemm_wgmma_m64_shared_bytes())),
            "cuFuncSetAttribute", "kernel " + jobs[i].name);
        wgmma_m64_funcs_[k] = fm64;
      }
      wide_funcs_[k] = fn;
    } catch (const std::exception& e) {
      wide_failed_[k] = true;
      static bool warned = false;
      if (!warned) {
        warned = true;
        std::cerr << "grape: warning: the 128x128-tile variant of " << specs_[k].name
                  << " could not be built; its 64x64 tiles run instead (" << e.what() << ")\n";
      }
    }
  }
  compile_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

namespace {
// GRAPE_ROW_VARIANTS=0 runs every matrix product's own code, whatever its bound row count (for
// A/B measurements, and a way out should a variant misbehave).
bool row_variants_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("GRAPE_ROW_VARIANTS");
    return !(v && std::string(v) == "0");
  }();
  return on;
}
}  // namespace

int64_t DeviceProgram::variant_rows(size_t k) const {
  const scheduler::LaunchRule& rule = specs_[k].launch;
  if (!row_variants_enabled() || !rule.has_row_variants()) return 0;
  const int64_t rows = rule.items[0].eval(dims_);
  return rows >= 1 && rows <= scheduler::kGemvMaxRows ? rows : 0;
}

size_t DeviceProgram::row_variants_bound() const {
  return static_cast<size_t>(
      std::count_if(bound_rows_.begin(), bound_rows_.end(), [](int64_t r) { return r > 0; }));
}

// Row-count variants (jit::rows_variant_source), compiled together at the first bind that needs
// them (and kept in the kernel cache). A failure is not an error: the kernel runs its own code,
// with a warning once.
void DeviceProgram::build_row_variants(const std::vector<std::pair<size_t, int64_t>>& wanted) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<jit::CompileJob> jobs;
  for (const auto& [k, rows] : wanted)
    jobs.push_back(
        {jit::rows_variant_source(specs_[k].source, rows), specs_[k].name + "_rows" + std::to_string(rows)});
  jit::KernelCache cache = jit::KernelCache::open_default();
  std::vector<jit::CompileOutcome> built = jit::compile_parallel(jobs, dev_.arch(), &cache);
  for (size_t i = 0; i < wanted.size(); ++i) {
    try {
      modules_.emplace_back(dev_, image_of(built[i]), "kernel " + jobs[i].name);
      CUfunction fn = modules_.back().function(jit::kKernelSymbol);
      jit::check(
          jit::driver().cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                           static_cast<int>(scheduler::matrix_product_gemv_max_shared_bytes(
                                               specs_[wanted[i].first].launch.gemv_tensor_cores))),
          "cuFuncSetAttribute", "kernel " + jobs[i].name);
      row_funcs_[wanted[i]] = fn;
    } catch (const std::exception& e) {
      row_failed_.insert(wanted[i]);
      static bool warned = false;
      if (!warned) {
        warned = true;
        std::cerr << "grape: warning: the " << wanted[i].second << "-row variant of kernel "
                  << specs_[wanted[i].first].name << " could not be built; the kernel's general code runs ("
                  << e.what()
                  << "); a kernel bundle holds the row counts given to `grape compile --bundle F --rows`\n";
      }
    }
  }
  compile_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void DeviceProgram::upload_weights(const std::map<std::string, Tensor>& weights) {
  std::set<std::string> used;
  for (const auto& s : plan_.storages)
    if (s.kind == scheduler::StorageKind::Weight) used.insert(s.name);
  for (const auto& name : used) {
    auto it = weights.find(name);
    if (it == weights.end()) throw Error(ErrorCode::Internal, "cuda: weight '" + name + "' is not loaded");
    jit::DeviceBuffer buf(dev_, std::max<size_t>(1, it->second.nbytes()), "weight " + name);
    buf.copy_from_host(it->second.raw(), it->second.nbytes(), stream());
    weights_.emplace(name, std::move(buf));
  }
  synchronize(f_.name);
}

std::string DeviceProgram::where(const ir::Operation* op) const {
  if (!op) return "the entry";
  return std::string(ir::op_name(op->op)) + " at line " + std::to_string(op->loc.begin.line);
}

void DeviceProgram::throw_loop_cap(const ir::Operation* op, const RunControl& control) const {
  const SourcePosition at = position(op);
  throw_at(ErrorCode::Device, at,
           control.loop_cap_message(at.file.empty() ? "the loop " + where(op) : "the loop"));
}

std::string DeviceProgram::kernel_label(size_t k) const {
  return "kernel " + specs_.at(k).name + " (" + where(specs_[k].root) + ")";
}

CUdeviceptr DeviceProgram::address(int storage) const {
  const scheduler::Storage& s = plan_.storages.at(static_cast<size_t>(storage));
  switch (s.kind) {
    case scheduler::StorageKind::Arena:
      if (CUdeviceptr caller = external_[static_cast<size_t>(storage)]) return caller;
      return arena_.ptr() + layout_.offset.at(static_cast<size_t>(storage));
    case scheduler::StorageKind::Weight: return weights_.at(s.name).ptr();
    case scheduler::StorageKind::State: {
      auto it = state_.find(s.name);
      if (it == state_.end() || !it->second.present)
        throw Error(ErrorCode::Internal, "cuda: state '" + s.name + "' does not exist");
      return it->second.buf.ptr();
    }
    case scheduler::StorageKind::DimValue:
      return blocks_dev_.ptr() + plan_.num_kernels * sizeof(jit::KParams) +
             sizeof(int64_t) * dim_slot_[static_cast<size_t>(storage)];
  }
  return 0;
}

size_t DeviceProgram::bytes(int storage) const {
  return scheduler::bytes_of(plan_.storages.at(static_cast<size_t>(storage)).type, dims_);
}

bool DeviceProgram::bind(const std::map<std::string, int64_t>& dims) {
  bool uploaded = false;
  if (!bound_ || dims != dims_) {
    dims_ = dims;
    bound_ = true;
    layout_ = scheduler::plan_arena(plan_, dims_);
    if (layout_.size > arena_.size()) {
      size_t size = std::max(layout_.size, scheduler::plan_arena(plan_, bucket_top()).size);
      arena_ = jit::DeviceBuffer();  // free first: the old arena's bytes count towards the new one's limit
      arena_ = jit::DeviceBuffer(dev_, size, "the arena of " + f_.name);
      ++generation_;
    }
    const bool wgmma = scheduler::gemm_wgmma_device(dev_.arch());
    std::vector<size_t> need_wide;
    for (size_t k = 0; k < specs_.size(); ++k)
      if (!wide_funcs_[k] && !wide_failed_[k] && specs_[k].launch.kind == jit::LaunchRule::MatrixProduct &&
          scheduler::launch_dims(specs_[k].launch, dims_, dev_.sm_count(), wgmma).wide)
        need_wide.push_back(k);
    if (!need_wide.empty()) build_wide(need_wide);
    std::vector<std::pair<size_t, int64_t>> need_rows;
    for (size_t k = 0; k < specs_.size(); ++k)
      if (const int64_t rows = variant_rows(k);
          rows && !row_funcs_.count({k, rows}) && !row_failed_.count({k, rows}))
        need_rows.push_back({k, rows});
    if (!need_rows.empty()) build_row_variants(need_rows);
    for (size_t k = 0; k < specs_.size(); ++k) {
      scheduler::LaunchDims ld = scheduler::launch_dims(specs_[k].launch, dims_, dev_.sm_count(), wgmma);
      if (ld.wide && !function_for(k, ld)) {  // build failed: 64 x 64 tiles
        scheduler::LaunchRule rule = specs_[k].launch;
        rule.allow_wide = false;
        ld = scheduler::launch_dims(rule, dims_, dev_.sm_count(), wgmma);
      }
      auto* slot = reinterpret_cast<jit::KParams*>(blocks_host_.data() + k * sizeof(jit::KParams));
      std::memset(slot, 0, sizeof(jit::KParams));
      apply_launch(k, ld);
    }
    decide_sequences();
    fill_blocks();
    tune(uploaded);
  }
  fill_blocks();
  return upload_blocks() || uploaded;
}

bool DeviceProgram::upload_blocks() {
  if (blocks_host_ == blocks_uploaded_) return false;
  std::memcpy(blocks_pinned_.data(), blocks_host_.data(), blocks_host_.size());
  if (!blocks_host_.empty())
    jit::check(jit::driver().cuMemcpyHtoDAsync(blocks_dev_.ptr(), blocks_pinned_.data(), blocks_host_.size(),
                                               stream()),
               "cuMemcpyHtoDAsync", "the parameter blocks");
  blocks_uploaded_ = blocks_host_;
  return true;
}

CUfunction DeviceProgram::function_for(size_t k, const scheduler::LaunchDims& ld) const {
  if (ld.n96) return wgmma96_funcs_[k];
  if (ld.m64) return wgmma_m64_funcs_[k];
  if (ld.narrow) return wgmma64_funcs_[k];
  if (ld.wide) return wide_funcs_[k];
  if (ld.tensor_cores) return tc_funcs_[k];
  // The GEMV entry point: a row-count variant where one was built for the bound rows.
  if (const int64_t rows = variant_rows(k)) {
    auto it = row_funcs_.find({k, rows});
    if (it != row_funcs_.end()) return it->second;
  }
  return funcs_[k];
}

void DeviceProgram::apply_launch(size_t k, const scheduler::LaunchDims& ld) {
  if (ld.scratch_bytes > scratch_[k].size()) {
    // Grows only: the kernels leave their counters at zero, so the area stays valid across runs.
    scratch_[k] = jit::DeviceBuffer(dev_, ld.scratch_bytes, "the scratch area of kernel " + specs_[k].name);
    scratch_[k].fill_bytes(0, stream());
  }
  Launch& l = launches_[k];
  l.function = function_for(k, ld);
  const int64_t rows = variant_rows(k);
  const auto variant = rows ? row_funcs_.find({k, rows}) : row_funcs_.end();
  bound_rows_[k] = variant != row_funcs_.end() && l.function == variant->second ? rows : 0;
  l.dims = ld;
  l.grid = ld.grid;
  l.block = ld.block;
  l.shared_bytes = ld.shared_bytes;
  auto* slot = reinterpret_cast<jit::KParams*>(blocks_host_.data() + k * sizeof(jit::KParams));
  l.params = slot;
  slot->splits = ld.splits;
  slot->kchunk = ld.kchunk;
}

std::map<std::string, int64_t> DeviceProgram::bucket_top() const {
  std::map<std::string, int64_t> top = dims_;
  for (auto& [name, value] : top) value = std::max(value, buckets_.bucket(name, value).hi);
  return top;
}

void DeviceProgram::tune(bool& uploaded) {
  const std::string forced = tuning_forced_choice();
  if (!tuning_enabled() && forced.empty()) return;
  const auto t0 = std::chrono::steady_clock::now();
  const bool wgmma = scheduler::gemm_wgmma_device(dev_.arch());
  size_t measured = 0;
  kernels_retuned_ = 0;
  // Keys take the launch rule's sizes at the top of the dims' shape buckets: one decision per bucket.
  const std::map<std::string, int64_t> top = bucket_top();
  for (size_t k = 0; k < specs_.size(); ++k) {
    const jit::KernelSpec& spec = specs_[k];
    std::vector<scheduler::LaunchCandidate> cands =
        scheduler::launch_candidates(spec.launch, dims_, dev_.sm_count(), wgmma);
    // Only what was built: the wide variants exist when the heuristic takes one (build_wide).
    std::erase_if(cands, [&](const scheduler::LaunchCandidate& c) { return !function_for(k, c.dims); });
    if (cands.size() < 2) continue;
    size_t pick = cands.size();
    auto named = [&](const std::string& name) {
      size_t i = 0;
      while (i < cands.size() && cands[i].name != name) ++i;
      return i;
    };
    if (!forced.empty()) {
      pick = named(forced);
      if (pick == cands.size()) continue;
    } else {
      if (source_hash_.empty()) source_hash_.resize(specs_.size());
      if (!source_hash_[k]) source_hash_[k] = jit::xxh3_128(spec.source.data(), spec.source.size());
      std::vector<int64_t> sizes;
      for (const ir::Dim& d : spec.launch.items) sizes.push_back(d.eval(top));
      const jit::Hash128 key =
          tuning_key(source_hash_[k]->hex(), cands, sizes, dev_.name(), dev_.arch(), dev_.sm_count());
      if (!tuning_cache_) tuning_cache_ = std::make_unique<TuningCache>(TuningCache::default_path());
      if (auto hit = tuning_cache_->lookup(key)) pick = named(hit->choice);
      if (pick == cands.size()) {
        // The kernels read dim values and nothing else from the device blocks before their own.
        if (!uploaded) uploaded = upload_blocks();
        const std::vector<double> us = measure(k, cands);
        pick = pick_fastest(us);
        tuning_cache_->record(key, {cands[pick].name, us[pick]});
        ++measured;
      }
    }
    if (pick != 0) ++kernels_retuned_;
    if (!scheduler::same_launch(cands[pick].dims, launches_[k].dims)) apply_launch(k, cands[pick].dims);
  }
  if (tuning_cache_) {
    try {
      tuning_cache_->save();
    } catch (const Error& e) {
      static bool warned = false;  // the decisions still hold for this session
      if (!warned) std::cerr << "grape: warning: " << e.what() << "\n";
      warned = true;
    }
  }
  kernels_tuned_ += measured;
  tuning_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// One kernel's candidates timed on copies of its inputs' shapes: every arena or state buffer it
// names (its outputs among them) points into zeroed tuning memory, the predicate is dropped and
// the split-K scratch is its own, so the run's data and the kernel's real scratch stay untouched.
std::vector<double> DeviceProgram::measure(size_t k, const std::vector<scheduler::LaunchCandidate>& cands) {
  const jit::KernelSpec& spec = specs_[k];
  jit::KParams p = *launches_[k].params;
  p.pred = nullptr;
  auto round_up = [](size_t n) { return (std::max<size_t>(n, 1) + 255) / 256 * 256; };
  size_t total = 0, scratch = 0;
  std::map<int, size_t> offsets;  // storage -> offset: a storage named twice (in place) stays one buffer
  for (ir::ValueId v : spec.buffers) {
    const int s = plan_.storage(v);
    const scheduler::StorageKind kind = plan_.storages.at(static_cast<size_t>(s)).kind;
    if (kind != scheduler::StorageKind::Arena && kind != scheduler::StorageKind::State) continue;
    if (offsets.emplace(s, total).second) total += round_up(bytes(s));
  }
  for (const scheduler::LaunchCandidate& c : cands) scratch = std::max(scratch, c.dims.scratch_bytes);
  jit::DeviceBuffer mem(dev_, total + round_up(scratch), "tuning buffers for kernel " + spec.name);
  mem.fill_bytes(0, stream());
  for (size_t j = 0; j < spec.buffers.size(); ++j) {
    auto it = offsets.find(plan_.storage(spec.buffers[j]));
    if (it != offsets.end()) p.buf[j] = reinterpret_cast<void*>(mem.ptr() + it->second);
  }
  p.scratch = reinterpret_cast<void*>(mem.ptr() + total);
  std::vector<TimedLaunch> launches;
  for (const scheduler::LaunchCandidate& c : cands) launches.push_back({function_for(k, c.dims), c.dims});
  std::vector<double> us = time_launches(dev_, stream(), launches, p, kernel_label(k));
  synchronize(kernel_label(k) + " (tuning)");  // before `mem` is freed
  return us;
}

// A matrix product's weight (constant shape, within kPrefetchMaxBytes) is a prefetch target;
// scheduler::plan_prefetches says which kernel requests it (fill_blocks writes the range).
void DeviceProgram::plan_prefetches() {
  std::vector<bool> target(specs_.size(), false);
  prefetch_bytes_.assign(specs_.size(), 0);
  for (size_t k = 0; k < specs_.size(); ++k) {
    const int wb = specs_[k].launch.weight_buffer;
    if (specs_[k].launch.kind != jit::LaunchRule::MatrixProduct || wb < 0) continue;
    const ir::Type& t = f_.type(specs_[k].buffers.at(static_cast<size_t>(wb)));
    uint64_t bytes = dtype_size(t.dtype);
    for (const ir::Dim& d : t.shape)
      bytes = d.is_const() ? bytes * static_cast<uint64_t>(d.const_value()) : 0;
    if (bytes == 0 || bytes > scheduler::kPrefetchMaxBytes) continue;
    target[k] = true;
    prefetch_bytes_[k] = bytes;
  }
  prefetch_of_ = scheduler::plan_prefetches(plan_, target, scheduler::prefetch_mode());
}

// Every address in the blocks comes from the current layout, states and scratch areas, so this
// runs on each bind (a few hundred bytes per kernel); bind() uploads only what differs.
void DeviceProgram::fill_blocks() {
  for (size_t k = 0; k < specs_.size(); ++k) {
    const jit::KernelSpec& spec = specs_[k];
    auto* slot = reinterpret_cast<jit::KParams*>(blocks_host_.data() + k * sizeof(jit::KParams));
    slot->pred = spec.pred == ir::kNoValue
                     ? nullptr
                     : reinterpret_cast<const unsigned char*>(address(plan_.storage(spec.pred)));
    for (size_t j = 0; j < spec.buffers.size(); ++j) {
      ir::ValueId v = spec.buffers[j];
      slot->buf[j] = reinterpret_cast<void*>(address(plan_.storage(v)));
      const ir::Type& t = f_.type(v);
      for (size_t d = 0; d < t.rank(); ++d) slot->shape[j][d] = t.shape[d].eval(dims_);
    }
    for (size_t e = 0; e < spec.extra.size(); ++e) slot->extra[e] = spec.extra[e].eval(dims_);
    slot->scratch = reinterpret_cast<void*>(scratch_[k].ptr());
    slot->weight_map = nullptr;  // encode_weight_maps
    if (timeline_on_) {
      if (!timeline_.ptr())
        timeline_ = jit::DeviceBuffer(dev_, kTimelineStamps * sizeof(unsigned long long) * specs_.size(),
                                      "the kernel timeline");
      slot->timeline = reinterpret_cast<unsigned long long*>(timeline_.ptr()) + kTimelineStamps * k;
    } else {
      slot->timeline = nullptr;
    }
  }
  for (size_t k = 0; k < specs_.size(); ++k) {
    auto* slot = reinterpret_cast<jit::KParams*>(blocks_host_.data() + k * sizeof(jit::KParams));
    const int t = prefetch_of_.empty() ? -1 : prefetch_of_[k];
    if (t < 0) {
      slot->prefetch = nullptr;
      slot->prefetch_bytes = 0;
      continue;
    }
    const size_t tk = static_cast<size_t>(t);
    const auto* target =
        reinterpret_cast<const jit::KParams*>(blocks_host_.data() + tk * sizeof(jit::KParams));
    void* weight = target->buf[specs_[tk].launch.weight_buffer];
    // cp.async.bulk.prefetch wants a 16-byte aligned start (every weight allocation is; a hint
    // is dropped rather than risked).
    const bool aligned = reinterpret_cast<uintptr_t>(weight) % 16 == 0;
    slot->prefetch = aligned ? weight : nullptr;
    slot->prefetch_bytes = aligned ? prefetch_bytes_[tk] : 0;
  }
  encode_weight_maps();
  unsigned char* dims_area = blocks_host_.data() + plan_.num_kernels * sizeof(jit::KParams);
  for (size_t s = 0; s < plan_.storages.size(); ++s) {
    const scheduler::Storage& st = plan_.storages[s];
    if (st.kind != scheduler::StorageKind::DimValue) continue;
    int32_t v = static_cast<int32_t>(st.dim.eval(dims_));
    std::memcpy(dims_area + sizeof(int64_t) * dim_slot_[s], &v, sizeof v);
  }
  fill_sequence_params();
}

// gemv_mma.cuh's weight tiles by the copy engine (scheduler::gemv_weight_tma): for each such
// kernel whose weight is a 16-bit [K][N] matrix of the program, a tensor map in boxes of 64
// columns x 64 rows (128 bytes x 64, the 128-byte swizzle), elements past K or N read as zeros.
// The weights' addresses do not change within a session, so the maps are encoded and uploaded
// once (again only if an address or shape changed). Without the driver function, an unaligned
// weight or a failed encoding the kernel gets no map and loads its weight into registers.
void DeviceProgram::encode_weight_maps() {
  const jit::Driver& d = jit::driver();
  if (!scheduler::gemv_weight_tma() || !d.cuTensorMapEncodeTiled) return;
  constexpr size_t kMap = sizeof(CUtensorMap);
  static_assert(kMap == 128, "a tensor map is 128 bytes");
  weight_maps_host_.assign(kMap * specs_.size(), 0);
  std::vector<size_t> mapped;  // the kernels that got a map
  for (size_t k = 0; k < specs_.size(); ++k) {
    const jit::KernelSpec& spec = specs_[k];
    const scheduler::LaunchRule& rule = spec.launch;
    if (!rule.gemv_mma || !rule.weight_kn || rule.weight_buffer < 0) continue;
    auto* slot = reinterpret_cast<jit::KParams*>(blocks_host_.data() + k * sizeof(jit::KParams));
    const size_t wb = static_cast<size_t>(rule.weight_buffer);
    const ir::Type& t = f_.type(spec.buffers.at(wb));
    if (t.rank() != 2 || (t.dtype != DType::F16 && t.dtype != DType::BF16)) continue;
    const cuuint64_t K = static_cast<cuuint64_t>(slot->shape[wb][0]),
                     N = static_cast<cuuint64_t>(slot->shape[wb][1]);
    void* w = slot->buf[wb];
    if (K == 0 || N == 0 || N % 8 != 0 || reinterpret_cast<uintptr_t>(w) % 16 != 0) continue;
    const cuuint64_t dims[2] = {N, K}, strides[1] = {N * 2};
    const cuuint32_t box[2] = {64, 64}, elem[2] = {1, 1};
    auto* map = reinterpret_cast<CUtensorMap*>(weight_maps_host_.data() + kMap * k);
    const CUresult r = d.cuTensorMapEncodeTiled(
        map, t.dtype == DType::F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, w,
        dims, strides, box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r == CUDA_SUCCESS) mapped.push_back(k);
  }
  if (mapped.empty()) return;
  if (!weight_maps_.ptr())
    weight_maps_ = jit::DeviceBuffer(dev_, weight_maps_host_.size(), "the weight tensor maps");
  if (weight_maps_host_ != weight_maps_uploaded_) {
    weight_maps_.copy_from_host(weight_maps_host_.data(), weight_maps_host_.size(), stream());
    weight_maps_uploaded_ = weight_maps_host_;
  }
  for (size_t k : mapped) {
    auto* slot = reinterpret_cast<jit::KParams*>(blocks_host_.data() + k * sizeof(jit::KParams));
    slot->weight_map = reinterpret_cast<const unsigned char*>(weight_maps_.ptr()) + kMap * k;
  }
}

void DeviceProgram::timeline_reset() {
  if (!timeline_.ptr()) return;
  // Earliest stamps start at the largest value, latest ones at 0. Kept in the program: the copy is
  // queued on the run's stream.
  if (timeline_init_.empty()) {
    timeline_init_.assign(kTimelineStamps * specs_.size(), 0);
    for (size_t k = 0; k < specs_.size(); ++k)
      timeline_init_[kTimelineStamps * k] = timeline_init_[kTimelineStamps * k + 1] = ~0ull;
  }
  timeline_.copy_from_host(timeline_init_.data(), timeline_init_.size() * sizeof(unsigned long long),
                           stream());
}

void DeviceProgram::timeline_write() {
  if (!timeline_.ptr()) return;  // every run: no getenv unless the program has stamps
  const char* file = std::getenv("GRAPE_KERNEL_TIMELINE");
  if (!file || !*file) return;
  constexpr size_t S = kTimelineStamps;
  std::vector<unsigned long long> t(S * specs_.size());
  timeline_.copy_to_host(t.data(), t.size() * sizeof(unsigned long long), stream());
  synchronize("the kernel timeline");
  std::vector<size_t> ran;
  for (size_t k = 0; k < specs_.size(); ++k)
    if (t[S * k] != ~0ull) ran.push_back(k);
  std::sort(ran.begin(), ran.end(), [&](size_t a, size_t b) { return t[S * a] < t[S * b]; });
  std::ofstream out(file, std::ios::trunc);
  if (!out) throw Error(ErrorCode::IO, std::string("cannot write the kernel timeline to ") + file);
  out << "# " << f_.name << ": " << ran.size()
      << " kernels; us from the first start: start, first and last block past the wait, end (a kernel "
         "that does not wait: -), then m=a,b,c,d where the kernel's template marks phases (the last "
         "block past each mark; -: not reached)\n";
  const unsigned long long t0 = ran.empty() ? 0 : t[S * ran.front()];
  auto us = [&](unsigned long long v) { return std::to_string((v - t0) / 1000.0); };
  for (size_t k : ran) {
    const unsigned long long* r = &t[S * k];
    const bool waited = r[1] != ~0ull;
    out << us(r[0]) << " " << (waited ? us(r[1]) : "-") << " " << (waited ? us(r[2]) : "-") << " " << us(r[3])
        << " ";
    // Marks: the stamps after the first four (0: no block reached it).
    if (std::any_of(r + 4, r + S, [](unsigned long long v) { return v != 0; })) {
      out << "m=";
      for (size_t i = 4; i < S; ++i) out << (i > 4 ? "," : "") << (r[i] ? us(r[i]) : "-");
      out << " ";
    }
    out << kernel_label(k) << "\n";
  }
}

int DeviceProgram::sequence_at(const std::vector<scheduler::Step>& list, size_t i) const {
  auto it = sequence_start_.find({&list, i});
  return it == sequence_start_.end() || !seq_active_[it->second] ? -1 : static_cast<int>(it->second);
}

std::string DeviceProgram::sequence_label(size_t q) const {
  const scheduler::BlockSequence& s = sequences_.at(q);
  std::string what = "block sequence " + std::to_string(q) + " of " + f_.name + " (";
  if (!s.kernels.empty())
    what += specs_.at(s.kernels.front()).name +
            (s.kernels.size() > 1 ? " .. " + specs_.at(s.kernels.back()).name : "");
  else
    what += std::to_string(s.copies.size()) + " copies";
  return what + ")";
}

// Which sequences run as one launch (scheduler/sequence.h): small enough at the top of the bound
// dims' buckets, one decision per bucket, so a graph built for it stays valid for every binding
// in it. When the dims change.
void DeviceProgram::decide_sequences() {
  if (sequences_.empty()) return;
  const std::map<std::string, int64_t> top = bucket_top();
  std::vector<scheduler::LaunchRule> rules;
  for (const jit::KernelSpec& k : specs_) rules.push_back(k.launch);
  // Shared-memory places of the locals, sized at the buckets' top like the decision itself, so
  // that a graph's sequence nodes keep their shared memory for every binding of the bucket.
  for (size_t q = 0; q < sequences_.size(); ++q) place_sequence_locals(q, top);
  std::vector<size_t> unbuilt;
  for (size_t q = 0; q < sequences_.size(); ++q) {
    seq_active_[q] = !seq_failed_[q] && scheduler::sequence_small_enough(plan_, sequences_[q], rules, top);
    if (seq_active_[q] && !seq_funcs_[q]) unbuilt.push_back(q);
  }
  if (unbuilt.empty()) return;
  build_sequences(unbuilt);
  for (size_t q : unbuilt) seq_active_[q] = seq_funcs_[q] != nullptr;
}

// Places sequence q's locals in its shared memory at the dims `top` (the buckets' top: a graph's
// node keeps its shared memory for the whole bucket) and sets the SeqParams fields that say so:
// the patches of the kernels' fields that hold a local, the copies' and loops' offsets.
void DeviceProgram::place_sequence_locals(size_t q, const std::map<std::string, int64_t>& top) {
  const scheduler::BlockSequence& s = sequences_[q];
  std::vector<size_t> bytes;
  for (const scheduler::SequenceLocal& l : seq_locals_[q])
    bytes.push_back(scheduler::bytes_of(plan_.storages.at(static_cast<size_t>(l.storage)).type, top));
  size_t local_bytes = 0;
  const std::vector<size_t> offset = scheduler::place_sequence_locals(
      seq_locals_[q], bytes, scheduler::kSequenceMaxLocalBytes, &local_bytes);
  seq_shared_[q] = static_cast<unsigned>(s.kernels.size() * sizeof(jit::KParams) + local_bytes);
  std::map<int, int> local;  // storage -> offset
  for (size_t i = 0; i < offset.size(); ++i)
    if (offset[i] != SIZE_MAX) local[seq_locals_[q][i].storage] = static_cast<int>(offset[i]);
  auto offset_of = [&](int storage) {
    auto it = local.find(storage);
    return it == local.end() ? -1 : it->second;
  };
  jit::SeqParams& sp = seq_local_fields_[q];
  std::memset(&sp, 0, sizeof sp);
  for (size_t i = 0; i < s.kernels.size(); ++i) {
    const jit::KernelSpec& k = specs_[s.kernels[i]];
    auto patch = [&](unsigned field, int storage) {
      const int off = offset_of(storage);
      if (off < 0) return;
      if (sp.local_patches >= GRAPE_SEQ_MAX_PATCHES)
        throw Error(ErrorCode::Internal, sequence_label(q) + ": more shared-memory patches than slots");
      sp.local_patch[sp.local_patches++] =
          static_cast<unsigned>(i) << 26 | field << 21 | static_cast<unsigned>(off) / 16;
    };
    for (size_t j = 0; j < k.buffers.size(); ++j)
      patch(static_cast<unsigned>(j), plan_.storage(k.buffers[j]));
    if (plan_.kernel_pred[s.kernels[i]] != ir::kNoValue)
      patch(GRAPE_KMAX_BUFFERS, plan_.storage(plan_.kernel_pred[s.kernels[i]]));
  }
  for (size_t i = 0; i < s.copies.size(); ++i) {
    const scheduler::Step& c = *s.copies[i];
    sp.copy_dst_local[i] = offset_of(c.dst);
    sp.copy_src_local[i] = offset_of(c.src);
    sp.copy_pred_local[i] = c.pred == ir::kNoValue ? -1 : offset_of(plan_.storage(c.pred));
  }
  for (size_t i = 0; i < s.loops.size(); ++i) {
    const scheduler::LoopPlan& l = plan_.loops[s.loops[i]];
    sp.loop_init_local[i] = offset_of(l.init_cond);
    sp.loop_cond_local[i] = offset_of(l.cond);
  }
}

// Each sequence's slots (jit/kernel_abi.h SeqParams) at the binding now: the kernels' parameter
// blocks in device memory (uploaded with the others), the copies' and loops' storages.
void DeviceProgram::fill_sequence_params() {
  for (size_t q = 0; q < sequences_.size(); ++q) {
    const scheduler::BlockSequence& s = sequences_[q];
    jit::SeqParams& sp = seq_params_[q];
    sp = seq_local_fields_[q];  // the shared-memory fields (place_sequence_locals), the rest zero
    for (size_t i = 0; i < s.kernels.size(); ++i)
      sp.kernel[i] =
          reinterpret_cast<const jit::KParams*>(blocks_dev_.ptr() + s.kernels[i] * sizeof(jit::KParams));
    for (size_t i = 0; i < s.copies.size(); ++i) {
      const scheduler::Step& c = *s.copies[i];
      sp.copy_dst[i] = reinterpret_cast<void*>(address(c.dst));
      sp.copy_src[i] = reinterpret_cast<const void*>(address(c.src));
      sp.copy_bytes[i] = bytes(c.dst);
      sp.copy_pred[i] = c.pred == ir::kNoValue
                            ? nullptr
                            : reinterpret_cast<const unsigned char*>(address(plan_.storage(c.pred)));
    }
    for (size_t i = 0; i < s.loops.size(); ++i) {
      const scheduler::LoopPlan& l = plan_.loops[s.loops[i]];
      sp.loop_init[i] = reinterpret_cast<const unsigned char*>(address(l.init_cond));
      sp.loop_cond[i] = reinterpret_cast<const unsigned char*>(address(l.cond));
    }
  }
}

void DeviceProgram::synchronize(std::string_view what) const {
  jit::check(jit::driver().cuStreamSynchronize(stream()), "cuStreamSynchronize", what);
}

void DeviceProgram::use_inputs(const std::vector<Tensor>& inputs) {
  for (size_t i = 0; i < plan_.inputs.size(); ++i) {
    const int storage = plan_.inputs[i];
    if (storage < 0) continue;
    const Tensor& t = inputs.at(i);
    const bool in_place = t.on_device() && t.nbytes() && !written_[static_cast<size_t>(storage)];
    external_[static_cast<size_t>(storage)] =
        in_place ? static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(t.raw())) : 0;
  }
}

void DeviceProgram::upload_inputs(const std::vector<Tensor>& inputs) {
  for (size_t i = 0; i < plan_.inputs.size(); ++i) {
    const Tensor& t = inputs.at(i);
    const int storage = plan_.inputs[i];
    if (!t.nbytes() || storage < 0 || external_[static_cast<size_t>(storage)]) continue;
    const std::string what = "input " + f_.params.at(i).name;
    if (t.on_device())
      jit::check(jit::driver().cuMemcpyDtoDAsync(
                     address(storage), static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(t.raw())),
                     t.nbytes(), stream()),
                 "cuMemcpyDtoDAsync", what);
    else
      jit::check(jit::driver().cuMemcpyHtoDAsync(address(storage), t.raw(), t.nbytes(), stream()),
                 "cuMemcpyHtoDAsync", what);
  }
}

std::vector<Tensor> DeviceProgram::download_outputs() {
  std::vector<Tensor> out;
  for (size_t i = 0; i < plan_.outputs.size(); ++i) {
    const ir::Type& t = f_.type(f_.body.yields.at(i));
    Shape shape;
    for (const auto& d : t.shape) shape.push_back(d.eval(dims_));
    std::vector<Tensor>& pool = output_pool_[i];
    Tensor host;
    for (const Tensor& old : pool)
      if (old.use_count() == 1 && old.dtype() == t.dtype && old.shape() == shape) host = old;
    if (!host.defined()) {
      host = pinned_tensor(t.dtype, shape);
      // Two per output cover a caller that holds the last run's outputs during the next run.
      if (pool.size() >= 2) pool.erase(pool.begin());
      pool.push_back(host);
    }
    if (host.nbytes())
      jit::check(
          jit::driver().cuMemcpyDtoHAsync(host.raw(), address(plan_.outputs[i]), host.nbytes(), stream()),
          "cuMemcpyDtoHAsync", "output " + std::to_string(i));
    out.push_back(host);
  }
  return out;
}

Tensor DeviceProgram::pinned_tensor(DType dtype, const Shape& shape) const {
  Tensor plain(dtype, shape);  // checks the shape; the fallback
  if (plain.nbytes() == 0) return plain;
  try {
    auto buf = std::make_shared<jit::PinnedBuffer>(dev_, plain.nbytes(), "a host copy of an input or output");
    std::memset(buf->data(), 0, plain.nbytes());
    return Tensor::wrap(dtype, shape, buf->data(), buf);
  } catch (const Error&) {
    return plain;  // pinned memory is limited; pageable memory is slower, not wrong
  }
}

void DeviceProgram::set_state(const std::string& name, const Tensor& value) {
  dev_.make_current();
  StateBuffer& s = state_[name];
  size_t bytes = std::max<size_t>(1, value.nbytes());
  if (s.buf.size() != bytes) {  // a new address: graphs that baked the old one are rebuilt
    s.buf = jit::DeviceBuffer();
    s.buf = jit::DeviceBuffer(dev_, bytes, "state " + name);
    ++generation_;
  }
  s.buf.copy_from_host(value.raw(), value.nbytes(), stream());
  s.dtype = value.dtype();
  s.shape = value.shape();
  s.present = true;
  synchronize(f_.name);
}

std::optional<Shape> DeviceProgram::state_shape(const std::string& name) const {
  auto it = state_.find(name);
  if (it == state_.end() || !it->second.present) return std::nullopt;
  return it->second.shape;
}

Tensor DeviceProgram::state(const std::string& name) const {
  auto it = state_.find(name);
  if (it == state_.end() || !it->second.present) return {};
  Tensor t(it->second.dtype, it->second.shape);
  it->second.buf.copy_to_host(t.raw(), t.nbytes(), stream());
  synchronize(f_.name);
  return t;
}

void DeviceProgram::reset_state() {
  for (auto& [name, s] : state_) s.present = false;
}

size_t DeviceProgram::device_bytes() const {
  size_t held = arena_.size() + blocks_dev_.size();
  for (const auto& [n, w] : weights_) held += w.size();
  for (const auto& [n, s] : state_) held += s.buf.size();
  for (const auto& s : scratch_) held += s.size();
  return held;
}

// ---- Executor (the parts every executor shares) ----

Executor::Executor(std::shared_ptr<DeviceProgram> program, const RunControl& control)
    : program_(std::move(program)), control_(control) {
  stats_.compile_ms = program_->compile_ms();
  stats_.kernels_compiled = program_->kernels_compiled();
  stats_.kernels_from_cache = program_->kernels_from_cache();
}

bool Executor::bind(const std::vector<Tensor>& inputs, const std::map<std::string, int64_t>& dims) {
  program_->use_inputs(inputs);
  const bool uploaded = program_->bind(dims);
  program_->timeline_reset();
  stats_.compile_ms = program_->compile_ms();
  stats_.kernels_compiled = program_->kernels_compiled();
  stats_.kernels_from_cache = program_->kernels_from_cache();
  stats_.kernels_tuned = program_->kernels_tuned();
  stats_.kernels_retuned = program_->kernels_retuned();
  stats_.row_variants = program_->row_variants_bound();
  stats_.tuning_ms = program_->tuning_ms();
  return uploaded;
}

void Executor::write_timeline() { program_->timeline_write(); }

Executor::~Executor() = default;

void Executor::set_state(const std::string& name, const Tensor& value) { program_->set_state(name, value); }
std::optional<Shape> Executor::state_shape(const std::string& name) const {
  return program_->state_shape(name);
}
Tensor Executor::state(const std::string& name) const { return program_->state(name); }
void Executor::reset_state() { program_->reset_state(); }
std::string Executor::device_name() const { return program_->device().label(); }
void Executor::set_stream(CUstream stream) { program_->set_stream(stream); }

Tensor Executor::host_tensor(DType dtype, const Shape& shape) {
  return program_->pinned_tensor(dtype, shape);
}

Tensor Executor::device_tensor(DType dtype, const Shape& shape) {
  const jit::Device& dev = program_->device();
  dev.make_current();
  size_t bytes = dtype_size(dtype);
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(bytes, static_cast<size_t>(d), &bytes))
      throw Error(ErrorCode::InvalidArgument,
                  "device tensor of shape " + shape_to_string(shape) + ": negative or too large");
  if (bytes == 0) return Tensor(dtype, shape);
  auto buf = std::make_shared<jit::DeviceBuffer>(dev, bytes, "an input buffer");
  buf->fill_bytes(0, program_->stream());
  program_->synchronize("an input buffer");
  return Tensor::wrap_device(dtype, shape, reinterpret_cast<void*>(static_cast<uintptr_t>(buf->ptr())), buf);
}

}  // namespace grape::cuda
