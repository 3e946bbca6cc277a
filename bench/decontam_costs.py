"""Time and memory of each data-side decontaminator (detect/decontam/) on the power profile's stream and on one whose
background is 100x larger (issue 48).

    python bench/decontam_costs.py                          # every detector at 1x and 100x (embedding: 1x and 4x)
    python bench/decontam_costs.py --scales 1 --detectors gpt3_13gram

The stream is run 0 of conf/experiment/power_cpu.yaml as it is planned (HumanEval and synth_nli at 0-8 copies among
42k tokens of package_docs; nothing trained); the benchmark, both splits whole (164 + 1,200 instances). A larger
stream reads more of package_docs (novel text: the embedding match embeds each distinct document once, so a repeated
document would cost it nothing) up to all of it (about 1.96M tokens, 46x), then cycles its documents to reach the
scale (the n-gram rules cost per token read, novel or not); the planted copies once. The table says how many of
the background's tokens are novel. Each (detector, scale) runs in a fresh process, so its peak memory is its own:
printed as the growth over the same process's peak after the stream was built (the baseline), and its time as tokens
of the stream a second and as a ratio to tokenizing the stream once with the model's tokenizer (the floor of any
token detector), measured in the same process.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

DETECTORS = ("gpt3_13gram", "llama3_8gram", "gpt4_50char", "contam_longest", "embedding")


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def one(detector: str, scale: int) -> dict:
    from hydra import compose, initialize_config_dir

    from contaminate.decontam import planted_decontamination
    from contaminate.run import Run
    from detect.cli import CONF_DIR
    from detect.decontam.units import TokenUnits
    from detect.runtime import from_config as placement_from

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):  # the sweep's run 0, as -m runs it
        swept = compose(config_name="contaminate", overrides=["+experiment=power_cpu"], return_hydra_config=True)
        params = {key: value for key, value in swept.hydra.sweeper.params.items() if key != "seed"}
        base = int(swept.background.max_tokens)  # the profile's background, 1x
        cfg = compose(config_name="contaminate", overrides=[
            "+experiment=power_cpu", *(f"{key}={value}" for key, value in params.items()), "seed=0",
            f"background.max_tokens={base * scale}"])
    run = Run(cfg, placement_from(cfg.runtime))
    draw = run.sample()
    layout = run.lay_out(draw)  # the stream as the run would train it; nothing is trained
    stream = list(layout.trained.stream)
    background = [document for document in stream if not document.members]
    tokens = TokenUnits(layout.tokenizer)
    lengths = [len(ids) for i in range(0, len(background), 64)
               for ids in tokens.many([d.text for d in background[i:i + 64]])]
    novel = sum(lengths)
    wanted, have, i = base * scale, novel, 0
    while have < wanted * 0.99:  # package_docs read whole: its documents again, in order, to the scale
        stream.append(background[i % len(background)])
        have += lengths[i % len(lengths)]
        i += 1
    started = time.perf_counter()
    n_tokens = sum(len(ids) for i in range(0, len(stream), 64)
                   for ids in tokens.many([d.text for d in stream[i:i + 64]]))
    tokenize_s = time.perf_counter() - started
    baseline_mb = peak_mb()
    node = cfg.decontam
    from omegaconf import OmegaConf

    # the one measured, on even where a run leaves it off (the embedding: conf/contaminate.yaml)
    only = OmegaConf.create({"detectors": {detector: {**OmegaConf.to_container(node.detectors[detector]),
                                                      "enabled": True}},
                             "batch_size": node.batch_size})
    started = time.perf_counter()
    block = planted_decontamination(stream, draw, run.design.groups, run.datasets, only, tokenizer=layout.tokenizer,
                                    seed=0, formats={})
    seconds = time.perf_counter() - started
    found = block["detectors"][detector]
    return {"detector": detector, "scale": scale, "documents": len(stream), "tokens": n_tokens,
            "background_tokens": have, "novel_background_tokens": novel,
            "seconds": round(seconds, 2), "index_s": found["seconds"]["index_s"], "scan_s": found["seconds"]["scan_s"],
            "tokens_per_s": round(n_tokens / found["seconds"]["scan_s"]) if found["seconds"]["scan_s"] else None,
            "tokenize_s": round(tokenize_s, 2), "baseline_mb": round(baseline_mb), "growth_mb": round(
                peak_mb() - baseline_mb), "recall_x1": {g: b["flagged"] for g, b in found["groups"].items()
                                                         if g.startswith("x1")}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--detectors", nargs="+", default=list(DETECTORS), choices=DETECTORS)
    parser.add_argument("--scales", nargs="+", type=int, default=[1, 100])
    parser.add_argument("--embedding-scales", nargs="+", type=int, default=[1, 4],
                        help="the embedding's scales (MiniLM over every window: about 3 min at 1x on 2 CPU cores)")
    parser.add_argument("--one", nargs=2, metavar=("DETECTOR", "SCALE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one[0], int(args.one[1]))))
        return
    import platform

    from detect.markdown import row, table

    print(f"# {platform.processor() or platform.machine()}, {len(__import__('os').sched_getaffinity(0))} cores")
    print("\n".join(table(["detector", "background", "novel background tokens", "documents", "tokens", "index s",
                           "scan s", "tokens/s", "scan / tokenize", "peak growth MB", "baseline MB"])))
    for detector in args.detectors:
        for scale in (args.embedding_scales if detector == "embedding" else args.scales):
            done = subprocess.run([sys.executable, __file__, "--one", detector, str(scale)], capture_output=True,
                                  text=True)
            if done.returncode:
                print(row([detector, f"{scale}x", f"failed: {done.stderr.strip().splitlines()[-1]}"]))
                continue
            r = json.loads(done.stdout.strip().splitlines()[-1])
            print(row([detector, f"{scale}x", f"{r['novel_background_tokens']:,} of {r['background_tokens']:,}",
                       f"{r['documents']:,}", f"{r['tokens']:,}", f"{r['index_s']:.2f}", f"{r['scan_s']:.2f}",
                       f"{r['tokens_per_s']:,}", f"{r['scan_s'] / r['tokenize_s']:.2f}", f"{r['growth_mb']:,}",
                       f"{r['baseline_mb']:,}"]), flush=True)


if __name__ == "__main__":
    main()
