#!/usr/bin/env bash
# The GPU checks (docs/gpu.md, "Measured on an H200"): bench/bench_gpu.py with sdpa and flex_attention, then one small
# planted run in bf16 on a random Llama-3.2-1B-shaped model, full fine-tuning and LoRA. About 10 minutes on an H200.
#   OUT=runs/gpu_check bash bench/gpu_check.sh
# Offline machines: WHEELS=<folder of wheels> installs them into /tmp/site first (the device machine of this project
# had torch but not trl, hydra, datasets; results/gpu_h200/README.md). The embedded model's tokenizer must be in the
# lab's cache (python -c "from detect.models.loading import embedded_folder; embedded_folder()" once, or a copy of
# that folder's tokenizer files with its lab_model.json).
set -u
OUT=${OUT:-runs/gpu_check}; PY=${PY:-python3}; SHAPE=${SHAPE:-1b}; STEPS=${STEPS:-12}; mkdir -p "$OUT"
if [ -n "${WHEELS:-}" ]; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$WHEELS"/*.whl || exit 1
  export PYTHONPATH=/tmp/site:${EXTRA_PATH:-}:$PWD
fi
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONPATH=${PYTHONPATH:-$PWD}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null
$PY -c "import torch, transformers, trl, peft; print('torch', torch.__version__, 'transformers', transformers.__version__, 'trl', trl.__version__, 'peft', peft.__version__)"
timeout 300 $PY bench/bench_gpu.py --shape "$SHAPE" --steps "$STEPS" --generation-batches 8 64 --json "$OUT/bench_sdpa.json" 2>&1 | tee "$OUT/bench_sdpa.log"
timeout 300 $PY bench/bench_gpu.py --shape "$SHAPE" --steps "$STEPS" --attn flex_attention --skip generation --json "$OUT/bench_flex_attention.json" 2>&1 | tee "$OUT/bench_flex_attention.log"
MODEL=${MODEL:-/tmp/random_llama_$SHAPE}
[ -f "$MODEL/config.json" ] || PYTHONPATH=bench:$PYTHONPATH $PY bench/random_llama.py "$MODEL" --shape "$SHAPE" || exit 1
for backend in full lora; do
  # 20 synth_nli instances a group at doses 0/1/4 in 60k tokens of the offline background; the base model is the
  # control; every detector of the default study (the order tests skip themselves: the metadata format has no order)
  timeout 600 $PY -m contaminate +dataset=synth_nli model=hub model.name_or_path="$MODEL" contaminate=$backend \
    plant=dose_ladder plant.n=20 plant.control=base 'plant.groups=[{exposures:0},{exposures:1},{exposures:4}]' \
    plant.max_share_per_exposure=0.05 sample.n_detect=20 sample.n_heldout=20 background=offline \
    background.max_tokens=60000 contaminate.batch_size=16 detect.semantic_model=null runtime.dtype=bf16 \
    hydra.run.dir="$OUT/planted_$backend" 2>&1 | tail -5
done
