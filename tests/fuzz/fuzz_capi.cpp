// libFuzzer target for the C API (grape.h), driven the way a careless embedder would: the input
// chooses a program (one of a few with weights, state, symbolic dims, loops and several entries,
// or the input's own bytes as source), model and session options (struct sizes too small, too
// large with a nonzero tail, strings that name nothing), weights (random, or the input's bytes as
// a safetensors file), then a sequence of calls on the CPU backend: inputs set, allocated and
// bound with random dtypes, ranks, shapes and byte counts; runs; outputs bound with random
// capacities; states read, written and reset; info queries with out-of-range indices and NULL
// out-pointers; run statistics with random struct sizes; a kernel bundle's row-count list.
//
// A finding is a crash, a sanitizer report, a hang or memory blow-up (the script's -timeout and
// -rss_limit_mb), GRP_ERR_INTERNAL from any call, or an error without a message. Everything else
// (the user's errors) is expected. Run it with scripts/fuzz.sh 600 fuzz_capi.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "grape.h"

namespace {

// weights, two states (one with a symbolic dim), three entries, two outputs
const char kWeightsAndState[] =
    "const K = 3\n"
    "weights {\n  w: f32[K]\n}\n"
    "state acc: f32[M, K] = zeros\n"
    "state count: i32[] = zeros\n"
    "fn main(x: f32[B, K], scale: f32[]) -> (f32[B, K], f32[B]) {\n"
    "  let y = x * w * scale\n  return (y, sum(y, axis=1))\n}\n"
    "fn accumulate(x: f32[M, K]) -> (f32[M, K], i32[]) {\n"
    "  acc = acc + x\n  count = count + 1\n  return (acc, count)\n}\n";
// a device loop with a data-dependent trip count and break
const char kLoop[] =
    "fn main(n: i32[], x: f16[N]) -> (i32[], f16[N]) {\n"
    "  var i = 0\n  var y = x\n"
    "  while i < n {\n    if i > 50 {\n      break\n    }\n    y = y * 0.5 + 1.0\n    i = i + 1\n  }\n"
    "  return (i, y)\n}\n";
// integer and boolean dtypes, a reduction and a select
const char kIntegers[] =
    "fn main(a: i64[R, C], m: bool[R, C]) -> (i64[R], bool[R, C], i32[R, C]) {\n"
    "  return (sum(a, axis=1), m, where(m, cast(a, i32), 0))\n}\n";
// bf16 matmul with a symbolic inner dim
const char kMatmul[] = "fn main(a: bf16[M, K], b: bf16[K, N]) -> bf16[M, N] {\n  return a @ b\n}\n";
const char* const kPrograms[] = {kWeightsAndState, kLoop, kIntegers, kMatmul};

const char* const kNames[] = {"main", "accumulate", "x", "scale", "n", "a", "b", "m",
                              "acc",  "count",      "w", "nope",  "",  "B", "K"};
const char* const kBackends[] = {"cpu", "auto", "cuda", "tpu", ""};
const char* const kExecutors[] = {"auto", "eager", "graph", "mono", "x"};
const char* const kDefines[] = {"K=4", "K=0", "K=-1", "K=99999999999999999999", "Q=1", "K", "=3", "K=1x"};
const char* const kLimits[] = {"max_ops=100", "max_loop_trips=5", "max_tensor_elements=16",
                               "bogus=1",     "max_ops=-1",       "max_ops"};

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "==== fuzz_capi finding: %s\n", what.c_str());
  std::abort();
}

// Frees e; aborts on an internal error or an error without a message.
void check(grp_error* e, const char* call) {
  if (e == nullptr) return;
  const char* msg = grp_error_message(e);
  if (msg == nullptr || *msg == '\0') finding(std::string(call) + " returned an error without a message");
  if (grp_error_code(e) == GRP_ERR_INTERNAL) finding(std::string(call) + ": " + msg);
  const char* file = nullptr;
  uint32_t line = 0, column = 0;
  (void)grp_error_location(e, &file, &line, &column);
  grp_error_free(e);
}

template <size_t N>
const char* pick(FuzzedDataProvider& in, const char* const (&options)[N]) {
  size_t i = in.ConsumeIntegralInRange<size_t>(0, N);  // N: NULL
  return i < N ? options[i] : nullptr;
}

// A struct of `size` bytes as the caller of an older or newer header would pass it.
std::vector<unsigned char> sized_struct(FuzzedDataProvider& in, const void* proper, size_t proper_size) {
  size_t size = proper_size;
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {  // 0, what an exhausted input gives: the proper size
    case 6: size = in.ConsumeIntegralInRange<size_t>(0, proper_size); break;
    case 7: size = proper_size + in.ConsumeIntegralInRange<size_t>(1, 32); break;
    default: break;
  }
  std::vector<unsigned char> bytes(std::max(size, sizeof(size_t)), 0);
  std::memcpy(bytes.data(), proper, std::min(size, proper_size));
  if (size > proper_size && in.ConsumeBool()) bytes[proper_size] = 1;  // a field this library does not know
  std::memcpy(bytes.data(), &size, sizeof size);
  return bytes;
}

struct Shape {
  std::vector<int64_t> dims;
  size_t elements = 1;
};

Shape random_shape(FuzzedDataProvider& in) {
  Shape s;
  size_t rank = in.ConsumeIntegralInRange<size_t>(0, 3);
  for (size_t k = 0; k < rank; ++k) {
    int64_t d = in.ConsumeIntegralInRange<int64_t>(0, 7);
    if (d == 7) d = -1;
    if (in.ConsumeIntegralInRange<int>(0, 15) == 15) d = in.ConsumeIntegral<int64_t>();  // hostile
    s.dims.push_back(d);
    s.elements = d > 0 && d < 64 ? s.elements * static_cast<size_t>(d) : s.elements;
  }
  return s;
}

grp_dtype random_dtype(FuzzedDataProvider& in) {
  // 6 and 7: no enumerator, as a C caller may pass (still in the C++ enum's range of values: a
  // negative one would be undefined behaviour in this C++ harness itself)
  return static_cast<grp_dtype>(in.ConsumeIntegralInRange<int>(0, 7));
}

// Bytes for a tensor of `s` elements of `dtype`; sometimes a wrong count.
std::vector<unsigned char> tensor_bytes(FuzzedDataProvider& in, grp_dtype dtype, const Shape& s) {
  size_t n = s.elements * std::max<size_t>(grp_dtype_size(dtype), 1);
  if (in.ConsumeIntegralInRange<int>(0, 7) == 7) n = in.ConsumeIntegralInRange<size_t>(0, 64);
  std::vector<unsigned char> b(n);
  for (auto& c : b) c = in.ConsumeIntegral<unsigned char>();
  if (dtype == GRP_BOOL)
    for (auto& c : b) c &= 1;
  return b;
}

void query_everything(grp_session* s, FuzzedDataProvider& in) {
  size_t ni = grp_session_num_inputs(s), no = grp_session_num_outputs(s), ns = grp_session_num_states(s);
  (void)grp_session_input_name(s, ni);  // out of range: NULL
  (void)grp_session_output_name(s, no);
  (void)grp_session_state_name(s, ns);
  (void)grp_session_backend(s);
  (void)grp_session_fallback_reason(s);
  for (size_t i = 0; i <= ni; ++i) {
    grp_dtype dt;
    size_t rank = 0;
    const int64_t* dims = nullptr;
    const char* const* exprs = nullptr;
    check(grp_session_input_info(s, i, &dt, &rank, in.ConsumeBool() ? &dims : nullptr, &exprs), "input_info");
    size_t index = 0;
    const char* name = grp_session_input_name(s, i);
    if (name) check(grp_session_input_index(s, name, &index), "input_index");
  }
  for (size_t i = 0; i <= no; ++i) {
    size_t rank = 0;
    check(grp_session_output_info(s, i, nullptr, &rank, nullptr, nullptr), "output_info");
  }
}

// Every input with its declared dtype and rank, fixed dims as declared and each symbolic dim (by
// name, so that inputs agree) a small size: the inputs a run accepts, with random values.
void set_declared_inputs(grp_session* s, FuzzedDataProvider& in) {
  std::vector<std::pair<std::string, int64_t>> symbols;
  for (size_t i = 0; i < grp_session_num_inputs(s); ++i) {
    grp_dtype dt;
    size_t rank = 0;
    const int64_t* dims = nullptr;
    const char* const* exprs = nullptr;
    check(grp_session_input_info(s, i, &dt, &rank, &dims, &exprs), "input_info");
    Shape sh;
    for (size_t k = 0; k < rank; ++k) {
      int64_t d = dims[k];
      if (d < 0) {
        auto it =
            std::find_if(symbols.begin(), symbols.end(), [&](const auto& p) { return p.first == exprs[k]; });
        if (it == symbols.end())
          it = symbols.insert(symbols.end(), {exprs[k], in.ConsumeIntegralInRange<int64_t>(1, 4)});
        d = it->second;
      }
      sh.dims.push_back(d);
      sh.elements *= static_cast<size_t>(std::min<int64_t>(d, 4096));
    }
    if (sh.elements > 4096) return;
    std::vector<unsigned char> bytes(sh.elements * grp_dtype_size(dt));
    for (auto& c : bytes) c = in.ConsumeIntegral<unsigned char>();
    if (dt == GRP_BOOL)
      for (auto& c : bytes) c &= 1;
    check(grp_session_set_input(s, grp_session_input_name(s, i), dt, sh.dims.data(), rank,
                                bytes.empty() ? nullptr : bytes.data(), bytes.size()),
          "set_input (declared)");
  }
}

void call_sequence(grp_session* s, FuzzedDataProvider& in) {
  std::vector<std::vector<unsigned char>> kept;  // memory bound to the session: alive until destroy
  int calls = in.ConsumeIntegralInRange<int>(1, 24);
  for (int c = 0; c < calls && in.remaining_bytes() > 0; ++c) {
    size_t ni = grp_session_num_inputs(s);
    const char* name = !in.ConsumeBool() && ni > 0
                           ? grp_session_input_name(s, in.ConsumeIntegralInRange<size_t>(0, ni - 1))
                           : pick(in, kNames);
    switch (in.ConsumeIntegralInRange<int>(0, 13)) {
      case 0: set_declared_inputs(s, in); break;
      case 1: {
        grp_dtype dt = random_dtype(in);
        Shape sh = random_shape(in);
        auto bytes = tensor_bytes(in, dt, sh);
        check(grp_session_set_input(s, name, dt, sh.dims.data(), sh.dims.size(),
                                    bytes.empty() ? nullptr : bytes.data(), bytes.size()),
              "set_input");
        break;
      }
      case 2: {
        grp_dtype dt = random_dtype(in);
        Shape sh = random_shape(in);
        void* data = nullptr;
        size_t nbytes = 0;
        grp_error* e = grp_session_input_buffer(s, name, dt, sh.dims.data(), sh.dims.size(), &data, &nbytes);
        if (e == nullptr && data != nullptr)
          std::memset(data, in.ConsumeIntegral<unsigned char>() & 1, nbytes);
        check(e, "input_buffer");
        break;
      }
      case 3: {
        grp_dtype dt = random_dtype(in);
        Shape sh = random_shape(in);
        kept.push_back(tensor_bytes(in, dt, sh));
        check(grp_session_bind_input(s, name, dt, sh.dims.data(), sh.dims.size(),
                                     kept.back().empty() ? nullptr : kept.back().data(), kept.back().size()),
              "bind_input");
        break;
      }
      case 4:
      case 5: {
        if (in.ConsumeBool()) grp_session_interrupt(s);  // no run in progress: no effect on the next
        check(grp_session_run(s), "run");
        break;
      }
      case 6: {
        size_t i = in.ConsumeIntegralInRange<size_t>(0, grp_session_num_outputs(s));
        if (in.ConsumeBool()) {
          check(grp_session_bind_output(s, i, nullptr, 0), "bind_output(NULL)");
        } else {
          kept.emplace_back(in.ConsumeIntegralInRange<size_t>(0, 256));
          check(grp_session_bind_output(s, i, kept.back().empty() ? nullptr : kept.back().data(),
                                        kept.back().size()),
                "bind_output");
        }
        break;
      }
      case 7: {
        size_t i = in.ConsumeIntegralInRange<size_t>(0, grp_session_num_outputs(s));
        grp_dtype dt;
        const int64_t* shape = nullptr;
        size_t rank = 0, nbytes = 0;
        const void* data = nullptr;
        grp_error* e = grp_session_get_output(s, i, &dt, &shape, &rank, &data, &nbytes);
        if (e == nullptr && nbytes > 0) {  // read every byte: a short buffer shows under ASan
          unsigned sum = 0;
          for (size_t k = 0; k < nbytes; ++k) sum += static_cast<const unsigned char*>(data)[k];
          (void)sum;
        }
        check(e, "get_output");
        break;
      }
      case 8: {
        const char* state = !in.ConsumeBool() && grp_session_num_states(s) > 0
                                ? grp_session_state_name(
                                      s, in.ConsumeIntegralInRange<size_t>(0, grp_session_num_states(s) - 1))
                                : pick(in, kNames);
        if (in.ConsumeBool()) {
          grp_dtype dt;
          const int64_t* shape = nullptr;
          size_t rank = 0, nbytes = 0;
          const void* data = nullptr;
          check(grp_session_get_state(s, state, &dt, &shape, &rank, &data, &nbytes), "get_state");
        } else {
          grp_dtype dt = random_dtype(in);
          Shape sh = random_shape(in);
          auto bytes = tensor_bytes(in, dt, sh);
          check(grp_session_set_state(s, state, dt, sh.dims.data(), sh.dims.size(),
                                      bytes.empty() ? nullptr : bytes.data(), bytes.size()),
                "set_state");
        }
        break;
      }
      case 9: check(grp_session_reset_state(s), "reset_state"); break;
      case 10: {
        grp_run_stats proper;
        std::memset(&proper, 0, sizeof proper);
        proper.struct_size = sizeof proper;
        auto bytes = sized_struct(in, &proper, sizeof proper);
        check(grp_session_last_run_stats(s, reinterpret_cast<grp_run_stats*>(bytes.data())),
              "last_run_stats");
        break;
      }
      case 11: query_everything(s, in); break;
      case 12: {  // kernel profiles and auto's decisions: UNSUPPORTED on the CPU backend, empty snapshots,
                  // bad indices
        check(grp_session_set_profiling(s, in.ConsumeIntegral<int>()), "set_profiling");
        int64_t runs = 0;
        size_t count = 0;
        check(grp_session_kernel_profile(s, in.ConsumeBool() ? &runs : nullptr,
                                         in.ConsumeBool() ? &count : nullptr),
              "kernel_profile");
        grp_kernel_profile proper;
        std::memset(&proper, 0, sizeof proper);
        proper.struct_size = sizeof proper;
        auto bytes = sized_struct(in, &proper, sizeof proper);
        check(grp_session_kernel_profile_at(s, in.ConsumeIntegralInRange<size_t>(0, 3),
                                            reinterpret_cast<grp_kernel_profile*>(bytes.data())),
              "kernel_profile_at");
        // Executor auto's decisions: an empty snapshot on the CPU backend, bad indices and sizes.
        check(grp_session_auto_decisions(s, in.ConsumeBool() ? &count : nullptr), "auto_decisions");
        grp_auto_decision decision;
        std::memset(&decision, 0, sizeof decision);
        decision.struct_size = sizeof decision;
        auto decision_bytes = sized_struct(in, &decision, sizeof decision);
        check(grp_session_auto_decision_at(s, in.ConsumeIntegralInRange<size_t>(0, 3),
                                           reinterpret_cast<grp_auto_decision*>(decision_bytes.data())),
              "auto_decision_at");
        break;
      }
      default: check(grp_session_run(s), "run"); break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);

  grp_model_options mo = grp_model_default_options();
  std::vector<const char*> defines, limits;
  for (int i = in.ConsumeIntegralInRange<int>(0, 2); i > 0; --i) defines.push_back(pick(in, kDefines));
  for (int i = in.ConsumeIntegralInRange<int>(0, 2); i > 0; --i) limits.push_back(pick(in, kLimits));
  mo.defines = defines.empty() ? nullptr : defines.data();
  mo.num_defines = defines.size();
  mo.limits = limits.empty() ? nullptr : limits.data();
  mo.num_limits = limits.size();
  mo.no_optimize = in.ConsumeBool();
  mo.require_loop_bounds = in.ConsumeIntegralInRange<int>(0, 3) == 3;
  auto model_opts = sized_struct(in, &mo, sizeof mo);

  std::string source;
  size_t program = in.ConsumeIntegralInRange<size_t>(0, std::size(kPrograms));
  if (program < std::size(kPrograms)) {
    source = kPrograms[program];
  } else {
    source = in.ConsumeRandomLengthString(2048);
  }
  grp_model* m = nullptr;
  grp_error* e = grp_model_load_source(
      source.data(), source.size(), in.ConsumeBool() ? "f.grp" : nullptr,
      in.ConsumeBool() ? reinterpret_cast<grp_model_options*>(model_opts.data()) : nullptr, &m);
  check(e, "model_load_source");
  if (m == nullptr) return 0;

  for (size_t i = 0; i <= grp_model_num_weights(m); ++i) {
    (void)grp_model_weight_name(m, i);
    check(grp_model_weight_info(m, i, nullptr, nullptr, nullptr), "weight_info");
  }
  for (size_t i = 0; i <= grp_model_num_entries(m); ++i) (void)grp_model_entry_name(m, i);
  if (in.ConsumeIntegralInRange<int>(0, 7) == 7) {
    char* text = nullptr;
    check(grp_model_ir_text(m, pick(in, kNames), &text), "ir_text");
    grp_free(text);
  }
  if (in.ConsumeIntegralInRange<int>(0, 7) == 7) {
    // A bundle's row counts, checked before anything compiles; the empty target list then stops
    // the call before NVRTC, so nothing is compiled or written.
    const std::string rows = in.ConsumeRandomLengthString(32);
    char* report = nullptr;
    check(grp_kernel_bundle_write_rows(m, "", rows.c_str(), "/nonexistent/fuzz.grpkb", &report),
          "kernel_bundle_write_rows");
    grp_free(report);
  }
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 3: break;  // no weights: sessions of a model that declares some fail
    case 2: {
      std::string st = in.ConsumeRandomLengthString(512);
      check(
          grp_model_set_weights_memory(m, st.data(), st.size(), in.ConsumeBool() ? "w.safetensors" : nullptr),
          "set_weights_memory");
      break;
    }
    default:
      check(grp_model_set_random_weights(m, in.ConsumeIntegral<uint64_t>()), "set_random_weights");
      break;
  }

  grp_session_options so = grp_session_default_options();
  so.entry = in.ConsumeIntegralInRange<int>(0, 3) == 3 ? pick(in, kNames) : nullptr;  // NULL: "main"
  so.backend = in.ConsumeIntegralInRange<int>(0, 3) == 3 ? pick(in, kBackends) : "cpu";
  so.executor = in.ConsumeIntegralInRange<int>(0, 3) == 3 ? pick(in, kExecutors) : "auto";
  so.device = in.ConsumeIntegralInRange<int>(0, 7) == 7 ? in.ConsumeIntegral<int>() : 0;
  so.max_loop_trips = in.ConsumeIntegralInRange<int64_t>(0, 201);
  if (so.max_loop_trips == 201) so.max_loop_trips = -1;
  so.timeout_seconds = in.ConsumeIntegralInRange<int>(0, 7) == 7 ? -1.0 : 0.0;
  auto session_opts = sized_struct(in, &so, sizeof so);
  grp_session* s = nullptr;
  check(grp_session_create(m, reinterpret_cast<grp_session_options*>(session_opts.data()), &s),
        "session_create");
  if (in.ConsumeBool()) grp_model_destroy(m), m = nullptr;  // sessions outlive their model
  if (s != nullptr) {
    if (so.backend != nullptr && std::strcmp(grp_session_backend(s), "cpu") == 0) call_sequence(s, in);
    grp_session_destroy(s);
  }
  grp_model_destroy(m);
  return 0;
}
