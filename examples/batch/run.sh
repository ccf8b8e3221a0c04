#!/usr/bin/env bash
# The two batch examples at tiny sizes on the CPU backend (CI runs this through
# tests/python/test_batch.py):
#   scores examples/batch/mlp_requests.jsonl with examples/mlp.grp   -> OUT/mlp/results.jsonl
#   generates from examples/batch/gpt2_requests.jsonl with gpt2.grp  -> OUT/gpt2/results.jsonl
# usage: examples/batch/run.sh PATH/TO/grape OUT
set -euo pipefail
grape=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
examples=$(dirname "$here")

# Scoring: each request one or more rows of x; requests are stacked into calls of up to 4 rows.
"$grape" batch "$examples/mlp.grp" --entry main -D D=8 -D H=16 -D C=4 --random-weights 1 \
  --backend cpu --requests "$here/mlp_requests.jsonl" --output "$out/mlp" --max-batch 4

# Generation: greedy decoding of every prompt; max_new is one value for all, given once.
"$grape" batch "$examples/gpt2.grp" --entry generate -D L=2 -D E=64 -D NH=4 -D V=128 -D P=64 -D T=64 -D N=8 \
  --random-weights 1 --backend cpu --requests "$here/gpt2_requests.jsonl" --input "max_new=$here/max_new.npy" \
  --output "$out/gpt2"
