#include "jit/compile_workers.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <thread>

#include "base/error.h"
#include "jit/compile_wire.h"

extern char** environ;

namespace grape::jit {
namespace {

std::atomic<unsigned> g_started{0};
std::mutex g_executable_mutex;
std::string g_executable;

// The worker's side of one channel: requests until the build closes it.
void serve_channel(int fd) {
  std::string frame;
  while (read_frame(fd, &frame)) {
    CompileRequest req;
    CompileReply reply;
    if (!decode(frame, &req)) {
      reply.code = static_cast<int>(ErrorCode::Internal);
      reply.message = "compile worker: a malformed request";
    } else {
      try {
        reply.result = compile_cuda(req.source, req.name, req.arch, req.options);
        reply.ok = true;
      } catch (const Error& e) {
        reply.code = static_cast<int>(e.code());
        reply.message = e.what();
      } catch (const std::exception& e) {
        reply.code = static_cast<int>(ErrorCode::Internal);
        reply.message = e.what();
      }
    }
    if (!write_frame(fd, encode(reply))) break;
  }
  ::close(fd);
}

}  // namespace

void set_compile_worker_executable(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_executable_mutex);
  g_executable = path;
}

std::string compile_worker_executable() {
  {
    std::lock_guard<std::mutex> lock(g_executable_mutex);
    if (!g_executable.empty()) return g_executable;
  }
  const char* env = std::getenv("GRAPE_COMPILE_WORKER");
  return env ? env : "";
}

bool compile_workers_wanted() {
  const char* off = std::getenv("GRAPE_COMPILE_PROCESSES");
  if (off && std::string(off) == "0") return false;
  return !compile_worker_executable().empty();
}

unsigned compile_worker_processes_started() { return g_started.load(); }

WorkerLayout worker_layout(unsigned threads) {
  if (threads == 0) threads = 1;
  WorkerLayout l;
  l.channels = threads >= 8 ? 4 : 1;
  l.processes = (threads + l.channels - 1) / l.channels;
  return l;
}

CompileWorkers::CompileWorkers(std::string executable, WorkerLayout layout)
    : executable_(std::move(executable)), layout_(layout) {
  if (layout_.channels == 0 || layout_.channels > kMaxWorkerChannels) layout_.channels = 1;
  for (unsigned i = 0; i < layout_.processes; ++i) processes_.push_back(std::make_unique<Process>());
}

void CompileWorkers::start(Process& p) {
  p.started = true;
  std::vector<int> child_ends;
  auto fail = [&] {
    for (int fd : p.fds) ::close(fd);
    for (int fd : child_ends) ::close(fd);
    p.fds.clear();
    p.dead = true;
  };
  for (unsigned c = 0; c < layout_.channels; ++c) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return fail();
    p.fds.push_back(sv[0]);
    // Above every descriptor the worker gets (3 .. 3 + kMaxWorkerChannels), so that no dup2 below
    // maps a descriptor onto itself (which would keep its close-on-exec flag).
    const int high = ::fcntl(sv[1], F_DUPFD_CLOEXEC, 64);
    ::close(sv[1]);
    if (high < 0) return fail();
    child_ends.push_back(high);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);  // stderr stays: crashes show
  for (unsigned c = 0; c < layout_.channels; ++c)
    posix_spawn_file_actions_adddup2(&actions, child_ends[c], 3 + static_cast<int>(c));
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group: a Ctrl-C at the terminal reaches the build, which decides; a worker
  // ends when its channels close.
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  const std::string channels = std::to_string(layout_.channels);
  char* argv[] = {const_cast<char*>(executable_.c_str()), const_cast<char*>(kCompileWorkerArg),
                  const_cast<char*>(channels.c_str()), nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, executable_.c_str(), &actions, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return fail();
  for (int fd : child_ends) ::close(fd);
  p.pid = pid;
  ++g_started;
}

std::optional<CompileResult> CompileWorkers::compile(unsigned slot, const std::string& source,
                                                     const std::string& name, const std::string& arch,
                                                     const std::vector<std::string>& options) {
  if (slot >= slots()) return std::nullopt;
  Process& p = *processes_[slot / layout_.channels];
  int fd = -1;
  {
    std::lock_guard<std::mutex> lock(p.start);
    if (!p.started) start(p);
    if (p.dead) return std::nullopt;
    fd = p.fds[slot % layout_.channels];
  }
  std::string frame;
  CompileReply reply;
  if (!write_frame(fd, encode(CompileRequest{source, name, arch, options})) || !read_frame(fd, &frame) ||
      !decode(frame, &reply)) {
    p.dead = true;  // its other channels fail on their own next message, or are never used again
    return std::nullopt;
  }
  if (!reply.ok) throw Error(static_cast<ErrorCode>(reply.code), reply.message);
  return std::move(reply.result);
}

pid_t CompileWorkers::pid_of(unsigned slot) {
  if (slot >= slots()) return -1;
  Process& p = *processes_[slot / layout_.channels];
  std::lock_guard<std::mutex> lock(p.start);
  return p.pid;
}

CompileWorkers::~CompileWorkers() {
  for (auto& p : processes_) {
    for (int fd : p->fds) ::close(fd);
    p->fds.clear();
  }
  // A worker exits when its channels close; one stuck inside NVRTC gets 10 s, then SIGKILL.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (auto& p : processes_) {
    if (p->pid <= 0) continue;
    while (true) {
      int status = 0;
      const pid_t r = ::waitpid(p->pid, &status, WNOHANG);
      if (r == p->pid || (r < 0 && errno != EINTR)) break;
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(p->pid, SIGKILL);
        ::waitpid(p->pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
}

int compile_worker_main(int argc, char** argv) {
  if (argc != 3) return 2;
  char* end = nullptr;
  const long channels = std::strtol(argv[2], &end, 10);
  if (!end || *end || channels < 1 || channels > static_cast<long>(kMaxWorkerChannels)) return 2;
  ::signal(SIGPIPE, SIG_IGN);  // a write to a closed channel fails instead (write_frame)
  std::vector<std::thread> threads;
  for (long c = 1; c < channels; ++c) threads.emplace_back(serve_channel, 3 + static_cast<int>(c));
  serve_channel(3);
  for (auto& t : threads) t.join();
  return 0;
}

}  // namespace grape::jit
