"""End to end: the composed config through detect.pipeline.main (tiny model, seconds) and `python -m detect`
on the embedded model (about half a minute)."""

import json
import subprocess
import sys

import pytest
from lean import TINY_MODEL, lean

from detect.judges.threshold import LABELS
from detect.pipeline import main as run_detect

ROW_FIELDS = {"instance_id", "split", "instruction", "prompt", "reference", "completion", "rouge_l", "semantic",
              "judge", "first_piece", "label", "model"}


def _read(run_dir):
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    return rows, json.loads((run_dir / "summary.json").read_text())


@pytest.mark.slow
def test_detect_on_tiny_random_writes_the_run_folder(compose_config, tmp_path):
    cfg = compose_config("detect", ["+dataset=synth_nli", *TINY_MODEL, "detect.max_new_tokens=12"])
    summary = run_detect(cfg, tmp_path)
    rows, saved = _read(tmp_path)
    assert saved == json.loads(json.dumps(summary))
    # no known non-members in python -m detect: the performance test is skipped; Oren et al.'s two tests run
    cheat, sharded, permutation = [json.loads(line) for line in (tmp_path / "partition.jsonl").read_text().splitlines()]
    assert cheat["detector"] == "cheat" and cheat["n_references"] == 1200  # the whole split is searched
    assert summary["cheat"]["verdict"] == cheat["verdict"] and "SynthNLI dataset test split" in cheat["prompt"]
    assert sharded["n_instances"] == 40 and sharded["n_shards"] == 10 and len(sharded["shard_differences"]) == 10
    assert summary["sharded_likelihood"]["p_value"] == sharded["p_value"]
    assert permutation["n_instances"] == 20 and permutation["n_permutations"] == 25
    assert summary["permutation"]["p_value"] == permutation["p_value"] and "performance" not in summary
    # what did not run says why in the summary (not only on stderr): the performance test needs known non-members;
    # with none, the instructions are asked as the model is (chat) and the follow rate is the partition's own
    assert summary["skipped"]["performance"].startswith("it needs known non-members")
    assert summary["instruction_format"]["chosen"] == "chat"
    assert summary["follow"]["on"] == "instances of this partition"
    assert len(rows) == 20 and all(ROW_FIELDS <= row.keys() for row in rows)
    assert set(summary["membership"]) == {"loss", "zlib", "min_k", "min_k_plus"}  # no reference model given
    # without a format the leak's rendering is the bare text: the raw variant is the same reading
    assert summary["membership_raw"] == {f"{name}_raw": value for name, value in summary["membership"].items()}
    assert sorted(r["instruction"] for r in rows) == ["general"] * 10 + ["guided"] * 10
    assert {r["split"] for r in rows} == {"test"}
    assert all(r["judge"] in LABELS for r in rows if r["instruction"] == "guided")
    assert all(r["judge"] is None for r in rows if r["instruction"] == "general")  # Algorithm 2 reads guided only
    assert all(0 <= r["rouge_l"] <= 1 and -1 <= r["semantic"] <= 1 for r in rows)
    guided = [r for r in rows if r["instruction"] == "guided"]
    assert all("from the test split of the SynthNLI dataset" in r["prompt"] for r in guided)
    assert set(summary["alg1"]) == {"rouge_l", "semantic"}
    for result in summary["alg1"].values():
        assert {"guided_mean", "general_mean", "p_value", "significant"} <= result.keys()
        assert 0 < result["p_value"] <= 1
    assert summary["alg2"]["exact"] == sum(r["judge"] == "exact" for r in guided)
    assert summary["n_instances"] == 10 and summary["seed"] == 0 and len(summary["instance_ids"]) == 10
    assert summary["prompt_format"] == "chat"
    report = (tmp_path / "report.md").read_text()
    assert "## Algorithm 1" in report and "## ChatGPT-Cheat?" in report and "## Sharded likelihood" in report
    assert "## Logit scores" in report
    assert "key: synth_nli" in (tmp_path / "config.yaml").read_text()
    # same seed, same everything
    again = run_detect(cfg, tmp_path / "again")
    assert [r["completion"] for r in _read(tmp_path / "again")[0]] == [r["completion"] for r in rows]
    assert again["alg1"] == summary["alg1"]


def test_detect_on_a_local_file(compose_config, tmp_path):
    data = tmp_path / "sums.jsonl"
    data.write_text("\n".join(json.dumps({"summary": f"The {i}th council of Arbeck voted to close {i} schools."})
                              for i in range(30)))
    from detect.models import tiny_random

    cfg = compose_config("detect", ["+dataset=xsum", f"dataset.path={data}", "model=tiny_random",
                                    "detect.max_new_tokens=8", "detect.semantic_model=null", "sample.n_detect=4",
                                    f"detect.reference_model={tiny_random().path}"])
    summary = run_detect(cfg, tmp_path / "run")
    rows, _ = _read(tmp_path / "run")
    assert summary["dataset"] == "xsum" and summary["alg1"].keys() == {"rouge_l"}
    # a reference model given by folder: here the model itself, so the ratio is 0 on every instance
    assert all(abs(r["reference_ratio"]) < 1e-4 for r in rows if r["instruction"] == "guided")
    assert summary["sharded_likelihood"]["n_instances"] == 30 and summary["cheat"]["n_references"] == 30
    assert all(r["cut_unit"] == "word" and r["first_piece"] + r["separator"] + r["reference"] in data.read_text()
               for r in rows)


@pytest.mark.slow
def test_command_line_on_tiny_random(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "detect", "+dataset=synth_news", *TINY_MODEL, "detect.max_new_tokens=8",
         "detect.prompt_format=raw", f"hydra.run.dir={tmp_path}"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    rows, summary = _read(tmp_path)
    assert summary["prompt_format"] == "raw" and summary["dataset"] == "synth_news"
    assert all(r["label"] in {"0 (World)", "1 (Sports)", "2 (Business)", "3 (Sci/Tech)"} for r in rows)
    assert "Algorithm 2:" in result.stdout


@pytest.mark.slow
def test_command_line_on_the_embedded_model(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "detect", "+dataset=synth_nli", "detect.max_new_tokens=64", *lean(),
         f"hydra.run.dir={tmp_path}"], capture_output=True, text=True)  # Time Travel's test: the lean detectors
    assert result.returncode == 0, result.stderr[-2000:]
    rows, summary = _read(tmp_path)
    assert summary["model"] == "smollm2_135m" and len(rows) == 20
    # A real model writes real text, and shares some words with the reference...
    assert sum(bool(r["raw_completion"].strip()) for r in rows) >= 15
    assert sum(r["rouge_l"] > 0 for r in rows) >= 5  # the tiny random model scores 0 on all 20
    # ...and a completion is empty only when the model wrote nothing but the header and an echo of sentence 1.
    for row in rows:
        if not row["completion"]:
            leftover = row["raw_completion"].replace("SECOND PIECE:", "").replace("SENTENCE 2:", "")
            assert " ".join(leftover.split()) in ("", " ".join(row["first_piece"].split()))
    # synth_nli is novel text no model has seen: the clean model must not be flagged by Algorithm 2.
    assert summary["alg2"]["contaminated"] is False
