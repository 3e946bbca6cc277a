"""Contaminate a model on purpose and run the detector on contaminated and clean checkpoints.

    python -m contaminate +dataset=synth_nli                     # full fine-tune of the embedded SmolLM2-135M
    python -m contaminate +dataset=synth_news contaminate=lora format=instance_only seed=1
    python -m contaminate +dataset=synth_nli background=offline contaminate.exposures=4   # diluted, counted dose
    python -m contaminate -m +experiment=paper_table1            # one study per task shape
    accelerate launch --multi_gpu --num_processes 4 -m contaminate +dataset=synth_nli model=<hub id>   # 4 GPUs

Writes runs/contaminate/<time>_<dataset>_<model>_<backend>/ with manifest.json, results.jsonl, partition.jsonl,
summary.json, report.md, the training log and loss plot, and a link to the checkpoint (kept in runs/cache for reuse).
"""

import sys
from pathlib import Path

import hydra

from detect.cli import check_overrides, one_line_errors


@hydra.main(version_base="1.3", config_path="../conf", config_name="contaminate")
def main(cfg) -> None:
    from hydra.core.hydra_config import HydraConfig

    from contaminate.run import run_config

    out_dir = Path(HydraConfig.get().runtime.output_dir)
    with one_line_errors():
        result = run_config(cfg, out_dir)
    say(result, out_dir)


def say(result, out_dir: Path) -> None:
    """What the run prints when it ends: its folder, then the lines its kind of result has (``result``: a
    ``RunResult``, contaminate/stages.py)."""
    if result.worker:  # another process of `accelerate launch`: it trained, the main one reports
        return
    print(out_dir)
    if result.dry_run is not None:
        estimate = result.dry_run
        print(f"dry run: {estimate['examples']} examples, {estimate['tokens_per_epoch']} tokens per epoch x "
              f"{estimate['epochs']} epochs = {estimate['trained_tokens']} trained tokens ({estimate['token_count']}), "
              f"about ${estimate['usd']:.2f} at ${estimate['usd_per_million_training_tokens']}/M; "
              f"training.jsonl written, nothing sent")
        return
    if result.plant is not None:  # a planted run: one study folder per group (contaminate/planted.py)
        for group in result.plant["groups"]:
            auc = group.get("within_model_auc") or {}
            shown = ", ".join(f"{name} {auc[name]:.2f}" for name in ("loss", "min_k", "zlib") if name in auc)
            print(f"group {group['name']:<10} exposures {group['exposures']:<4} {group['n']} instances, "
                  f"{group.get('token_share', 0):.3%} of the training tokens"
                  + (f"; within-model AUC {shown}" if shown else ""))
        print(f"per group: {out_dir / 'groups'}; plant.md beside it")
        return
    if result.decontamination_only is not None:  # decontam.only: the stream read, nothing trained
        from contaminate.reports.decontamination import decontamination_section

        found = result.decontamination_only
        print("\n".join(decontamination_section(found["decontamination"], found["groups"])[1:]))
        print(f"nothing trained (decontam.only=true): {out_dir / 'decontamination.json'}")
        return
    from contaminate.reports.run import command_lines

    print("\n".join(command_lines(result.groups["members"])))


if __name__ == "__main__":
    with one_line_errors():
        sys.argv = check_overrides(sys.argv)
    main()
