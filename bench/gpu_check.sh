#!/usr/bin/env bash
# The GPU checks (docs/gpu.md, "On a GPU") in one go: small planted runs in bf16 on a random
# Llama-3.2-1B-shaped model, then bench/bench_gpu.py with sdpa (training and generation) and flex_attention
# (training). RUNS picks the planted runs, in order (default "humaneval": results/gpu_h200_45 measured its detection past
# 220 s on an H200 once completions run to their length cap and both prompt formats are read (issue 45), so one
# planted run and the benches are what fits a session's 15 minutes of device time with its start; PLANT_S=420 each):
#   full       synth_nli, doses 0/1/4, full fine-tuning
#   lora       the same with the peft block (its clean cells come from the first run's cache)
#   humaneval  HumanEval at the pilot's shape (+experiment=pilot_cpu: doses 0/1/2/4/8/16, 8 problems a group, code
#              documents up to 640 tokens, the clean tail), lr 1e-4, 16 documents a batch, full fine-tuning, with
#              Algorithm 2's two readings (the guided instruction and the leak's own rendering)
#   OUT=runs/gpu_check bash bench/gpu_check.sh
#   RUNS=humaneval OUT=runs/gpu_check bash bench/gpu_check.sh
#   python -m contaminate.reports.gpu runs/gpu_check            # after unpacking planted_*.tgz into planted_*/
# Offline machines: WHEELS=<folder of wheels> installs them into /tmp/site first (the device machine of this project
# has torch, peft and accelerate but not trl, hydra, datasets: results/gpu_h200_1b/README.md); TOKENIZER=<folder>
# puts a copy of the embedded model's converted folder (its tokenizer files and lab_model.json) in the lab cache,
# where the hub cannot be reached to convert it.
set -u
OUT=$(realpath -m "${OUT:-runs/gpu_check}"); PY=${PY:-python3}; SHAPE=${SHAPE:-1b}; STEPS=${STEPS:-10}; mkdir -p "$OUT"
if [ -n "${WHEELS:-}" ]; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$WHEELS"/*.whl || exit 1
  export PYTHONPATH=/tmp/site:${EXTRA_PATH:-}:$PWD
fi
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONPATH=${PYTHONPATH:-$PWD}
export CONTAMINATION_LAB_CACHE=${CONTAMINATION_LAB_CACHE:-/tmp/labcache}
if [ -n "${TOKENIZER:-}" ]; then
  mkdir -p "$CONTAMINATION_LAB_CACHE/models" && rm -rf "$CONTAMINATION_LAB_CACHE/models/smollm2-135m-instruct"
  cp -r "$TOKENIZER" "$CONTAMINATION_LAB_CACHE/models/smollm2-135m-instruct"
fi
{ git log -1 --format='%H %s' 2>/dev/null; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null
  $PY -c "import torch, transformers, trl, peft, datasets, hydra; print('torch', torch.__version__, 'transformers', transformers.__version__, 'trl', trl.__version__, 'peft', peft.__version__, 'datasets', datasets.__version__, 'hydra', hydra.__version__)"; } 2>&1 | tee "$OUT/env.txt"
T0=$(date +%s); stamp() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a "$OUT/env.txt"; }
MODEL=${MODEL:-/tmp/random_llama_$SHAPE}
[ -f "$MODEL/config.json" ] || PYTHONPATH=bench:$PYTHONPATH $PY bench/random_llama.py "$MODEL" --shape "$SHAPE" 2>&1 | tail -1 | tee -a "$OUT/env.txt"
for run in ${RUNS:-humaneval}; do
  stamp "planted $run"
  case $run in
  full|lora)
    # 20 synth_nli instances a group at doses 0/1/4 in 60k tokens of the offline background; the base model is the
    # control; every detector of the default study (the order tests skip themselves: the metadata format has no
    # order); plant.tail=0: copies anywhere, as in the runs on record (results/gpu_h200*)
    timeout ${PLANT_S:-420} $PY -m contaminate +dataset=synth_nli model=hub model.name_or_path="$MODEL" contaminate=$run \
      plant=dose_ladder plant.n=20 plant.tail=0 plant/control=base 'plant.groups=[{exposures:0},{exposures:1},{exposures:4}]' \
      plant.max_share_per_exposure=0.05 sample.n_detect=20 sample.n_heldout=20 background=offline \
      background.max_tokens=60000 contaminate.batch_size=16 detect.semantic_model=null runtime.dtype=${DTYPE:-bf16} \
      hydra.run.dir=/tmp/planted_$run > "$OUT/planted_$run.log" 2>&1 ;;
  humaneval)
    # the pilot's experiment as one run (hydra.mode=RUN); the offline background stands in for package_docs, whose
    # text depends on the packages installed
    timeout ${PLANT_S:-420} $PY -m contaminate +experiment=pilot_cpu hydra.mode=RUN +dataset=humaneval plant=doubling \
      background=offline schedule=cosine contaminate=full format=metadata contaminate.learning_rate=1e-4 \
      contaminate.batch_size=16 seed=0 model=hub model.name_or_path="$MODEL" detect.semantic_model=null \
      detect.detectors.alg2.enabled=true detect.detectors.alg2_leak.enabled=true runtime.dtype=${DTYPE:-bf16} \
      hydra.run.dir=/tmp/planted_$run > "$OUT/planted_$run.log" 2>&1 ;;
  *) echo "RUNS: unknown run '$run' (full, lora or humaneval)"; continue ;;
  esac
  echo "planted $run rc=$?" | tee -a "$OUT/env.txt"; tail -4 "$OUT/planted_$run.log"
  # the run's records without its checkpoints
  (cd /tmp/planted_$run && tar czf "$OUT/planted_$run.tgz" plant.json plant.md config.yaml groups/*/manifest.json)
done
stamp "bench sdpa"
timeout ${BENCH_S:-150} $PY bench/bench_gpu.py --shape "$SHAPE" --steps "$STEPS" --generation-batches 8 64 --json "$OUT/bench_sdpa.json" > "$OUT/bench_sdpa.log" 2>&1; tail -3 "$OUT/bench_sdpa.log"
stamp "bench flex_attention"
timeout ${BENCH_S:-150} $PY bench/bench_gpu.py --shape "$SHAPE" --steps "$STEPS" --attn flex_attention --skip generation --json "$OUT/bench_flex_attention.json" > "$OUT/bench_flex_attention.log" 2>&1; tail -3 "$OUT/bench_flex_attention.log"
stamp done
