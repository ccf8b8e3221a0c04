#!/usr/bin/env bash
# GPU run 64 (the head's binary): cold kernel builds on the 16-core GPU machine, empty cache:
# every entry of examples/gpt2.grp and examples/bert.grp (grape compile --arch sm_90), twice each.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD
B=build-carry; R=/tmp/r64; mkdir -p $R
nproc
for f in gpt2 bert; do
  for r in 1 2; do
    rm -rf /tmp/gc64; export GRAPE_CACHE_DIR=/tmp/gc64
    s=$(date +%s.%N); $B/grape compile examples/$f.grp --arch sm_90 > $R/$f-$r.txt 2>&1; e=$(date +%s.%N)
    echo "$f cold $r: $(python3 -c "print(round($e - $s, 2))") s; $(tail -1 $R/$f-$r.txt)"
  done
  s=$(date +%s.%N); $B/grape compile examples/$f.grp --arch sm_90 > /dev/null 2>&1; e=$(date +%s.%N)
  echo "$f warm: $(python3 -c "print(round($e - $s, 2))") s"
done
tar czf $OUT/r64.tgz -C /tmp r64
