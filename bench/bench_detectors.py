"""Cost of the detectors added beside the Time Travel method, on the embedded model (issue 6).

    python bench/bench_detectors.py                 # ~2 minutes on a 2-core CPU

Prints, per synth partition, the time of the logit scores (loss, zlib, Min-K%, Min-K%++) of a 10-instance sample
batched against one text at a time (the baseline, same run), and with the reference model's pass added; the
sharded likelihood test at its defaults (40 instances, 10 shards, 5 shuffles); and ChatGPT-Cheat?'s replica
search over a whole 1,200-instance split, pruned by the unigram bound against the brute-force ROUGE-L of every
pair, checked to find the same best match.
"""

from __future__ import annotations

import argparse
import time


def timed(function):
    started = time.perf_counter()
    value = function()
    return value, time.perf_counter() - started


def main() -> None:
    import torch
    from omegaconf import OmegaConf

    from detect.datasets import load_split, sample
    from detect.detectors.cheat import match_replicas, output_lines, reference_pieces
    from detect.detectors.membership import membership_scores
    from detect.detectors.sharded import sharded_likelihood_test
    from detect.detectors.time_travel.scores import rouge_l
    from detect.models import embedded_smollm2, load
    from detect.models.hf import HFModel

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--instances", type=int, default=10)
    args = parser.parse_args()
    model, tokenizer = load(embedded_smollm2())

    def fresh():  # a new LanguageModel each time: its memo would answer a repeated text for free
        return HFModel(model, tokenizer, progress=False)

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, embedded SmolLM2-135M fp32")
    membership_scores(fresh(), ["warm-up text"])
    for key in ("synth_nli", "synth_news", "synth_xsum"):
        dataset = OmegaConf.load(f"conf/dataset/{key}.yaml")
        texts = [e.full_text for e in sample(load_split(dataset, "test"), args.instances, seed=0)]
        tokens = sum(len(tokenizer(t).input_ids) for t in texts)
        batched, batched_s = timed(lambda: membership_scores(fresh(), texts))
        single, single_s = timed(lambda: [membership_scores(fresh(), [t])[0] for t in texts])
        assert all(abs(a["min_k_plus"] - b["min_k_plus"]) < 1e-3 for a, b in zip(batched, single))
        _, reference_s = timed(lambda: membership_scores(fresh(), texts, reference=fresh()))
        print(f"{key}: logit scores of {len(texts)} instances ({tokens} tokens): batched {batched_s:.2f} s, one at a "
              f"time {single_s:.2f} s -> {single_s / batched_s:.1f}x; with the reference model {reference_s:.2f} s")

    dataset = OmegaConf.load("conf/dataset/synth_news.yaml")
    split = load_split(dataset, "test")
    result, sharded_s = timed(lambda: sharded_likelihood_test(fresh(), [e.full_text for e in split[:40]],
                                                              n_shards=10, n_permutations=5))
    print(f"sharded likelihood test, 40 synth_news instances, 10 shards x (1 + 5) orders: {sharded_s:.1f} s "
          f"(p = {result['p_value']:.3f} on the clean model)")

    # A replica-like output: three real instances, lightly edited, among filler lines.
    output = "\n".join([f"text: {split[3].text}", "Some unrelated line about a dataset.",
                        f"text: {split[7].text.replace('the', 'a')}", f"label: {split[7].label}",
                        f"text: {split[11].text[:80]}", *[f"Line {i} of more filler text." for i in range(10)]])
    found, pruned_s = timed(lambda: match_replicas(output, split))
    lines = output_lines(output)

    def brute_force():
        return max(rouge_l(piece, line) for e in split for piece in reference_pieces(e) for line in lines)

    best, brute_s = timed(brute_force)
    assert abs(best - found["best"]["score"]) < 1e-9
    print(f"Cheat? replica search, {len(split)} instances x {len(lines)} lines: pruned {pruned_s:.2f} s, brute "
          f"force {brute_s:.2f} s -> {brute_s / pruned_s:.0f}x, same best match ({best:.3f}); "
          f"{len(found['replicas'])} replicas")


if __name__ == "__main__":
    main()
