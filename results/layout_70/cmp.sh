#!/usr/bin/env bash
# compare_runs proof of a step of issue 70's layout work: four tiny runs (a planted dose ladder with the swap twin and
# SFT post-training; a stream of mixed datasets and formats; the same stream's decontam.only check; a study with SFT
# post-training) from frozen worktrees of BEFORE and AFTER, each with its own empty cache, then compare_runs on each
# pair. Run from the repository root: bash results/layout_70/cmp.sh BEFORE AFTER > results/layout_70/cmp-AFTER.out
set -u
BEFORE=$1 AFTER=$2
ROOT=$(git rev-parse --show-toplevel)
LEAN="sample.n_heldout=6 detect.detectors.membership_raw.enabled=false detect.detectors.dc_pdd.enabled=false detect.detectors.cheat.enabled=false detect.detectors.sharded_likelihood.enabled=false detect.detectors.permutation.enabled=false detect.detectors.recall.enabled=false detect.detectors.performance.enabled=false detect.detectors.dcq.enabled=false detect.detectors.ts_guessing.enabled=false detect.detectors.cdd.enabled=false"
TINY="+dataset=synth_nli model=tiny_random model.vocab_size=1024 plant=dose_ladder plant.n=6 sample.n_detect=6 contaminate.batch_size=4 detect.max_new_tokens=6 detect.semantic_model=null background=offline background.max_tokens=3000 $LEAN decontam.detectors.embedding.enabled=false"
STUDY="+dataset=synth_nli model=tiny_random model.vocab_size=1024 sample.n_members=12 sample.n_non_members=12 sample.n_detect=4 contaminate.epochs=1 contaminate.batch_size=4 detect.max_new_tokens=6 detect.semantic_model=null decontam.detectors.embedding.enabled=false $LEAN"
MIXED="plant.groups=[{exposures:0},{exposures:2},{exposures:2,format:dump},{exposures:0,dataset:synth_news},{exposures:2,dataset:synth_news}] +format@plant.formats.dump=dump +dataset@plant.datasets.synth_news=synth_news"
for c in $BEFORE $AFTER; do
  [ -d $ROOT/../frozen-$c ] || (cd $ROOT && git worktree add -q ../frozen-$c $c)
  cd $ROOT/../frozen-$c && rm -rf runs/cmp && mkdir -p runs/cmp
  run() { name=$1; shift; /usr/bin/time -f "%e s %M kB" python -m contaminate "$@" hydra.run.dir=runs/cmp/$name \
            > runs/cmp/$name.out 2> runs/cmp/$name.err; echo "$c $name rc $? $(tail -1 runs/cmp/$name.err)"; }
  run planted $TINY plant.control=twin post_train=sft cache_dir=runs/cmp/cache
  run groups $TINY $MIXED cache_dir=runs/cmp/cache2
  run decontam $TINY $MIXED decontam.only=true cache_dir=runs/cmp/cache3
  run study $STUDY post_train=sft cache_dir=runs/cmp/cache4
done
cd $ROOT
for r in planted groups decontam study; do echo "== $r"; python -m contaminate.compare_runs $ROOT/../frozen-$BEFORE/runs/cmp/$r $ROOT/../frozen-$AFTER/runs/cmp/$r | tail -4; done
