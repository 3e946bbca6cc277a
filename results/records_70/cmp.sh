#!/usr/bin/env bash
# compare_runs proof of the records refactor: a tiny planted run with the swap twin and SFT post-training, and a
# decontam.only run, from frozen worktrees of 50a0452 (before) and d6e8b69 (after), each with its own empty cache
ROOT=$(git rev-parse --show-toplevel)  # run from the repository root
set -u
LEAN="sample.n_heldout=6 detect.detectors.membership_raw.enabled=false detect.detectors.dc_pdd.enabled=false detect.detectors.cheat.enabled=false detect.detectors.sharded_likelihood.enabled=false detect.detectors.permutation.enabled=false detect.detectors.recall.enabled=false detect.detectors.performance.enabled=false detect.detectors.dcq.enabled=false detect.detectors.ts_guessing.enabled=false detect.detectors.cdd.enabled=false"
TINY="+dataset=synth_nli model=tiny_random model.vocab_size=1024 plant=dose_ladder plant.n=6 sample.n_detect=6 contaminate.batch_size=4 detect.max_new_tokens=6 detect.semantic_model=null background=offline background.max_tokens=3000 $LEAN decontam.detectors.embedding.enabled=false"
for c in 50a0452 d6e8b69; do
  [ -d $ROOT/../frozen-$c ] || (cd $ROOT && git worktree add -q ../frozen-$c $c)
  cd $ROOT/../frozen-$c
  rm -rf runs/cmp; mkdir -p runs/cmp
  /usr/bin/time -f "%e s %M kB" python -m contaminate $TINY plant.control=twin post_train=sft cache_dir=runs/cmp/cache hydra.run.dir=runs/cmp/planted > runs/cmp/planted.out 2> runs/cmp/planted.err; echo "$c planted rc $?"; tail -1 runs/cmp/planted.err
  /usr/bin/time -f "%e s %M kB" python -m contaminate $TINY decontam.only=true cache_dir=runs/cmp/cache2 hydra.run.dir=runs/cmp/decontam > runs/cmp/decontam.out 2> runs/cmp/decontam.err; echo "$c decontam rc $?"; tail -1 runs/cmp/decontam.err
done
cd $ROOT
for r in planted decontam; do echo "== $r"; python -m contaminate.compare_runs $ROOT/../frozen-50a0452/runs/cmp/$r $ROOT/../frozen-d6e8b69/runs/cmp/$r | tail -15; done
