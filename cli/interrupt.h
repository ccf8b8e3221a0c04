// Ctrl-C for the grape commands. The first SIGINT sets a flag and stops the run registered with
// run_interruptibly (grp_session_interrupt only stores to an atomic flag, so the handler may call
// it); it then restores the default action, so that a second Ctrl-C kills the process as usual.
#pragma once
#include "grape.h"

namespace grape::cli {

// Installs the SIGINT handler (once, from main).
void install_sigint_handler();

// True once Ctrl-C was pressed. `grape batch` polls it between calls: it lets the calls in flight
// finish instead of interrupting them, so that their results are written.
bool interrupted();

// Runs the session with SIGINT wired to grp_session_interrupt. A Ctrl-C before or during the run
// throws ApiError GRP_ERR_INTERRUPTED.
void run_interruptibly(grp_session* s);

}  // namespace grape::cli
