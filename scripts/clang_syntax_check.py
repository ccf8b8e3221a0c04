#!/usr/bin/env python3
"""Checks with clang -fsyntax-only, with the flags CMake gives them, the sources CI's clang build
(the fuzz build) does not compile: the tests, the CLI (cli/) and the C example (examples/c/).

  scripts/clang_syntax_check.py BUILD_DIR SOURCE_DIR JOBS

BUILD_DIR is a tree configured with clang, GRAPE_TESTS=ON and CMAKE_EXPORT_COMPILE_COMMANDS=ON
(configuring is enough: nothing is built). The library's sources are compiled with clang by the
fuzz build; this covers the rest, which CI otherwise builds with GCC only (issue 10: every target
must build with both compilers, -Wall -Wextra -Werror). Front-end checking finds clang's warnings
without the minutes code generation would cost. Exits 1 if any source fails or warns.
"""
import json
import os
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor


def syntax_only(entry):
    """Runs one compile_commands.json entry with -fsyntax-only instead of -c/-o."""
    args, out, skip = shlex.split(entry['command']), [], False
    for a in args:
        if skip:
            skip = False
        elif a == '-o':
            skip = True
        elif a != '-c':
            out.append(a)
    out.insert(1, '-fsyntax-only')
    r = subprocess.run(out, cwd=entry['directory'], capture_output=True, text=True)
    return entry['file'], r.returncode, r.stderr


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    build, root, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(os.path.join(build, 'compile_commands.json')) as f:
        entries = json.load(f)
    root = os.path.abspath(root)
    dirs = [os.path.join(root, d) + os.sep for d in ('tests', 'cli', os.path.join('examples', 'c'))]
    entries = [e for e in entries if any(e['file'].startswith(d) for d in dirs)]
    if not any(e['file'].startswith(dirs[0]) for e in entries):
        sys.exit(f'no test sources in {build}/compile_commands.json (configured with GRAPE_TESTS=ON?)')
    failed = 0
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        for path, rc, err in pool.map(syntax_only, entries):
            if rc != 0 or err.strip():
                failed += 1
                print(f'{path}: clang -fsyntax-only failed (exit {rc})\n{err}')
    print(f'{len(entries)} sources (tests, CLI, C example) checked with clang -fsyntax-only, {failed} failed')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
