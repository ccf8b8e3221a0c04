#!/bin/sh
# tests/lsan_retry.sh reruns a test only after LeakSanitizer's own tracer crash on a clean run.
set -u
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
retry="$(dirname "$0")/lsan_retry.sh"
# fake MODE: prints what a test run prints in MODE the first time, a clean pass the second time.
cat >"$dir/fake" <<'FAKE'
#!/bin/sh
count="$1.count"
n=$(cat "$count" 2>/dev/null || echo 0)
echo $((n + 1)) >"$count"
if [ "$n" -gt 0 ]; then echo "[  PASSED  ] 1 test."; exit 0; fi
case "$2" in
  tracer) echo "[  PASSED  ] 1 test."; echo "Tracer caught signal 11: addr=0xbf0"
          echo "==1==LeakSanitizer has encountered a fatal error."; exit 1 ;;
  leak) echo "==1==ERROR: LeakSanitizer: detected memory leaks"
        echo "==1==LeakSanitizer has encountered a fatal error."; exit 1 ;;
  failed) echo "[  FAILED  ] A.B"; echo "==1==LeakSanitizer has encountered a fatal error."; exit 1 ;;
  plain) echo "[  FAILED  ] A.B"; exit 1 ;;
esac
FAKE
fail=0
check() {  # check MODE EXPECTED_STATUS EXPECTED_RUNS
  sh "$retry" sh "$dir/fake" "$dir/$1" "$1" >"$dir/$1.out" 2>&1
  rc=$?
  runs=$(cat "$dir/$1.count")
  if [ "$rc" -ne "$2" ] || [ "$runs" -ne "$3" ]; then
    echo "FAIL $1: exit $rc after $runs runs, expected exit $2 after $3"; cat "$dir/$1.out"; fail=1
  else
    echo "ok   $1: exit $rc after $runs runs"
  fi
}
check tracer 0 2
check leak 1 1
check failed 1 1
check plain 1 1
exit $fail
