#!/bin/bash
# usage: runs.sh <source tree> <label> [cache]: the comparison runs of the one-recipe refactor (issue 46), each
# into /tmp/cmp/<label>/<run>, all on one cache (default /tmp/cmp/cache); ONLY="run ..." runs those alone
set -e
cd "$1"; L=$2; C=${3:-/tmp/cmp/cache}; O=/tmp/cmp/$L; ONLY=${ONLY:-}
TINYM="model=tiny_random model.vocab_size=1024"
LEAN="sample.n_heldout=8 detect.detectors.membership_raw.enabled=false detect.detectors.dc_pdd.enabled=false detect.detectors.cheat.enabled=false detect.detectors.sharded_likelihood.enabled=false detect.detectors.permutation.enabled=false detect.detectors.recall.enabled=false detect.detectors.performance.enabled=false detect.detectors.dcq.enabled=false detect.detectors.ts_guessing.enabled=false detect.detectors.cdd.enabled=false"
T="+dataset=synth_nli $TINYM sample.n_members=12 sample.n_non_members=12 sample.n_detect=4 contaminate.batch_size=4 detect.max_new_tokens=6 detect.semantic_model=null $LEAN"
run() { name=$1; shift; [ -n "$ONLY" ] && [[ " $ONLY " != *" $name "* ]] && return; s=$(date +%s); python -m contaminate "$@" cache_dir=$C hydra.run.dir=$O/$name > $O.$name.log 2>&1; echo "$name $(( $(date +%s) - s )) s"; }
mkdir -p $O
run tiny_epochs $T contaminate.epochs=1
run tiny_diluted $T background=offline background.max_tokens=3000 contaminate.exposures=2
run tiny_sft $T contaminate.epochs=1 post_train=sft post_train.n=8 post_train.batch_size=4
run planted_twin +dataset=synth_nli $TINYM plant=dose_ladder plant.n=6 sample.n_detect=6 contaminate.batch_size=4 detect.max_new_tokens=6 detect.semantic_model=null background=offline background.max_tokens=3000 $LEAN sample.n_heldout=6 plant.control=twin
run planted_background +dataset=synth_nli $TINYM plant=dose_ladder plant.n=6 sample.n_detect=6 contaminate.batch_size=4 detect.max_new_tokens=6 detect.semantic_model=null background=offline background.max_tokens=3000 $LEAN sample.n_heldout=6
run default +dataset=synth_nli
