#include "cli/args.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace grape::cli {

std::string head_of(const std::string& value) {
  if (value.size() <= kMaxQuotedValue) return value;
  size_t head = kMaxQuotedValue / 2;
  while (head > 0 && (static_cast<unsigned char>(value[head]) & 0xc0u) == 0x80u) --head;
  return value.substr(0, head);
}

std::string quoted(const std::string& value) {
  if (value.size() <= kMaxQuotedValue) return "'" + value + "'";
  return "'" + head_of(value) + "...' (" + std::to_string(value.size()) + " characters)";
}

static int64_t parse_int(const std::string& s, const std::string& what) {
  if (s.empty()) throw UsageError(what + ": expected an integer, got an empty value");
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') throw UsageError(what + ": expected an integer, got " + quoted(s));
  return v;
}

static bool valid_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

Options parse_options(const std::vector<std::string>& args, const std::vector<std::string>& allowed) {
  Options o;
  auto accepts = [&](const std::string& f) {
    return std::find(allowed.begin(), allowed.end(), f) != allowed.end();
  };
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    std::string value;
    bool inline_value = false;
    if (a.rfind("--", 0) == 0 && a.find('=') != std::string::npos) {
      value = a.substr(a.find('=') + 1);
      a = a.substr(0, a.find('='));
      inline_value = true;
    } else if (a.rfind("-D", 0) == 0 && a.size() > 2) {
      value = a.substr(2);
      a = "-D";
      inline_value = true;
    }
    auto next = [&]() -> std::string {
      if (inline_value) return value;
      if (i + 1 >= args.size()) throw UsageError(a + " needs a value");
      return args[++i];
    };
    if (a == "-h" || a == "--help") {
      o.help = true;
      continue;
    }
    // A switch takes no value; `--json=VALUE` is accepted only with an explicit yes or no
    // (so that `--json=no` does not switch it on).
    auto flag = [&]() -> bool {
      if (!inline_value) return true;
      std::string v = value;
      std::transform(v.begin(), v.end(), v.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
      if (v == "0" || v == "false" || v == "no" || v == "off") return false;
      throw UsageError(a + " is a switch: give it without a value, or as " + a + "=yes / " + a + "=no (got " +
                       quoted(value) + ")");
    };
    // A value that names something (a file, a directory, an entry) must not be empty.
    auto nonempty = [&](const std::string& v) -> std::string {
      if (v.empty()) throw UsageError(a + " needs a non-empty value");
      return v;
    };
    if (a.size() > 1 && a[0] == '-') {
      if (!accepts(a)) throw UsageError("unknown option " + quoted(args[i]));
      if (a == "--entry")
        o.entry = nonempty(next());
      else if (a == "-D") {
        std::string kv = next();
        auto eq = kv.find('=');
        if (eq == std::string::npos || !valid_identifier(kv.substr(0, eq)))
          throw UsageError("-D expects NAME=VALUE, got " + quoted(kv));
        o.defines[kv.substr(0, eq)] = parse_int(kv.substr(eq + 1), "-D " + kv.substr(0, eq));
      } else if (a == "--limit") {
        std::string kv = next();
        auto eq = kv.find('=');
        if (eq == std::string::npos || !valid_identifier(kv.substr(0, eq)) ||
            kv.find_first_not_of("0123456789", eq + 1) != std::string::npos || eq + 1 == kv.size())
          throw UsageError("--limit expects NAME=N with N a non-negative integer, got " + quoted(kv));
        parse_int(kv.substr(eq + 1), "--limit " + kv.substr(0, eq));  // in range of int64
        o.limits.push_back(kv);
      } else if (a == "--weights")
        o.weights = nonempty(next());
      else if (a == "--random-weights") {
        o.random_weights = true;
        int64_t s = parse_int(next(), "--random-weights");
        if (s < 0) throw UsageError("--random-weights: the seed must not be negative");
        o.seed = static_cast<uint64_t>(s);
      } else if (a == "--input") {
        std::string kv = next();
        auto eq = kv.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size())
          throw UsageError("--input expects NAME=FILE.npy, got " + quoted(kv));
        o.inputs.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
      } else if (a == "--output")
        o.output_dir = nonempty(next());
      else if (a == "--backend") {
        o.backend = next();
        o.backend_given = true;
        if (o.backend != "cpu" && o.backend != "auto" && o.backend != "cuda")
          throw UsageError("--backend must be cpu, cuda or auto, got " + quoted(o.backend));
      } else if (a == "--executor") {
        o.executor = next();
        if (o.executor != "auto" && o.executor != "eager" && o.executor != "graph" && o.executor != "mono")
          throw UsageError("--executor must be eager, graph, mono or auto, got " + quoted(o.executor));
      } else if (a == "--no-optimize")
        o.no_optimize = flag();
      else if (a == "--require-loop-bounds")
        o.require_loop_bounds = flag();
      else if (a == "--warmup" || a == "--iters") {
        int64_t n = parse_int(next(), a);
        if (n < 0 || n > 1000000) throw UsageError(a + " must be between 0 and 1000000");
        (a == "--warmup" ? o.warmup : o.iters) = static_cast<int>(n);
      } else if (a == "--max-loop-trips") {
        o.max_loop_trips = parse_int(next(), a);
        if (o.max_loop_trips <= 0) throw UsageError("--max-loop-trips must be a positive integer");
      } else if (a == "--timeout") {
        std::string v = next();
        errno = 0;
        char* end = nullptr;
        o.timeout = std::strtod(v.c_str(), &end);
        if (v.empty() || *end != '\0' || errno != 0 || !(o.timeout > 0) || o.timeout > 1e9)
          throw UsageError("--timeout expects a number of seconds > 0, got " + quoted(v));
      } else if (a == "--buckets") {
        std::string v = nonempty(next());
        o.buckets += (o.buckets.empty() ? "" : ";") + v;
      } else if (a == "--graph-memory") {
        o.graph_memory_mb = parse_int(next(), a);
        if (o.graph_memory_mb <= 0 || o.graph_memory_mb > (int64_t{1} << 30))
          throw UsageError("--graph-memory expects a positive number of MiB");
      } else if (a == "--shapes") {
        o.shapes = nonempty(next());
      } else if (a == "--json")
        o.json = flag();
      else if (a == "--profile")
        o.profile = flag();
      else if (a == "--arch")
        o.arch = nonempty(next());
      else if (a == "--bundle")
        o.bundle = nonempty(next());
      else if (a == "--rows")
        o.rows = nonempty(next());
      else if (a == "--requests")
        o.requests = nonempty(next());
      else if (a == "--max-batch") {
        o.max_batch = parse_int(next(), a);
        if (o.max_batch < 1 || o.max_batch > 1000000)
          throw UsageError("--max-batch must be between 1 and 1000000");
      } else if (a == "--devices")
        o.devices = nonempty(next());
      else if (a == "--threads") {
        std::string v = next();
        int64_t n = v == "auto" ? 0 : parse_int(v, a);
        if (n < 0 || n > 256) throw UsageError("--threads must be auto or between 1 and 256");
        o.threads = static_cast<int>(n);
      } else if (a == "--shard") {
        std::string v = next();
        auto slash = v.find('/');
        if (slash == std::string::npos) throw UsageError("--shard expects I/N (e.g. 0/4), got " + quoted(v));
        o.shard_index = parse_int(v.substr(0, slash), "--shard I");
        o.shard_count = parse_int(v.substr(slash + 1), "--shard N");
        if (o.shard_count < 1 || o.shard_index < 0 || o.shard_index >= o.shard_count)
          throw UsageError("--shard I/N needs 0 <= I < N, got " + quoted(v));
      } else if (a == "--resume")
        o.overwrite = !flag();
      else if (a == "--overwrite")
        o.overwrite = flag();
      else if (a == "--no-warmup")
        o.batch_warmup = !flag();
      else if (a == "--outputs") {
        o.outputs = next();
        if (o.outputs != "auto" && o.outputs != "inline" && o.outputs != "npy" && o.outputs != "npy-rows")
          throw UsageError("--outputs must be auto, inline, npy or npy-rows, got " + quoted(o.outputs));
      } else if (a == "--quiet" || a == "-q")
        o.quiet = flag();
      else
        throw UsageError("unknown option " + quoted(args[i]));
      continue;
    }
    o.files.push_back(args[i]);
  }
  if (!o.weights.empty() && o.random_weights)
    throw UsageError("--weights and --random-weights are mutually exclusive");
  return o;
}

}  // namespace grape::cli
