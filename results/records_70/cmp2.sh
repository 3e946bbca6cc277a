#!/usr/bin/env bash
# compare_runs after 1f2e4e2 (one contaminate stage): the planted twin+SFT and decontam.only runs of cmp.sh, and a
# tiny study with SFT post-training (before at 50a0452 too)
set -u
ROOT=$(git rev-parse --show-toplevel)  # run from the repository root
LEAN="sample.n_heldout=6 detect.detectors.membership_raw.enabled=false detect.detectors.dc_pdd.enabled=false detect.detectors.cheat.enabled=false detect.detectors.sharded_likelihood.enabled=false detect.detectors.permutation.enabled=false detect.detectors.recall.enabled=false detect.detectors.performance.enabled=false detect.detectors.dcq.enabled=false detect.detectors.ts_guessing.enabled=false detect.detectors.cdd.enabled=false"
TINY="+dataset=synth_nli model=tiny_random model.vocab_size=1024 plant=dose_ladder plant.n=6 sample.n_detect=6 contaminate.batch_size=4 detect.max_new_tokens=6 detect.semantic_model=null background=offline background.max_tokens=3000 $LEAN decontam.detectors.embedding.enabled=false"
STUDY="+dataset=synth_nli model=tiny_random model.vocab_size=1024 sample.n_members=12 sample.n_non_members=12 sample.n_detect=4 contaminate.epochs=1 contaminate.batch_size=4 detect.max_new_tokens=6 detect.semantic_model=null decontam.detectors.embedding.enabled=false $LEAN"
[ -d $ROOT/../frozen-1f2e4e2 ] || (cd $ROOT && git worktree add -q ../frozen-1f2e4e2 1f2e4e2)
cd $ROOT/../frozen-1f2e4e2 && rm -rf runs/cmp && mkdir -p runs/cmp
/usr/bin/time -f "%e s %M kB" python -m contaminate $TINY plant.control=twin post_train=sft cache_dir=runs/cmp/cache hydra.run.dir=runs/cmp/planted > runs/cmp/planted.out 2> runs/cmp/planted.err; echo "planted rc $?"; tail -1 runs/cmp/planted.err
/usr/bin/time -f "%e s %M kB" python -m contaminate $TINY decontam.only=true cache_dir=runs/cmp/cache2 hydra.run.dir=runs/cmp/decontam > runs/cmp/decontam.out 2> runs/cmp/decontam.err; echo "decontam rc $?"; tail -1 runs/cmp/decontam.err
for c in 50a0452 1f2e4e2; do
  cd $ROOT/../frozen-$c
  /usr/bin/time -f "%e s %M kB" python -m contaminate $STUDY post_train=sft cache_dir=runs/cmp/cache3 hydra.run.dir=runs/cmp/study > runs/cmp/study.out 2> runs/cmp/study.err; echo "$c study rc $?"; tail -1 runs/cmp/study.err
done
cd $ROOT
for r in planted decontam study; do echo "== $r"; python -m contaminate.compare_runs $ROOT/../frozen-50a0452/runs/cmp/$r $ROOT/../frozen-1f2e4e2/runs/cmp/$r | tail -4; done
