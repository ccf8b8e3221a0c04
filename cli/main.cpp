// The grape command: check, ir, run. All program logic lives in the library (runtime/model.h);
// this file only parses arguments, moves files and prints.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli/args.h"
#include "ir/printer.h"
#include "runtime/error.h"
#include "runtime/model.h"
#include "runtime/npy.h"

namespace grape::cli {
namespace {

const char* kUsage =
    "usage: grape <command> [options]\n"
    "\n"
    "commands:\n"
    "  check FILE...            parse and check .grp programs\n"
    "  ir FILE                  print the predicated IR\n"
    "  run FILE                 run an entry point on the CPU reference backend\n"
    "\n"
    "  grape --version          print the version\n"
    "  grape CMD --help         help for one command\n"
    "\n"
    "exit status: 0 success, 1 an error in the program or the data, 2 a usage error\n";

const char* kCheckUsage =
    "usage: grape check FILE... [-D NAME=VALUE]... [--require-loop-bounds]\n"
    "Parses and type-checks each file and lowers every entry point; prints all errors found.\n"
    "--require-loop-bounds rejects loops without a compile-time trip bound (`while ... max N`).\n";

const char* kIrUsage =
    "usage: grape ir FILE [--entry NAME] [-D NAME=VALUE]... [--no-optimize]\n"
    "Prints the predicated IR of every entry point (or only NAME). --no-optimize shows it as\n"
    "lowered, before constant folding, CSE and dead-code elimination.\n";

const char* kRunUsage =
    "usage: grape run FILE [--entry NAME] [-D NAME=VALUE]...\n"
    "                 [--weights F.safetensors | --random-weights SEED]\n"
    "                 [--input NAME=F.npy]... [--output DIR] [--backend cpu|auto]\n"
    "Runs one entry point (default: main). Inputs bind to the entry's parameters by name; symbolic\n"
    "dims come from the inputs. With --output DIR the results are written as DIR/out0.npy,\n"
    "DIR/out1.npy, ... in return order; otherwise a short summary of each result is printed.\n";

std::shared_ptr<Model> load(const std::string& file, const Options& o) {
  ModelOptions mo;
  mo.defines = o.defines;
  mo.optimize = !o.no_optimize;
  mo.require_loop_bounds = o.require_loop_bounds;
  return Model::load_file(file, mo);
}

int cmd_check(const Options& o) {
  if (o.files.empty()) throw UsageError("check needs at least one FILE");
  int status = 0;
  for (const auto& f : o.files) {
    try {
      auto m = load(f, o);
      std::string entries;
      for (const auto& e : m->entry_names()) entries += (entries.empty() ? "" : ", ") + e;
      std::cout << f << ": ok (entries: " << (entries.empty() ? "none" : entries) << ")\n";
    } catch (const Error& e) {
      std::cerr << e.what();
      if (std::string(e.what()).back() != '\n') std::cerr << "\n";
      status = e.code() == ErrorCode::InvalidArgument ? 2 : std::max(status, 1);
    }
  }
  return status;
}

int cmd_ir(const Options& o) {
  if (o.files.size() != 1) throw UsageError("ir needs exactly one FILE");
  auto m = load(o.files[0], o);
  if (o.entry.empty()) {
    std::cout << ir::print_module(m->module());
    return 0;
  }
  const ir::Function* f = m->module().find(o.entry);
  if (!f) throw Error(ErrorCode::InvalidArgument, "no entry point '" + o.entry + "' in " + o.files[0]);
  std::cout << ir::print_function(*f);
  return 0;
}

std::string summarize(const Tensor& t) {
  std::ostringstream s;
  s << dtype_name(t.dtype()) << shape_to_string(t.shape());
  int64_t n = t.numel();
  if (n == 0) return s.str() + " (empty)";
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = t.get(i);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  s << " min " << lo << " max " << hi << " mean " << sum / static_cast<double>(n) << "  [";
  for (int64_t i = 0; i < std::min<int64_t>(n, 8); ++i) s << (i ? ", " : "") << t.get(i);
  s << (n > 8 ? ", ...]" : "]");
  return s.str();
}

int cmd_run(const Options& o) {
  if (o.files.size() != 1) throw UsageError("run needs exactly one FILE");
  if (o.backend == "cuda")
    throw Error(ErrorCode::NoDevice, "--backend cuda: this build of grape has no CUDA backend yet; use --backend cpu");
  auto model = load(o.files[0], o);
  if (!o.weights.empty()) model->set_weights_file(o.weights);
  else if (o.random_weights) model->set_random_weights(o.seed);
  else if (!model->module().weights.empty())
    throw UsageError(o.files[0] + " declares " + std::to_string(model->module().weights.size()) +
                     " weights: pass --weights F.safetensors or --random-weights SEED");
  Session session(model, o.entry);
  std::vector<std::pair<std::string, Tensor>> inputs;
  for (const auto& [name, path] : o.inputs) {
    try {
      inputs.emplace_back(name, read_npy(path));
    } catch (const Error& e) {
      throw Error(e.code(), "--input " + name + "=" + path + ": " + e.what());
    }
  }
  std::vector<Tensor> outputs = session.run(inputs);
  if (o.output_dir.empty()) {
    for (size_t i = 0; i < outputs.size(); ++i) std::cout << "out" << i << ": " << summarize(outputs[i]) << "\n";
    return 0;
  }
  std::error_code ec;
  std::filesystem::create_directories(o.output_dir, ec);
  if (ec) throw Error(ErrorCode::IO, "--output " + o.output_dir + ": " + ec.message());
  for (size_t i = 0; i < outputs.size(); ++i)
    write_npy((std::filesystem::path(o.output_dir) / ("out" + std::to_string(i) + ".npy")).string(), outputs[i]);
  return 0;
}

int main_impl(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string cmd = args[0];
  if (cmd == "--version" || cmd == "version") {
    std::cout << "grape " << GRAPE_VERSION_STRING << "\n";
    return 0;
  }
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::cout << kUsage;
    return 0;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  const char* usage = nullptr;
  std::vector<std::string> allowed;
  int (*fn)(const Options&) = nullptr;
  if (cmd == "check") {
    usage = kCheckUsage;
    allowed = {"-D", "--require-loop-bounds"};
    fn = cmd_check;
  } else if (cmd == "ir") {
    usage = kIrUsage;
    allowed = {"-D", "--entry", "--no-optimize"};
    fn = cmd_ir;
  } else if (cmd == "run") {
    usage = kRunUsage;
    allowed = {"-D", "--entry", "--weights", "--random-weights", "--input", "--output", "--backend"};
    fn = cmd_run;
  } else {
    std::cerr << "grape: unknown command '" << cmd << "'\n\n" << kUsage;
    return 2;
  }
  try {
    Options o = parse_options(rest, allowed);
    if (o.help) {
      std::cout << usage;
      return 0;
    }
    return fn(o);
  } catch (const UsageError& e) {
    std::cerr << "grape " << cmd << ": " << e.what() << "\n\n" << usage;
    return 2;
  } catch (const Error& e) {
    std::string msg = e.what();
    std::cerr << (msg.rfind("grape", 0) == 0 ? "" : "error: ") << msg << (msg.empty() || msg.back() != '\n' ? "\n" : "");
    // Arguments that name nothing in the program (entry, input, -D) are usage errors.
    return e.code() == ErrorCode::InvalidArgument ? 2 : 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace
}  // namespace grape::cli

int main(int argc, char** argv) { return grape::cli::main_impl(argc, argv); }
