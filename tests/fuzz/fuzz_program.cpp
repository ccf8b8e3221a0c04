// libFuzzer target for whole programs: random well-formed and nearly well-formed .grp programs
// (grammar-aware mutations, tests/fuzz/program_mutator.h, of seeds from examples/, the golden
// catalogue and the control-flow cases) are compiled and, when small, run on the CPU reference
// with random inputs, twice per session (state carries between calls). Any internal error
// (ErrorCode::Internal), any exception other than grape::Error (the C API turns those into
// internal errors too), a crash or a sanitizer report is a finding; the scripts
// also bound each input to 10 s and 1 GB (tests/fuzz/fuzz_program.flags). The slowest input of a
// grown corpus takes 1.2 s here (2 cores, ASan/UBSan); libFuzzer's timeout is wall-clock time, so
// 5 s fired on a 0.2 s input while the machine was busy with other work.
//
// The compile limits are lowered (fewer ops, unrolled iterations, tensor elements and loop
// trips than the defaults) so that an input that only reaches a limit, a legitimate error, stays
// far below the time and memory bounds in an instrumented build: what the bounds catch is then
// work that no limit bounds. The limits bound each tensor, not the work of a run: a matmul of two
// 1000 x 1000 intermediates (15 s a call under the fuzzer's instrumentation), or a 900-trip loop
// around a smaller one, is a legitimate program that libFuzzer reported as a timeout. So every
// call has a deadline (SessionOptions::timeout_seconds; the CPU reference checks it before each op
// and loop trip), and an entry runs only when each of its ops is cheap (max_op_work): the deadline
// cannot stop an op in progress.
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "ir/ir.h"
#include "runtime/model.h"
#include "tests/fuzz/program_mutator.h"

namespace {

constexpr int64_t kMaxRunElements = 1 << 16;  // weights or one input above this: compile only
constexpr size_t kMaxEntriesRun = 3;
// An entry with an op of more element operations than this (max_op_work) is compiled only: about
// 0.15 s in the instrumented build.
constexpr double kMaxOpWork = 1e7;
// Each call's deadline; an interrupted call is no finding. At most kMaxEntriesRun x 2 calls of
// about this plus one op each stay within the 10 s of fuzz_program.flags.
constexpr double kRunTimeoutSeconds = 1.0;
constexpr int64_t kSymbolValue = 3;  // make_inputs binds each symbolic dim to 1, 2 or 3

[[noreturn]] void finding(const std::string& what, const std::string& program) {
  std::fprintf(stderr, "==== fuzz_program finding: %s\n---- program ----\n%s\n---- end ----\n", what.c_str(),
               program.c_str());
  std::abort();
}

// By the code, not the text: a diagnostic quotes the source line, which may say "internal error".
void check_error(const grape::Error& e, const std::string& program) {
  if (e.code() == grape::ErrorCode::Internal) finding(std::string("internal error: ") + e.what(), program);
}

grape::ModelOptions fuzz_options() {
  grape::ModelOptions o;
  o.limits.max_ops = 20'000;
  o.limits.max_unrolled_iterations = 2'000;
  o.limits.max_tensor_elements = int64_t{1} << 22;
  o.limits.max_program_elements = int64_t{1} << 26;  // random weights of at most 256 MiB
  o.limits.max_loop_trips = 1'000;
  o.limits.max_weights = 1'000;
  return o;
}

// `d` with every symbol at kSymbolValue; -1 when that cannot be evaluated.
double dim_value(const grape::ir::Dim& d, const std::map<std::string, int64_t>& symbols) {
  try {
    return static_cast<double>(d.eval(symbols));
  } catch (const std::exception&) {
    return -1;
  }
}

// Elements of `type` with every symbol at kSymbolValue; -1 when that cannot be evaluated.
double elements(const grape::ir::Type& type, const std::map<std::string, int64_t>& symbols) {
  double n = 1;
  for (const grape::ir::Dim& d : type.shape) {
    const double v = dim_value(d, symbols);
    if (v < 0) return -1;
    n *= v;
  }
  return n;
}

// The most element operations of any one op of `block` (loop bodies included) of `f`: its operand
// and result elements, a contraction's times its contracted length, top-k's times a sort's log
// factor. -1 when some shape cannot be evaluated.
double max_op_work(const grape::ir::Function& f, const grape::ir::Block& block,
                   const std::map<std::string, int64_t>& symbols) {
  double most = 0;
  for (const grape::ir::Operation& op : block.ops) {
    double work = 0;
    for (const auto* ids : {&op.operands, &op.results})
      for (grape::ir::ValueId v : *ids) {
        const double n = elements(f.type(v), symbols);
        if (n < 0) return -1;
        work += n;
      }
    if ((op.op == grape::ir::Op::MatMul || op.op == grape::ir::Op::Linear) && !op.operands.empty()) {
      const grape::ir::Type& a = f.type(op.operands[0]);
      const double k = a.shape.empty() ? 1 : dim_value(a.shape.back(), symbols);
      if (k < 0) return -1;
      work *= std::max(k, 1.0);
    } else if (op.op == grape::ir::Op::TopK) {
      work *= 32;
    }
    most = std::max(most, work);
    if (op.body) {
      const double body = max_op_work(f, *op.body, symbols);
      if (body < 0) return -1;
      most = std::max(most, body);
    }
  }
  return most;
}

// Whether every op of entry `name` is cheap enough to run (max_op_work within kMaxOpWork).
bool cheap_to_run(const grape::Model& model, const std::string& name) {
  const grape::ir::Function* f = model.module().find(name);
  if (!f) return false;
  std::map<std::string, int64_t> symbols;
  for (const std::string& s : f->symbols) symbols[s] = kSymbolValue;
  const double work = max_op_work(*f, f->body, symbols);
  return work >= 0 && work <= kMaxOpWork;
}

// Random inputs for `sig`; false when a dim is not a constant or a plain symbol, or too large.
bool make_inputs(const std::vector<grape::TensorSignature>& sig, std::mt19937_64& rng,
                 std::vector<std::pair<std::string, grape::Tensor>>& out) {
  std::map<std::string, int64_t> symbols;
  for (const auto& s : sig) {
    grape::Shape shape;
    int64_t n = 1;
    for (size_t d = 0; d < s.dims.size(); ++d) {
      int64_t v = s.fixed[d];
      if (v < 0) {
        const std::string& name = s.dims[d];
        if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
          return false;
        for (char c : name)
          if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
        auto it = symbols.emplace(name, static_cast<int64_t>(1 + rng() % 3)).first;
        v = it->second;
      }
      shape.push_back(v);
      if (__builtin_mul_overflow(n, v, &n) || n > kMaxRunElements) return false;
    }
    grape::Tensor t(s.dtype, shape);
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (grape::is_float(s.dtype))
        t.set(i, static_cast<double>(static_cast<int>(rng() % 9) - 4) * 0.5);
      else if (s.dtype == grape::DType::Bool)
        t.set(i, static_cast<double>(rng() % 2));
      else
        t.set(i, static_cast<double>(static_cast<int>(rng() % 7) - 1));
    }
    out.emplace_back(s.name, t);
  }
  return true;
}

void run_entries(const std::shared_ptr<grape::Model>& model, const std::string& program, uint64_t seed) {
  int64_t weight_elements = 0;
  for (const auto& w : model->weight_signatures()) {
    int64_t n = 1;
    for (int64_t d : w.fixed)
      if (d < 0 || __builtin_mul_overflow(n, d, &n)) return;
    weight_elements += n;
    if (weight_elements > kMaxRunElements) return;
  }
  model->set_random_weights(seed);
  std::mt19937_64 rng(seed);
  std::vector<std::string> entries = model->entry_names();
  for (size_t e = 0; e < entries.size() && e < kMaxEntriesRun; ++e) {
    if (!cheap_to_run(*model, entries[e])) continue;
    grape::SessionOptions so;
    so.entry = entries[e];
    so.backend = "cpu";
    so.timeout_seconds = kRunTimeoutSeconds;
    grape::Session session(model, so);
    for (int call = 0; call < 2; ++call) {
      std::vector<std::pair<std::string, grape::Tensor>> inputs;
      if (!make_inputs(session.inputs(), rng, inputs)) break;
      try {
        session.run(inputs);
      } catch (const grape::Error& err) {
        check_error(err, program);
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Device loops without `max` stop after this many trips (the session's cap) instead of the default 10^6.
  setenv("GRAPE_MAX_LOOP_TRIPS", "1000", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string program(reinterpret_cast<const char*>(data), size);
  uint64_t seed = 1469598103934665603ull;
  for (unsigned char c : program) seed = (seed ^ c) * 1099511628211ull;
  try {
    std::shared_ptr<grape::Model> model = grape::Model::load_source(program, "fuzz.grp", fuzz_options());
    run_entries(model, program, seed);
  } catch (const grape::Error& e) {
    check_error(e, program);
  } catch (const std::exception& e) {
    finding(std::string("exception that is not a grape::Error: ") + e.what(), program);
  }
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed);
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  // One in eight mutations is libFuzzer's own (bytes), the rest are grammar-aware.
  if (seed % 8 == 0) return LLVMFuzzerMutate(data, size, max_size);
  std::string out = grape::fuzz::mutate_program(std::string(reinterpret_cast<const char*>(data), size), seed);
  if (out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::copy(out.begin(), out.end(), data);
  return out.size();
}

extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t* a, size_t as, const uint8_t* b, size_t bs,
                                            uint8_t* out, size_t max_size, unsigned int seed) {
  std::string c = grape::fuzz::cross_programs(std::string(reinterpret_cast<const char*>(a), as),
                                              std::string(reinterpret_cast<const char*>(b), bs), seed);
  size_t n = std::min(c.size(), max_size);
  std::copy(c.begin(), c.begin() + static_cast<long>(n), out);
  return n;
}
