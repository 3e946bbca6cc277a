#!/usr/bin/env bash
# What python -m contaminate printed in cmp.sh's runs, BEFORE against AFTER: every line but hydra's timestamped log
# lines, the trainer's timing line and progress bars (times), the frozen worktree's name replaced.
# Run after cmp.sh, from the repository root: bash results/layout_70/stdout.sh BEFORE AFTER
set -u
BEFORE=$1 AFTER=$2
ROOT=$(git rev-parse --show-toplevel)
keep() { grep -v "^\[20\|train_runtime\|it/s\]\|s/it\]" "$1" | sed "s/frozen-$2/FROZEN/g"; }
for r in planted groups decontam study; do
  a=$(keep $ROOT/../frozen-$BEFORE/runs/cmp/$r.out $BEFORE); b=$(keep $ROOT/../frozen-$AFTER/runs/cmp/$r.out $AFTER)
  if [ "$a" == "$b" ]; then echo "$r: printed the same $(echo "$a" | wc -l) lines"; else echo "$r: printed otherwise"; diff <(echo "$a") <(echo "$b"); fi
done
