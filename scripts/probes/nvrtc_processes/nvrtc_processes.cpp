// Probe: do NVRTC compiles slow each other down inside one process (a lock, the memory map) or on
// the machine (cores, memory)? Compiles every DIR/*.cu (GRAPE_DUMP_KERNELS output) for ARCH with
// the options Grape uses, PROCS processes of THREADS threads each: the files, longest first, are
// dealt round robin to the processes; inside a process the threads take the next file. Forked
// before any NVRTC call, so each child loads NVRTC itself. Prints the wall time and the sum of
// the compiles' durations.
//
//   g++ -O2 -std=c++17 -I/usr/local/cuda/include nvrtc_processes.cpp -o nvrtc_processes -ldl -pthread
//   CUDA_CACHE_PATH=$(mktemp -d) ./nvrtc_processes DIR sm_90 PROCS THREADS [pch 0|1] [INCLUDE_DIR]
#include <dirent.h>
#include <dlfcn.h>
#include <nvrtc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s DIR ARCH PROCS THREADS [PCH 0|1] [INCLUDE_DIR]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1], arch = argv[2];
  const int procs = std::atoi(argv[3]), threads = std::atoi(argv[4]);
  const bool pch = argc > 5 ? std::atoi(argv[5]) != 0 : true;
  const std::string include = argc > 6 ? argv[6] : "/usr/local/cuda/include";
  std::vector<std::pair<std::string, std::string>> files;  // name, source
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() < 4 || n.substr(n.size() - 3) != ".cu") continue;
      std::ifstream in(dir + "/" + n);
      std::stringstream ss;
      ss << in.rdbuf();
      files.emplace_back(n, ss.str());
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end(),
            [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  const auto start = Clock::now();
  std::vector<pid_t> kids;
  for (int p = 0; p < procs; ++p) {
    pid_t pid = fork();
    if (pid != 0) {
      kids.push_back(pid);
      continue;
    }
    void* lib = dlopen("libnvrtc.so.13", RTLD_NOW);
    if (!lib) lib = dlopen("libnvrtc.so.12", RTLD_NOW);
    if (!lib) lib = dlopen("libnvrtc.so", RTLD_NOW);
    if (!lib) {
      std::fprintf(stderr, "no libnvrtc: %s\n", dlerror());
      _exit(1);
    }
    auto create = reinterpret_cast<decltype(&nvrtcCreateProgram)>(dlsym(lib, "nvrtcCreateProgram"));
    auto compile = reinterpret_cast<decltype(&nvrtcCompileProgram)>(dlsym(lib, "nvrtcCompileProgram"));
    auto destroy = reinterpret_cast<decltype(&nvrtcDestroyProgram)>(dlsym(lib, "nvrtcDestroyProgram"));
    std::vector<size_t> mine;
    for (size_t i = p; i < files.size(); i += procs) mine.push_back(i);
    std::atomic<size_t> next{0};
    std::atomic<long long> busy_us{0};
    std::atomic<int> failed{0};
    auto worker = [&] {
      for (size_t n; (n = next.fetch_add(1)) < mine.size();) {
        const auto& [name, src] = files[mine[n]];
        const auto t0 = Clock::now();
        nvrtcProgram prog;
        create(&prog, src.c_str(), name.c_str(), 0, nullptr, nullptr);
        std::vector<std::string> opts = {"-std=c++17", "--gpu-architecture=" + arch, "-default-device",
                                         "-I" + include};
        if (pch) opts.insert(opts.end(), {"-pch", "-pch-messages=false", "-pch-verbose=false"});
        std::vector<const char*> o;
        for (auto& s : opts) o.push_back(s.c_str());
        if (compile(prog, static_cast<int>(o.size()), o.data()) != NVRTC_SUCCESS) failed++;
        destroy(&prog);
        busy_us += std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
      }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
    std::printf("  process %d: %zu compiles, %.1f s of compile time, %.2f s wall, %d failed\n", p, mine.size(),
                busy_us / 1e6, std::chrono::duration<double>(Clock::now() - start).count(), failed.load());
    std::fflush(stdout);
    _exit(failed ? 1 : 0);
  }
  int bad = 0;
  for (pid_t k : kids) {
    int st = 0;
    waitpid(k, &st, 0);
    bad += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  std::printf("%d processes x %d threads, pch %d: %zu files, %.2f s wall%s\n", procs, threads, pch, files.size(),
              std::chrono::duration<double>(Clock::now() - start).count(), bad ? " (failures)" : "");
  return bad ? 1 : 0;
}
