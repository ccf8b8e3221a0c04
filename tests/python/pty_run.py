"""Runs a command with its standard error on a pseudo-terminal, as a person at a terminal sees it
(progress lines are drawn only there)."""
import os
import pty
import subprocess


def run_with_stderr_on_a_terminal(cmd, env=None, stdout=subprocess.PIPE, timeout=300):
    """(exit status, standard output or "", everything written to standard error)."""
    master, slave = pty.openpty()
    try:
        p = subprocess.Popen([str(c) for c in cmd], stdout=stdout, stderr=slave, env=env)
        os.close(slave)
        chunks = []
        while True:
            try:
                b = os.read(master, 4096)
            except OSError:  # the other end closed
                break
            if not b:
                break
            chunks.append(b)
        out = p.stdout.read().decode() if p.stdout else ""
        rc = p.wait(timeout=timeout)
    finally:
        os.close(master)
    return rc, out, b"".join(chunks).decode(errors="replace")
