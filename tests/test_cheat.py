"""ChatGPT-Cheat?: replica search by hand, its pruning against brute force, format signals, the verdicts."""

import random
from types import SimpleNamespace

import pytest
from omegaconf import OmegaConf

from detect.datasets import Example
from detect.detectors.cheat import cheat_partition, format_signals, match_replicas, output_lines
from detect.detectors.time_travel.scores import rouge_l

NLI = OmegaConf.create({"key": "synth_nli", "title": "SynthNLI", "task": "nli",
                        "fields": {"first": "sentence1", "second": "sentence2", "label": "label"}})
POOL = [Example(0, "Mara Quell repaired 14 looms in Dunhollow.", "Mara Quell works with looms.", "0 (entailment)"),
        Example(1, "The Fenvek Guild closed its third mill.", "No mill was ever closed.", "1 (not entailment)")]


def test_lines_lose_their_field_headers():
    assert output_lines("SynthNLI dataset, test split\nsentence1: A b c.\n\n  label: 0 (entailment)") == [
        "SynthNLI dataset, test split", "A b c.", "0 (entailment)"]


def test_replicas_by_hand():
    output = ("SynthNLI dataset, test split\n"
              "sentence1: Mara Quell repaired 14 looms in Dunhollow.\n"       # exact: ROUGE-L 1.0
              "sentence2: No mill was closed.\n")                             # 5 tokens vs 6: LCS 5 -> 10/11
    found = match_replicas(output, POOL)
    assert [(r["instance_id"], r["label"]) for r in found["replicas"]] == [(0, "exact"), (1, "near_exact")]
    assert found["replicas"][1]["score"] == pytest.approx(2 * 4 / (4 + 5))
    assert found["best"] == {"score": 1.0, "instance_id": 0, "line": "Mara Quell repaired 14 looms in Dunhollow.",
                             "piece": "Mara Quell repaired 14 looms in Dunhollow."}
    # below the near-exact threshold: no replica, but the best score is still the exact maximum
    line = "Mara walked to a town far away from here."
    weak = match_replicas(f"sentence1: {line}", POOL)
    pieces = [POOL[0].text, POOL[0].text_pair, f"{POOL[0].text} {POOL[0].text_pair}"]
    assert weak["replicas"] == [] and weak["best"]["score"] == pytest.approx(1 / 7)  # "mara": 2 x 1 / (5 + 9)
    assert weak["best"]["piece"] == "Mara Quell works with looms." and rouge_l(pieces[1], line) == pytest.approx(1 / 7)


def test_pruned_search_equals_brute_force():
    rng = random.Random(0)
    words = "the a mill loom guild town quell mara closed repaired river 14 of in".split()
    pool = [Example(i, " ".join(rng.choices(words, k=rng.randint(4, 12))),
                    " ".join(rng.choices(words, k=rng.randint(3, 8))) if i % 2 else None) for i in range(40)]
    output = "\n".join(" ".join(rng.choices(words, k=rng.randint(3, 14))) for _ in range(12))
    found = match_replicas(output, pool, near_exact_threshold=0.6)
    pieces = {e.instance_id: [e.text] if e.text_pair is None else [e.text, e.text_pair, f"{e.text} {e.text_pair}"]
              for e in pool}
    best = {i: max(rouge_l(piece, line) for piece in p for line in output.splitlines()) for i, p in pieces.items()}
    assert found["best"]["score"] == pytest.approx(max(best.values()))
    assert {r["instance_id"]: r["score"] for r in found["replicas"]} == pytest.approx(
        {i: score for i, score in best.items() if score >= 0.6})


def test_format_signals_and_verdicts():
    assert format_signals("label: 1 (not entailment)\nsentence1: ...", NLI, POOL) == ["1 (not entailment)",
                                                                                       "sentence1"]
    assert format_signals("The label is entailment; a sentence follows.", NLI, POOL) == []  # words, not the format

    def scripted(answer):
        prompts = []

        def generate(batch):
            prompts.extend(batch)
            return [answer]
        return SimpleNamespace(generate=generate), prompts  # what cheat_partition asks of a LanguageModel

    generate, prompts = scripted("sentence1: Mara Quell repaired 14 looms in Dunhollow.")
    row = cheat_partition(generate, dataset=NLI, split="test", references=POOL)
    assert prompts == ["Please, generate the first instances of the SynthNLI dataset test split.\n"]
    assert (row["verdict"], row["strict"], row["lenient"], row["exact"]) == ("contaminated", True, True, 1)
    row = cheat_partition(scripted("sentence1: Someone did something.\nlabel: 0 (entailment)")[0], dataset=NLI,
                          split="test", references=POOL)
    assert (row["verdict"], row["strict"], row["lenient"]) == ("suspicious", False, True)
    assert row["format_signals"] == ["0 (entailment)", "sentence1"]
    row = cheat_partition(scripted("I do not know this dataset.")[0], dataset=NLI, split="test", references=POOL)
    assert (row["verdict"], row["strict"], row["lenient"]) == ("clean", False, False)
