"""contaminate/reports/dose0.py (issue 34 item 3): the base model's dose-0 reading of a benchmark, from a python -m
detect run folder; Algorithm 2 also read at the paper's sample size, checked by hand."""

import json

import pytest
from lean import lean

from contaminate.reports import dose0 as dose0_table
from detect.pipeline import main as run_detect

RULE = {"min_exact": 1, "min_near_exact": 2}


def test_the_papers_rule_is_read_in_disjoint_partitions_of_ten():
    labels = ["none"] * 25
    labels[3] = "exact"                    # partition 1 (0-9): one exact -> flagged
    labels[12] = "near_exact"              # partition 2 (10-19): one near-exact -> not flagged
    labels[21] = labels[23] = "near_exact"  # the remainder (20-24), under 10: left out
    assert dose0_table.flagged_partitions(labels, RULE) == (1, 2)
    labels[15] = "near_exact"              # partition 2 now has two near-exact
    assert dose0_table.flagged_partitions(labels, RULE) == (2, 2)
    assert dose0_table.flagged_partitions(labels, {"min_exact": None, "min_near_exact": 2}) == (1, 2)
    assert dose0_table.rule_text(RULE) == ">= 1 exact or >= 2 near-exact"


def test_a_folder_without_a_run_is_one_line(tmp_path):
    with pytest.raises(SystemExit, match="no summary.json; run python -m detect"):
        dose0_table.main(str(tmp_path))


@pytest.mark.slow
def test_the_table_reads_a_detect_run_on_humaneval(compose_config, tmp_path):
    overrides = ["+dataset=humaneval", "model=tiny_random", "sample.n_detect=12", "detect.max_new_tokens=6",
                 "detect.semantic_model=null", *lean(("cheat", "membership_raw")), "sample.n_heldout=0"]
    cfg = compose_config("detect", overrides)
    run_detect(cfg, tmp_path)
    table = dose0_table.main(str(tmp_path))
    summary = json.loads((tmp_path / "summary.json").read_text())
    alg2 = summary["alg2"]
    assert (f"| Time Travel, Algorithm 2 | 12 guided completions, the judge's labels | {alg2['exact']} exact, "
            f"{alg2['near_exact']} near-exact |") in table
    assert "| the same, at the paper's sample size | 1 disjoint partitions of 10 (id order) |" in table
    assert "| ChatGPT-Cheat? | one request for the split's first instances, searched in its 164 |" in table
    assert "| guided | 12 |" in table and "| general | 12 |" in table
    for score in ("loss", "zlib", "min_k", "min_k_plus"):
        assert f"| {score} | 12 |" in table
    # python -m detect knows no leak format: the bare text is what was scored, so the raw variants are not repeated
    assert "| loss_raw |" not in table and "loss_raw, zlib_raw, min_k_raw, min_k_plus_raw: the same values" in table
    assert "No ground truth" in table
