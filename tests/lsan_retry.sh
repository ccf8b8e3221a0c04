#!/bin/sh
# Runs one sanitizer-built test binary (the CROSSCOMPILING_EMULATOR of the test targets when
# GRAPE_SANITIZE is on) and runs it once more only when LeakSanitizer itself crashed after a
# clean run: "Tracer caught signal 11" then "LeakSanitizer has encountered a fatal error", with
# no test failure and no sanitizer report. That is LeakSanitizer's stop-the-world tracer dying
# while it scans the process at exit (seen about once per 400 processes that loaded NVRTC, in
# CI and locally, never reproduced in 800 runs alone; a known sanitizer flake,
# google/sanitizers#1353). A leak report, an AddressSanitizer or UBSan error or a failed test is
# never rerun: the first run's exit status stands.
out=$(mktemp) || exit 1
"$@" >"$out" 2>&1
rc=$?
cat "$out"
if [ "$rc" -ne 0 ] && grep -q "LeakSanitizer has encountered a fatal error" "$out" &&
  ! grep -q -e "ERROR: LeakSanitizer" -e "ERROR: AddressSanitizer" -e "runtime error:" \
    -e "\[  FAILED  \]" -e "AddressSanitizer:DEADLYSIGNAL" "$out"; then
  echo "lsan_retry.sh: LeakSanitizer's tracer crashed after a clean run (not a leak report); running the test again"
  rm -f "$out"
  exec "$@"
fi
rm -f "$out"
exit "$rc"
