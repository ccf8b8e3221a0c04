#include "cli/interrupt.h"

#include <atomic>
#include <csignal>

#include "cli/api.h"

namespace grape::cli {
namespace {

std::atomic<grp_session*> g_running_session{nullptr};
volatile std::sig_atomic_t g_sigint = 0;

void on_sigint(int) {
  g_sigint = 1;
  grp_session_interrupt(g_running_session.load());
  std::signal(SIGINT, SIG_DFL);
}

}  // namespace

void install_sigint_handler() { std::signal(SIGINT, on_sigint); }

bool interrupted() { return g_sigint != 0; }

void run_interruptibly(grp_session* s) {
  if (g_sigint) throw ApiError{GRP_ERR_INTERRUPTED, "interrupted (Ctrl-C)"};
  g_running_session.store(s);
  grp_error* e = grp_session_run(s);
  g_running_session.store(nullptr);
  if (g_sigint) {
    grp_error_free(e);
    throw ApiError{GRP_ERR_INTERRUPTED, "interrupted (Ctrl-C): the run was stopped"};
  }
  check(e);
}

}  // namespace grape::cli
