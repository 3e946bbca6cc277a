#!/usr/bin/env bash
# compare_runs proof of 5ca770a (Hydra composes the control, the groups' datasets and formats, post-training's
# format): four tiny runs from frozen worktrees of 3f26432 (before) and 5ca770a (after), each with its own empty
# cache, then compare_runs on each pair. Run from the repository root.
set -u
ROOT=$(git rev-parse --show-toplevel)
LEAN="sample.n_heldout=6 detect.detectors.membership_raw.enabled=false detect.detectors.dc_pdd.enabled=false detect.detectors.cheat.enabled=false detect.detectors.sharded_likelihood.enabled=false detect.detectors.permutation.enabled=false detect.detectors.recall.enabled=false detect.detectors.performance.enabled=false detect.detectors.dcq.enabled=false detect.detectors.ts_guessing.enabled=false detect.detectors.cdd.enabled=false"
TINY="+dataset=synth_nli model=tiny_random model.vocab_size=1024 plant=dose_ladder plant.n=6 sample.n_detect=6 contaminate.batch_size=4 detect.max_new_tokens=6 detect.semantic_model=null background=offline background.max_tokens=3000 $LEAN decontam.detectors.embedding.enabled=false"
STUDY="+dataset=synth_nli model=tiny_random model.vocab_size=1024 sample.n_members=12 sample.n_non_members=12 sample.n_detect=4 contaminate.epochs=1 contaminate.batch_size=4 detect.max_new_tokens=6 detect.semantic_model=null decontam.detectors.embedding.enabled=false $LEAN"
MIXED="plant.groups=[{exposures:0},{exposures:2},{exposures:2,format:dump},{exposures:0,dataset:synth_news},{exposures:2,dataset:synth_news}]"
COMPOSED="+format@plant.formats.dump=dump +dataset@plant.datasets.synth_news=synth_news"  # after: what Hydra composes
for c in 3f26432 5ca770a; do
  [ -d $ROOT/../frozen-$c ] || (cd $ROOT && git worktree add -q ../frozen-$c $c)
  cd $ROOT/../frozen-$c && rm -rf runs/cmp && mkdir -p runs/cmp
  extra=$([ $c = 5ca770a ] && echo "$COMPOSED" || echo "")
  run() { name=$1; shift; /usr/bin/time -f "%e s %M kB" python -m contaminate "$@" hydra.run.dir=runs/cmp/$name \
            > runs/cmp/$name.out 2> runs/cmp/$name.err; echo "$c $name rc $? $(tail -1 runs/cmp/$name.err)"; }
  run planted $TINY plant.control=twin post_train=sft cache_dir=runs/cmp/cache
  run groups $TINY "$MIXED" $extra cache_dir=runs/cmp/cache2
  run decontam $TINY "$MIXED" $extra decontam.only=true cache_dir=runs/cmp/cache3
  run study $STUDY post_train=sft cache_dir=runs/cmp/cache4
done
cd $ROOT
for r in planted groups decontam study; do echo "== $r"; python -m contaminate.compare_runs $ROOT/../frozen-3f26432/runs/cmp/$r $ROOT/../frozen-5ca770a/runs/cmp/$r | tail -6; done
