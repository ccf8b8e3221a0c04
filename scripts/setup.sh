#!/usr/bin/env bash
# Installs what Grape's build and tests need, and only what is missing:
#   Debian packages  cmake g++ make ninja-build re2c bison libzstd-dev libxxhash-dev googletest libgtest-dev
#                    clang libclang-rt-14-dev (libFuzzer and the sanitizers with clang) python3 python3-pip
#                    nlohmann-json3-dev (header-only JSON: grape batch's requests, safetensors headers)
#                    ccache (scripts/test.sh compiles through it: a re-run recompiles only what changed)
#   Python modules   numpy safetensors (the numpy references and safetensors interop tests)
# Idempotent and silent when everything is present. Runs apt-get as root, or through sudo.
# Downloads nothing but those packages.
set -euo pipefail

say() { echo "setup: $*" >&2; }

# --- Debian packages -------------------------------------------------------------------------------
# Each package with a command or file that proves it is there, so that a machine with the tools from
# elsewhere (python3 from pyenv, say) is not made to install duplicates.
want_pkgs=()
need_cmd() { command -v "$1" >/dev/null 2>&1 || want_pkgs+=("$2"); }
need_deb() { dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q '^install ok installed$' || want_pkgs+=("$1"); }

need_cmd cmake cmake
need_cmd g++ g++
need_cmd make make
need_cmd ninja ninja-build
need_cmd re2c re2c
need_cmd bison bison
need_cmd clang++ clang
need_cmd ccache ccache
need_deb libzstd-dev
need_deb libxxhash-dev
need_deb googletest
need_deb libgtest-dev
need_deb libclang-rt-14-dev
need_deb nlohmann-json3-dev
need_cmd python3 python3

apt_install() {
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo=(sudo)
    else
      say "missing packages: $*; not root and no sudo: install them and run again"
      exit 1
    fi
  fi
  say "installing $*"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

if ((${#want_pkgs[@]})); then
  apt_install "${want_pkgs[@]}"
fi

# --- Python test tooling ---------------------------------------------------------------------------
if ! python3 -c 'import numpy, safetensors' >/dev/null 2>&1; then
  if ! python3 -m pip --version >/dev/null 2>&1; then
    apt_install python3-pip
  fi
  say "installing numpy safetensors (pip)"
  pip_args=(install --quiet --disable-pip-version-check numpy safetensors)
  # Not root and not in a virtual environment: into the user's site-packages.
  if [[ $(id -u) -ne 0 ]] && python3 -c 'import sys; sys.exit(sys.prefix != sys.base_prefix)'; then
    pip_args+=(--user)
  fi
  # Debian's own python3 is "externally managed" (PEP 668); the tests need these two modules only,
  # so install them beside the system ones rather than set up a virtual environment.
  pip_err=$(mktemp)
  if ! python3 -m pip "${pip_args[@]}" 2>"$pip_err"; then
    if grep -q externally-managed "$pip_err"; then
      python3 -m pip "${pip_args[@]}" --break-system-packages
    else
      cat "$pip_err" >&2
      rm -f "$pip_err"
      exit 1
    fi
  fi
  rm -f "$pip_err"
  python3 -c 'import numpy, safetensors' || { say "numpy/safetensors still not importable"; exit 1; }
fi
