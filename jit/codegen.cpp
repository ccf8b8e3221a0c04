#include "jit/codegen.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>

#include "jit/emit_context.h"
#include "jit/kernel_source.h"
#include "jit/nvrtc.h"
#include "jit/parallel_compile.h"
#include "jit/sequence_source.h"
#include "scheduler/launch.h"

namespace grape::jit {

std::vector<KernelSpec> emit_kernels(const ir::Function& f, const scheduler::FusionPlan& plan,
                                     const std::string& prefix) {
  std::vector<KernelSpec> out;
  std::string pre = prefix.empty() ? f.name : prefix;
  for (const auto& bp : plan.blocks) {
    for (const auto& g : bp.groups) {
      KernelSpec k;
      // Named after the op that gives the kernel its loops (an attention that stores through a
      // permute is still a matmul).
      const ir::Op named = g.core && g.root->op == ir::Op::Permute ? g.core->op : g.root->op;
      k.name = pre + "_k" + std::to_string(out.size()) + "_" + ir::op_name(named);
      detail::Ctx c(f, g);
      std::string body = detail::emit_kernel_body(c, kKernelSymbol, k.launch);
      body = detail::prune_unused_unravels(std::move(body), c.unravels);
      const std::string glue =
          "// " + std::string(ir::op_name(named)) + ", " + std::to_string(g.ops.size()) + " op(s)\n" + body;
      k.source = assemble_kernel_source(c.templates, glue,
                                        scheduler::kernel_timeline() ? "#define GRAPE_TIMELINE 1\n" : "");
      k.templates = c.templates;
      k.sequence_body = sequence_body(glue, k.launch.threads);
      k.buffers = c.buffers;
      k.num_inputs = c.num_inputs;
      // slice_update: the output is the in-place operand's memory.
      for (const auto& [updated, x] : c.in_place_updates)
        k.aliases.push_back({static_cast<size_t>(c.buf.at(updated)), static_cast<size_t>(c.buf.at(x))});
      k.pred = g.pred;
      k.launch.work = static_cast<int>(c.num_inputs);
      k.ops = g.ops;
      k.root = g.root;
      k.extra = c.extra;
      k.block = bp.block;
      // GRAPE_DUMP_KERNELS=DIR: each kernel's source as DIR/<name>.cu, for reading and profiling.
      if (const char* dir = std::getenv("GRAPE_DUMP_KERNELS"); dir && *dir)
        std::ofstream(std::string(dir) + "/" + k.name + ".cu") << k.source;
      out.push_back(std::move(k));
    }
  }
  return out;
}

CompileReport compile_module(const ir::Module& m, const std::vector<std::string>& archs,
                             const std::function<std::string(Span)>& locate,
                             std::vector<BundledKernel>* bundle,
                             const std::vector<std::string>& extra_sources,
                             const std::vector<int64_t>& bundle_rows) {
  CompileReport rep;
  rep.archs = archs;
  auto where = [&](Span s) {
    if (locate && s.valid()) return locate(s);
    return "line " + std::to_string(s.begin.line) + ":" + std::to_string(s.begin.column);
  };
  // Every (kernel, arch) pair; compile_parallel builds identical sources once.
  struct Item {
    std::string what;
  };
  std::map<std::string, std::pair<std::vector<CompileJob>, std::vector<Item>>> per_arch;
  // With a bundle, the matrix products' wide variants too (runtime/cuda/device_program.cpp builds
  // them at first use, for gemm_wide_target: sm_90a on Hopper), so a session without NVRTC gets
  // the same kernels as one with it. Keyed by the variant's own target.
  std::map<std::string, std::pair<std::vector<CompileJob>, std::vector<Item>>> wide;
  // With a bundle and row counts, the row-count variants (for the kernel's own target).
  std::map<std::string, std::pair<std::vector<CompileJob>, std::vector<Item>>> rows;
  auto describe = [&](const ir::Function& f, const KernelSpec& k, const std::string& suffix,
                      const std::string& arch) {
    return "entry '" + f.name + "', kernel " + k.name + suffix + " (" + ir::op_name(k.root->op) + " at " +
           where(k.root->loc) + "), " + arch + ": ";
  };
  for (const auto& f : m.functions) {
    std::vector<KernelSpec> ks;
    std::vector<std::string> sequences;
    try {
      const scheduler::FusionPlan fusion = scheduler::plan_fusion(f);
      ks = emit_kernels(f, fusion);
      sequences = block_sequence_sources(f, fusion, ks);
    } catch (const std::exception& e) {
      rep.errors.push_back("entry '" + f.name + "': code generation failed: " + e.what());
      continue;
    }
    rep.entries.push_back({f.name, ks.size(), sequences.size()});
    // The block sequences the executors would build (scheduler/sequence.h), so that a bundle
    // holds them and `grape compile` checks them.
    for (size_t i = 0; i < sequences.size(); ++i) {
      if (const char* dir = std::getenv("GRAPE_DUMP_KERNELS"); dir && *dir)
        std::ofstream(std::string(dir) + "/" + f.name + "_sequence" + std::to_string(i) + ".cu")
            << sequences[i];
      for (const auto& arch : archs) {
        auto& [jobs, items] = per_arch[arch];
        jobs.push_back({sequences[i], f.name + "_sequence" + std::to_string(i)});
        items.push_back({"entry '" + f.name + "', block sequence " + std::to_string(i) + ", " + arch + ": "});
      }
    }
    for (const auto& k : ks) {
      for (const auto& arch : archs) {
        auto& [jobs, items] = per_arch[arch];
        jobs.push_back({k.source, k.name});
        items.push_back({describe(f, k, "", arch)});
        if (bundle && k.launch.kind == LaunchRule::MatrixProduct) {
          const std::string target = scheduler::gemm_wide_target(arch);
          auto& [wjobs, witems] = wide[target];
          wjobs.push_back({wide_variant_source(k.source), k.name + kWideSuffix});
          witems.push_back({describe(f, k, kWideSuffix, target)});
          if (k.launch.has_row_variants()) {
            auto& [rjobs, ritems] = rows[arch];
            for (int64_t r : bundle_rows) {
              const std::string suffix = "_rows" + std::to_string(r);
              rjobs.push_back({rows_variant_source(k.source, r), k.name + suffix});
              ritems.push_back({describe(f, k, suffix, arch)});
            }
          }
        }
      }
    }
  }
  // One pool over every target's jobs and the wide variants (compile_parallel builds each distinct
  // (source, target) pair once, the longest first): a pool per target, one after another, made
  // each pool's longest kernel a serial pole and left the cores idle at every switch.
  std::vector<CompileJob> jobs;
  std::vector<Item> items;
  enum class Kind { Base, Wide, Rows };
  std::vector<Kind> kinds;
  auto add = [&](std::vector<CompileJob>& js, std::vector<Item>& its, const std::string& target, Kind kind) {
    for (size_t i = 0; i < js.size(); ++i) {
      js[i].arch = target;
      jobs.push_back(std::move(js[i]));
      items.push_back(std::move(its[i]));
      kinds.push_back(kind);
    }
  };
  for (const auto& arch : archs) {
    auto& [ajobs, aitems] = per_arch[arch];
    for (const std::string& source : extra_sources) {
      ajobs.push_back({source, "executor kernels"});
      aitems.push_back({"the executors' own kernels, " + arch + ": "});
    }
    add(ajobs, aitems, arch, Kind::Base);
  }
  for (auto& [target, jobs_items] : wide) add(jobs_items.first, jobs_items.second, target, Kind::Wide);
  for (auto& [target, jobs_items] : rows) add(jobs_items.first, jobs_items.second, target, Kind::Rows);
  const std::vector<CompileOutcome> outs = compile_parallel(jobs, "", nullptr);
  std::set<std::pair<std::string, std::string>> bundled;  // (target, source)
  for (size_t i = 0; i < outs.size(); ++i) {
    std::string problem = outs[i].error;
    if (problem.empty() && outs[i].result.has_warnings()) problem = "warnings:\n" + outs[i].result.log;
    if (!problem.empty()) {
      rep.errors.push_back(items[i].what + problem);
      continue;
    }
    ++(kinds[i] == Kind::Wide   ? rep.wide_compiled
       : kinds[i] == Kind::Rows ? rep.rows_compiled
                                : rep.compiled);
    const std::string& arch = jobs[i].arch;
    if (bundle && bundled.emplace(arch, jobs[i].source).second)
      bundle->push_back(
          {bundle_key(jobs[i].source, arch, {}), arch, outs[i].result.cubin, outs[i].result.ptx});
  }
  return rep;
}

}  // namespace grape::jit
