#include "runtime/cuda/graph_executor.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <list>

#include "base/error.h"
#include "jit/cuda_driver.h"
#include "runtime/cuda/device_program.h"
#include "scheduler/launch.h"

namespace grape::cuda {
namespace {

// One instantiated graph: the graph of a shape bucket, and the binding its nodes hold now.
struct Built {
  std::string bucket;
  std::map<std::string, int64_t> dims;
  uint64_t generation = 0;
  std::vector<unsigned char> blocks;  // the parameter blocks its kernel nodes hold (by value)
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  // Every kernel node and conditional handle in the order add_steps creates them: an update walks
  // the plan in the same order and rewrites node k with what build would have given it.
  std::vector<CUgraphNode> nodes;
  std::vector<CUgraphConditionalHandle> handles;
  // Device memory instantiating and uploading it took (free memory before and after), at least
  // the bytes of its kernel nodes' parameters.
  size_t bytes = 0;
  int64_t kernel_nodes = 0;  // outside loops (loop bodies are counted per trip after a run)

  Built() = default;
  Built(const Built&) = delete;
  Built& operator=(const Built&) = delete;
  ~Built() {
    if (exec) jit::driver().cuGraphExecDestroy(exec);
    if (graph) jit::driver().cuGraphDestroy(graph);
  }
  bool holds(const DeviceProgram& p) const {
    return dims == p.dims() && generation == p.generation() && blocks == p.host_blocks();
  }
};

// Per loop of the plan, on the device: the trip counter and the flag a loop without a bound sets
// when it reaches the run-time cap.
struct LoopCounters {
  unsigned long long trips;
  unsigned int capped;
  unsigned int pad;
};

// A predicated region becomes a conditional IF node from this many steps on. Its gate kernel and
// node cost about as much as two or three skipped kernels, on every run where the predicate is
// true; from 32 steps on that is a few percent of the region's own time, and a false predicate
// saves all of it. GRAPE_GRAPH_IF_MIN_STEPS overrides it (tests; 0 turns IF regions off).
constexpr size_t kIfRegionMinSteps = 32;
size_t if_region_min_steps() {
  const int n =
      scheduler::env_knob("GRAPE_GRAPH_IF_MIN_STEPS", 0, 1 << 20, static_cast<int>(kIfRegionMinSteps));
  return n == 0 ? SIZE_MAX : static_cast<size_t>(n);
}

static_assert(sizeof(CUDA_KERNEL_NODE_PARAMS) == sizeof(CUDA_KERNEL_NODE_PARAMS_v3),
              "a kernel node's parameters are copied from the v2 layout into CUgraphNodeParams");

}  // namespace

struct GraphExecutor::Impl {
  DeviceProgram& p;
  RunStats& stats;
  const RunControl& control;
  size_t budget;  // GraphOptions::budget()
  jit::Event start, stop;
  jit::DeviceBuffer counters;
  jit::PinnedBuffer counters_host;
  std::list<std::unique_ptr<Built>> graphs;  // most recently used first
  std::vector<int64_t> body_kernels;         // per loop: kernel nodes in one trip
  // While add_steps runs: the graph it builds (nodes are created and recorded) or, when
  // `updating`, the graph whose recorded nodes it rewrites (nothing is created).
  Built* target = nullptr;
  bool updating = false;
  // Consecutive kernel nodes are joined by programmatic edges (programmatic_launch).
  bool programmatic = false;
  size_t if_min_steps = if_region_min_steps();
  // The fewest kernels a block sequence without a loop needs to be one node (add_steps says why):
  // kStraightSequenceMinKernels, or GRAPE_GRAPH_SEQUENCES=all (every sequence) / loops (none
  // without a loop), for measurements.
  static constexpr size_t kStraightSequenceMinKernels = 8;
  size_t straight_min_kernels = [] {
    const char* v = std::getenv("GRAPE_GRAPH_SEQUENCES");
    const std::string how = v ? v : "";
    return how == "all" ? size_t{0} : how == "loops" ? SIZE_MAX : kStraightSequenceMinKernels;
  }();
  size_t next_node = 0, next_handle = 0;

  Impl(DeviceProgram& program, RunStats& s, const RunControl& c, const GraphOptions& o)
      : p(program), stats(s), control(c), budget(o.budget()), start(p.device()), stop(p.device()) {
    programmatic = programmatic_launch(p.device(), "GRAPE_GRAPH_PDL");
    size_t n = std::max<size_t>(1, p.plan().loops.size());
    counters = jit::DeviceBuffer(p.device(), n * sizeof(LoopCounters), "loop trip counters");
    counters_host = jit::PinnedBuffer(p.device(), n * sizeof(LoopCounters), "loop trip counters");
    body_kernels.assign(p.plan().loops.size(), 0);
  }

  CUdeviceptr counter(size_t loop) const { return counters.ptr() + loop * sizeof(LoopCounters); }

  // Adds a kernel node after `prev` (build), or rewrites the next recorded one (update). `what()`
  // names the node in an error; it is called only then (an update rewrites every node).
  template <class What>
  CUgraphNode kernel_node(CUgraph g, CUgraphNode prev, CUfunction fn, unsigned grid, unsigned block,
                          unsigned shared, void** args, const What& what, unsigned cluster = 1) {
    CUDA_KERNEL_NODE_PARAMS kp;
    std::memset(&kp, 0, sizeof kp);
    kp.func = fn;
    kp.gridDimX = grid;
    kp.gridDimY = kp.gridDimZ = 1;
    kp.blockDimX = block;
    kp.blockDimY = kp.blockDimZ = 1;
    kp.sharedMemBytes = shared;
    kp.kernelParams = args;
    const jit::Driver& d = jit::driver();
    if (updating) {
      if (next_node >= target->nodes.size())
        throw Error(ErrorCode::Internal, "graph update: the plan has more kernel nodes than the graph");
      CUgraphNode node = target->nodes[next_node++];
      CUresult r = d.cuGraphExecKernelNodeSetParams(target->exec, node, &kp);
      if (r != CUDA_SUCCESS) jit::check(r, "cuGraphExecKernelNodeSetParams", what());
      return node;
    }
    CUgraphNode node = nullptr;
    CUresult r;
    if (programmatic && prev && !target->nodes.empty() && prev == target->nodes.back()) {
      // prev is a kernel node (the last one created is always the chain's last kernel): this
      // kernel may launch as prev's blocks exit, and waits in GRAPE_GRID_WAIT until prev is done.
      CUgraphNodeParams np;
      std::memset(&np, 0, sizeof np);
      np.type = CU_GRAPH_NODE_TYPE_KERNEL;
      std::memcpy(&np.kernel, &kp, sizeof kp);  // the v3 layout begins with the v2 fields
      CUgraphEdgeData edge;
      std::memset(&edge, 0, sizeof edge);
      edge.from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
      edge.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
      r = d.cuGraphAddNode(&node, g, &prev, &edge, 1, &np);
      if (r != CUDA_SUCCESS) jit::check(r, "cuGraphAddNode (kernel, programmatic edge)", what());
    } else {
      r = d.cuGraphAddKernelNode(&node, g, prev ? &prev : nullptr, prev ? 1 : 0, &kp);
      if (r != CUDA_SUCCESS) jit::check(r, "cuGraphAddKernelNode", what());
    }
    if (cluster > 1) {
      // The blocks of a thread-block cluster (LaunchDims::cluster): fixed for the node's life; an
      // update changes only its parameters, and a bucket's tuning decision does not change.
      CUlaunchAttributeValue v;
      std::memset(&v, 0, sizeof v);
      v.clusterDim.x = cluster;
      v.clusterDim.y = v.clusterDim.z = 1;
      if (!d.cuGraphKernelNodeSetAttribute)
        throw Error(ErrorCode::Unsupported,
                    "the CUDA driver cannot set a graph node's cluster size (" + what() + ")");
      r = d.cuGraphKernelNodeSetAttribute(node, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &v);
      if (r != CUDA_SUCCESS) jit::check(r, "cuGraphKernelNodeSetAttribute (cluster)", what());
    }
    target->nodes.push_back(node);
    return node;
  }

  // Appends steps [begin, end) of `steps` (all of them by default) to `g` as a chain after `prev`;
  // returns the last node. `kernels` counts the kernel nodes added to `g` itself.
  // Predicated regions of at least if_min_steps steps become conditional IF nodes (not inside
  // one: `in_region`).
  CUgraphNode add_steps(CUgraph g, const std::vector<scheduler::Step>& steps, CUgraphNode prev,
                        int64_t& kernels, size_t begin = 0, size_t end = SIZE_MAX, bool in_region = false) {
    end = std::min(end, steps.size());
    std::vector<scheduler::PredicatedRegion> regions;
    if (!in_region) regions = p.plan().predicated_regions(steps, begin, end, if_min_steps);
    size_t next_region = 0;
    for (size_t i = begin; i < end; ++i) {
      if (next_region < regions.size() && regions[next_region].begin == i) {
        const scheduler::PredicatedRegion& r = regions[next_region++];
        prev = add_if_region(g, steps, r, prev, kernels);
        i = r.end - 1;
        continue;
      }
      // A block sequence (scheduler/sequence.h) holding a device loop: one node of one block for
      // all its steps and trips, instead of a WHILE node with its body's nodes. Straight-line
      // sequences only when long: in a graph with programmatic edges a node costs about a
      // microsecond, and a short run of kernels that alone would use up to four blocks each is
      // no faster done one pass after another by one block (generate, whose straight sequences
      // hold 2-6 kernels: 86.5 ms as nodes, 88.4 as sequences, run 125), while a long chain of
      // steps that each read what the last one wrote is.
      if (const int q = p.sequence_at(steps, i);
          q >= 0 &&
          (!p.sequence(static_cast<size_t>(q)).loops.empty() ||
           p.sequence(static_cast<size_t>(q)).kernels.size() >= straight_min_kernels) &&
          p.sequence(static_cast<size_t>(q)).end <= end) {
        const size_t n = static_cast<size_t>(q);
        void* args[] = {const_cast<jit::SeqParams*>(&p.sequence_params(n))};  // by value
        prev = kernel_node(g, prev, p.sequence_function(n), 1, static_cast<unsigned>(p.sequence(n).threads),
                           p.sequence_shared_bytes(n), args, [&] { return p.sequence_label(n); });
        ++kernels;
        i = p.sequence(n).end - 1;
        continue;
      }
      const scheduler::Step& s = steps[i];
      switch (s.kind) {
        case scheduler::Step::Kind::Launch: {
          const DeviceProgram::Launch& l = p.launch(s.index);
          void* args[] = {const_cast<jit::KParams*>(l.params)};  // by value: copied into the node
          prev = kernel_node(
              g, prev, l.function, l.grid, l.block, l.shared_bytes, args,
              [&] { return p.kernel_label(s.index); }, static_cast<unsigned>(l.dims.cluster));
          ++kernels;
          break;
        }
        case scheduler::Step::Kind::Copy: {
          // A copy of 0 bytes keeps its node: the topology must not depend on the dims.
          size_t bytes = p.bytes(s.dst);
          CUdeviceptr dst = p.address(s.dst), src = p.address(s.src);
          CUdeviceptr pred = s.pred == ir::kNoValue ? 0 : p.address(p.plan().storage(s.pred));
          unsigned long long n = bytes;
          void* args[] = {&dst, &src, &n, &pred};
          unsigned grid = static_cast<unsigned>(std::min<size_t>(1024, (bytes / 16 + 255) / 256 + 1));
          prev = kernel_node(g, prev, p.control().copy, grid, 256, 0, args,
                             [&] { return std::string(s.why) + " (" + p.where(s.op) + ")"; });
          ++kernels;
          break;
        }
        case scheduler::Step::Kind::Loop: prev = add_loop(g, s.index, prev, kernels); break;
      }
    }
    return prev;
  }

  // The handle of the next conditional node: created on `g` and recorded (build), or the recorded
  // one (update). Created before the kernel that sets it is added.
  CUgraphConditionalHandle conditional_handle(CUgraph g, const std::string& what) {
    if (updating) return target->handles.at(next_handle++);
    CUgraphConditionalHandle handle = 0;
    jit::check(jit::driver().cuGraphConditionalHandleCreate(&handle, g, p.device().context(), 0, 0),
               "cuGraphConditionalHandleCreate", what);
    target->handles.push_back(handle);
    return handle;
  }

  // A conditional node of `type` after `prev` (build only; an update rewrites the nodes of its
  // body and keeps the node). Returns the body graph to fill, or null when updating.
  CUgraph conditional_node(CUgraph g, CUgraphNode prev, CUgraphConditionalHandle handle,
                           CUgraphConditionalNodeType type, const std::string& what, CUgraphNode& node) {
    node = nullptr;
    if (updating) return nullptr;
    CUgraphNodeParams np;
    std::memset(&np, 0, sizeof np);
    np.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    np.conditional.handle = handle;
    np.conditional.type = type;
    np.conditional.size = 1;
    np.conditional.ctx = p.device().context();  // must be the handle's context (null is refused)
    jit::check(jit::driver().cuGraphAddNode(&node, g, &prev, nullptr, 1, &np),
               type == CU_GRAPH_COND_TYPE_WHILE ? "cuGraphAddNode (conditional WHILE)"
                                                : "cuGraphAddNode (conditional IF)",
               what);
    return np.conditional.phGraph_out[0];
  }

  // A predicated region as a conditional IF node: grape_if_gate sets its handle from the
  // predicate, so a false predicate skips every node of the region (its kernels would each have
  // launched and returned at once). The region's kernels count as run either way, as eager's do.
  CUgraphNode add_if_region(CUgraph g, const std::vector<scheduler::Step>& steps,
                            const scheduler::PredicatedRegion& r, CUgraphNode prev, int64_t& kernels) {
    const std::string what = "the predicated steps of " + p.where(steps[r.begin].op);
    CUgraphConditionalHandle handle = conditional_handle(g, what);
    CUdeviceptr pred = p.address(p.plan().storage(r.pred));
    void* args[] = {&handle, &pred};
    prev = kernel_node(g, prev, p.control().if_gate, 1, 1, 0, args, [&] { return what + " (gate)"; });
    ++kernels;
    CUgraphNode node = nullptr;
    CUgraph body = conditional_node(g, prev, handle, CU_GRAPH_COND_TYPE_IF, what, node);
    add_steps(body, steps, nullptr, kernels, r.begin, r.end, true);
    return node;
  }

  CUgraphNode add_loop(CUgraph g, size_t index, CUgraphNode prev, int64_t& kernels) {
    const scheduler::LoopPlan& l = p.plan().loops[index];
    std::string what = "the loop " + p.where(l.op);
    CUgraphConditionalHandle handle = conditional_handle(g, what);
    // A loop without a bound gets the session's trip cap (fixed for the session's life, so the
    // graph may keep it), passed as a negative bound (see grape_loop_next).
    long long max = l.max_trips >= 0 ? l.max_trips : -control.max_loop_trips();
    CUdeviceptr init = p.address(l.init_cond), cond = p.address(l.cond), trips = counter(index);
    CUdeviceptr capped = trips + offsetof(LoopCounters, capped);
    void* enter_args[] = {&handle, &init, &trips, &max};
    prev =
        kernel_node(g, prev, p.control().loop_enter, 1, 1, 0, enter_args, [&] { return what + " (entry)"; });
    ++kernels;
    CUgraphNode node = nullptr;
    CUgraph body = conditional_node(g, prev, handle, CU_GRAPH_COND_TYPE_WHILE, what, node);
    int64_t in_body = 0;
    CUgraphNode last = add_steps(body, l.body, nullptr, in_body);
    void* next_args[] = {&handle, &cond, &trips, &max, &capped};
    kernel_node(body, last, p.control().loop_next, 1, 1, 0, next_args, [&] { return what + " (condition)"; });
    body_kernels[index] = in_body + 1;
    return node;
  }

  // True if a loop of `steps` (or nested in one) has no `max`, so the trip cap may stop it.
  bool may_hit_cap(const std::vector<scheduler::Step>& steps, size_t end) const {
    for (size_t i = 0; i < std::min(end, steps.size()); ++i) {
      if (steps[i].kind != scheduler::Step::Kind::Loop) continue;
      const scheduler::LoopPlan& l = p.plan().loops[steps[i].index];
      if (l.max_trips < 0 || may_hit_cap(l.body, SIZE_MAX)) return true;
    }
    return false;
  }

  // The commit phase (the steps from the plan's first state write on) under a conditional IF
  // node whose handle grape_commit_gate sets: a run whose loop reached the trip cap ends with an
  // error and must leave the states as they were, as the eager executor does (it stops on the
  // host before the commit phase). Only where a loop before that phase has no `max`.
  CUgraphNode add_gated_commit(CUgraph g, CUgraphNode prev, int64_t& kernels, size_t commit) {
    const auto& steps = p.plan().steps;
    const std::string what = "the commit phase of " + p.function().name;
    CUgraphConditionalHandle handle = conditional_handle(g, what);
    CUdeviceptr capped = counters.ptr() + offsetof(LoopCounters, capped);
    unsigned loops = static_cast<unsigned>(p.plan().loops.size()), stride = sizeof(LoopCounters) / 4;
    void* args[] = {&handle, &capped, &loops, &stride};
    prev = kernel_node(g, prev, p.control().commit_gate, 1, 1, 0, args, [&] { return what + " (gate)"; });
    ++kernels;
    CUgraphNode node = nullptr;
    CUgraph body = conditional_node(g, prev, handle, CU_GRAPH_COND_TYPE_IF, what, node);
    add_steps(body, steps, nullptr, kernels, commit);
    return node;
  }

  // Walks the plan: builds target's graph, or (updating) rewrites its nodes for the binding now.
  void walk_plan(Built& b) {
    target = &b;
    next_node = next_handle = 0;
    b.kernel_nodes = 0;
    const auto& steps = p.plan().steps;
    const size_t commit = p.plan().first_state_write;
    if (commit > 0 && commit < steps.size() && may_hit_cap(steps, commit)) {
      CUgraphNode last = add_steps(b.graph, steps, nullptr, b.kernel_nodes, 0, commit);
      add_gated_commit(b.graph, last, b.kernel_nodes, commit);
    } else {
      add_steps(b.graph, steps, nullptr, b.kernel_nodes);
    }
    if (updating && (next_node != b.nodes.size() || next_handle != b.handles.size()))
      throw Error(ErrorCode::Internal, "graph update: the plan has fewer nodes than the graph");
    b.dims = p.dims();
    b.generation = p.generation();
    b.blocks = p.host_blocks();
  }

  size_t free_device_memory() const {
    size_t free = 0, total = 0;
    jit::check(jit::driver().cuMemGetInfo(&free, &total), "cuMemGetInfo", "measuring a graph's memory");
    return free;
  }

  std::unique_ptr<Built> build(const std::string& bucket) {
    auto t0 = std::chrono::steady_clock::now();
    auto b = std::make_unique<Built>();
    b->bucket = bucket;
    const jit::Driver& d = jit::driver();
    jit::check(d.cuGraphCreate(&b->graph, 0), "cuGraphCreate", "the graph of " + p.function().name);
    updating = false;
    walk_plan(*b);
    auto instantiate = [&] {
      size_t before = free_device_memory();
      CUresult r = d.cuGraphInstantiate(&b->exec, b->graph, 0);
      // Uploading now moves the first launch's setup out of the run and makes the memory count.
      if (r == CUDA_SUCCESS) r = d.cuGraphUpload(b->exec, p.stream());
      size_t after = free_device_memory();
      // The driver hands out device memory in large pages, so a small graph often takes none that
      // shows; it holds at least every kernel node's parameters.
      size_t params = b->nodes.size() * sizeof(jit::KParams);
      b->bytes = std::max(before > after ? before - after : 0, params);
      return r;
    };
    CUresult r = instantiate();
    if (r == CUDA_ERROR_OUT_OF_MEMORY && !graphs.empty()) {
      if (b->exec) d.cuGraphExecDestroy(b->exec);
      b->exec = nullptr;
      graphs.clear();  // evict every other graph and try once more
      r = instantiate();
    }
    jit::check(r, "cuGraphInstantiate", "the graph of " + p.function().name);
    stats.graph_build_ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return b;
  }

  // Rewrites g's nodes for the binding now; false when the driver refused (the caller rebuilds).
  bool update(Built& g) {
    auto t0 = std::chrono::steady_clock::now();
    updating = true;
    bool ok = true;
    try {
      walk_plan(g);
    } catch (const Error&) {
      ok = false;
    }
    updating = false;
    stats.graph_build_ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return ok;
  }

  size_t held_bytes() const {
    size_t n = 0;
    for (const auto& g : graphs) n += g->bytes;
    return n;
  }

  Built& graph_for_binding() {
    const std::string bucket = p.buckets().key(p.dims());
    stats.graph_updates = 0;
    for (auto it = graphs.begin(); it != graphs.end(); ++it) {
      if ((*it)->bucket != bucket) continue;
      graphs.splice(graphs.begin(), graphs, it);
      Built& g = *graphs.front();
      // The kernel nodes hold their parameter blocks by value, so the graph serves the binding it
      // was last set up for; any other binding of the bucket (dims, a state given a new buffer,
      // the arena regrown) rewrites them.
      if (g.holds(p)) return g;
      if (update(g)) {
        stats.graph_updates = 1;
        return g;
      }
      graphs.pop_front();  // refused: built again below
      break;
    }
    graphs.push_front(build(bucket));
    // Least recently used first, never the one just built.
    while (graphs.size() > 1 && (graphs.size() > kMaxGraphs || held_bytes() > budget)) graphs.pop_back();
    return *graphs.front();
  }
};

GraphExecutor::GraphExecutor(std::shared_ptr<DeviceProgram> program, const RunControl& control,
                             const GraphOptions& options)
    : Executor(std::move(program), control) {
  const jit::Driver& d = jit::driver();
  if (!d.has_graphs())
    throw Error(ErrorCode::Unsupported,
                "executor \"graph\" needs CUDA graphs with conditional nodes (a CUDA 12.4 or "
                "newer driver); the driver " +
                    d.library_path + " lacks " + d.missing_graph_symbol);
  impl_ = std::make_unique<Impl>(*program_, stats_, control_, options);
}

GraphExecutor::~GraphExecutor() = default;

std::vector<Tensor> GraphExecutor::run(const std::vector<Tensor>& inputs,
                                       const std::map<std::string, int64_t>& dims) {
  DeviceProgram& p = *program_;
  Impl& m = *impl_;
  p.device().make_current();
  stats_.kernels = stats_.host_syncs = stats_.copies = stats_.graph_launches = 0;
  stats_.param_uploads = bind(inputs, dims) ? 1 : 0;
  Built& g = m.graph_for_binding();
  // A launched graph cannot be stopped: an interrupt or a deadline counts only up to here, and the
  // graph's loops are bounded by the trip cap alone (docs/execution.md).
  control_.check();
  const auto& loops = p.plan().loops;
  m.start.record(p.stream());
  if (!loops.empty())
    jit::check(jit::driver().cuMemsetD8Async(m.counters.ptr(), 0, m.counters.size(), p.stream()),
               "cuMemsetD8Async", "loop trip counters");
  p.upload_inputs(inputs);
  std::vector<Tensor> out;
  try {
    jit::check(jit::driver().cuGraphLaunch(g.exec, p.stream()), "cuGraphLaunch",
               "the graph of " + p.function().name);
    ++stats_.graph_launches;
    out = p.download_outputs();
    if (!loops.empty())
      jit::check(jit::driver().cuMemcpyDtoHAsync(m.counters_host.data(), m.counters.ptr(), m.counters.size(),
                                                 p.stream()),
                 "cuMemcpyDtoHAsync", "loop trip counters");
    m.stop.record(p.stream());
    m.stop.synchronize();
  } catch (...) {
    try {
      p.device().synchronize();
    } catch (const Error&) {
    }
    throw;
  }
  stats_.device_ms = m.stop.elapsed_ms_since(m.start);
  stats_.device_bytes = p.device_bytes();
  stats_.graphs = m.graphs.size();
  stats_.graph_bytes = m.held_bytes();
  // Kernels run: the graph's top level plus, per loop, its body times the trips of its last
  // execution (exact unless loops nest).
  stats_.kernels = g.kernel_nodes;
  const auto* c = static_cast<const LoopCounters*>(m.counters_host.data());
  for (size_t i = 0; i < loops.size(); ++i) {
    stats_.kernels += static_cast<int64_t>(c[i].trips) * m.body_kernels[i];
    if (c[i].capped) p.throw_loop_cap(loops[i].op, control_);
  }
  return out;
}

}  // namespace grape::cuda
