#include "cli/interrupt.h"

#include <atomic>
#include <cerrno>
#include <csignal>

#include "cli/api.h"

namespace grape::cli {
namespace {

std::atomic<grp_session*> g_running_session{nullptr};
// An atomic, not a volatile sig_atomic_t: `grape batch` reads it from several threads. A
// lock-free atomic is safe to store to from a signal handler.
std::atomic<int> g_sigint{0};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<grp_session*>::is_always_lock_free);

void on_sigint(int) {
  int saved = errno;  // the interrupted code may be about to read errno
  g_sigint.store(1);
  grp_session_interrupt(g_running_session.load());
  std::signal(SIGINT, SIG_DFL);
  errno = saved;
}

}  // namespace

void install_sigint_handler() { std::signal(SIGINT, on_sigint); }

bool interrupted() { return g_sigint.load() != 0; }

void run_interruptibly(grp_session* s) {
  if (interrupted()) throw ApiError{GRP_ERR_INTERRUPTED, "interrupted (Ctrl-C)"};
  g_running_session.store(s);
  grp_error* e = grp_session_run(s);
  g_running_session.store(nullptr);
  if (interrupted()) {
    grp_error_free(e);
    throw ApiError{GRP_ERR_INTERRUPTED, "interrupted (Ctrl-C): the run was stopped"};
  }
  check(e);
}

}  // namespace grape::cli
