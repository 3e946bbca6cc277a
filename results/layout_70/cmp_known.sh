#!/usr/bin/env bash
# compare_runs proof of 2a4fbd4 (the known non-members renamed in code) where they are read inside a cell: a tiny
# study with ReCaLL's prefix and the performance test on (results/layout_70/cmp.sh's study, those two detectors
# turned back on), from frozen worktrees of BEFORE and AFTER, each with an empty cache.
# Run from the repository root: bash results/layout_70/cmp_known.sh BEFORE AFTER > results/layout_70/cmp_known-AFTER.out
set -u
BEFORE=$1 AFTER=$2
ROOT=$(git rev-parse --show-toplevel)
LEAN="sample.n_heldout=6 detect.detectors.membership_raw.enabled=false detect.detectors.dc_pdd.enabled=false detect.detectors.cheat.enabled=false detect.detectors.sharded_likelihood.enabled=false detect.detectors.permutation.enabled=false detect.detectors.dcq.enabled=false detect.detectors.ts_guessing.enabled=false detect.detectors.cdd.enabled=false"
STUDY="+dataset=synth_nli model=tiny_random model.vocab_size=1024 sample.n_members=12 sample.n_non_members=12 sample.n_detect=4 contaminate.epochs=1 contaminate.batch_size=4 detect.max_new_tokens=6 detect.semantic_model=null decontam.detectors.embedding.enabled=false detect.detectors.recall.n_shots=3 $LEAN"
for c in $BEFORE $AFTER; do
  [ -d $ROOT/../frozen-$c ] || (cd $ROOT && git worktree add -q ../frozen-$c $c)
  cd $ROOT/../frozen-$c && rm -rf runs/cmp_known && mkdir -p runs/cmp_known
  /usr/bin/time -f "%e s %M kB" python -m contaminate $STUDY cache_dir=runs/cmp_known/cache hydra.run.dir=runs/cmp_known/known \
    > runs/cmp_known/known.out 2> runs/cmp_known/known.err
  echo "$c known rc $? $(tail -1 runs/cmp_known/known.err)"
done
cd $ROOT
echo "== known"
python -m contaminate.compare_runs $ROOT/../frozen-$BEFORE/runs/cmp_known/known $ROOT/../frozen-$AFTER/runs/cmp_known/known
