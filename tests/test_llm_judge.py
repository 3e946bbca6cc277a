"""judge=llm: the paper's few-shot prompt, answer parsing, retries and `unparseable`, and a real run through
`transformers serve`."""

import json
import subprocess
import sys

import pytest
from lean import TINY_MODEL, lean

from detect.errors import InputError
from detect.judges.llm import ANSWERS, INSTRUCTION, REMINDER, LLMJudge, build_judge_prompt, parse_answer
from detect.judges.threshold import alg2_verdict

DEMOS = [{"reference": "a b c", "candidate": "a b c", "answer": "Yes (exact match)"},
         {"reference": "d e f", "candidate": "d e g", "answer": "Yes (near-exact match)"}]


def test_the_prompt_is_the_papers():
    prompt = build_judge_prompt("the reference", "the candidate", DEMOS)
    assert prompt.startswith(
        "INSTRUCTION:\nYou are provided with a reference text and a candidate text.\n"
        "The candidate text is a generated replica of the reference text.\n"
        "Your task is to determine if the candidate text is an exact or near-exact match of the reference text.\n"
        "Near-exact match candidates must PRECISELY match the reference candidates in terms of sentence structure, "
        "overlap, and contextual similarity.\nRespond only with 'Yes' or 'No'.\n\n---\n\nExample 1:\n\n")
    assert INSTRUCTION in prompt
    assert prompt.count("\n\n---\n\n") == 3  # two demonstrations and the query
    assert "Example 2:\n\nREFERENCE TEXT:\nd e f\n\nCANDIDATE TEXT:\nd e g\n\nANSWER: Yes (near-exact match)" in prompt
    assert prompt.endswith("Example 3:\n\nREFERENCE TEXT:\nthe reference\n\nCANDIDATE TEXT:\nthe candidate\n\nANSWER:")


@pytest.mark.parametrize("answer, label", [
    ("Yes (exact match)", "exact"), ("yes (near-exact match)", "near_exact"), ("Yes, near-exact.", "near_exact"),
    ("Yes", "near_exact"), ("No", "none"), ("No.\nThe candidate differs.", "none"),
    ("ANSWER: Yes (exact match)", "exact"),
    ("**Yes (exact match)**", "exact"), ("Maybe", None), ("", None), ("None of them", None), ("Not sure", None),
])
def test_parse_answer(answer, label):
    assert parse_answer(answer) == label


def test_unparseable_answers_are_asked_again_then_recorded():
    calls = []

    def generate(prompts):
        calls.append(prompts)
        # first round: one clear, one vague, one vague; on the reminder: the second answers, the third never does
        if len(calls) == 1:
            return ["No", "I think so", "hmm"]
        return ["Yes (exact match)" if "second" in p else "unclear" for p in prompts]

    rows = [{"reference": r, "completion": "c"} for r in ("first", "second", "third")]
    labels = LLMJudge(generate, DEMOS, retries=2)(rows)
    assert labels == ["none", "exact", "unparseable"]
    assert [len(c) for c in calls] == [3, 2, 1]  # only the unparseable ones again
    assert all(p.endswith(f"{REMINDER}\nANSWER:") for p in calls[1])
    assert [r["judge_answer"] for r in rows] == ["No", "Yes (exact match)", "unclear"]
    # never counted as a replica nor as a "No"
    assert not alg2_verdict(["unparseable"] * 10)
    assert alg2_verdict(["unparseable", "exact"])


def test_demonstrations_are_checked():
    with pytest.raises(InputError, match="a judge demonstration needs reference, candidate and an answer among"):
        LLMJudge(lambda p: p, [{"reference": "a", "candidate": "b", "answer": "Probably"}])
    assert set(ANSWERS) == {"exact", "near_exact", "none"}


@pytest.mark.slow
def test_judge_llm_through_a_real_server(served_model, tmp_path):
    """The embedded 135M model as judge: what it answers is not the point; that every answer is recorded and
    labelled exact / near_exact / none / unparseable is."""
    base_url, model_id = served_model
    command = [sys.executable, "-m", "detect", "+dataset=synth_nli", "model=tiny_random", "detect.max_new_tokens=8",
               "sample.n_detect=2", "detect.semantic_model=null", "judge=llm_with_no",
               f"judge.generator.base_url={base_url}", f"judge.generator.model={model_id}",
               "judge.generator.api_key_env=null", f"hydra.run.dir={tmp_path / 'run'}"]
    env = {**__import__("os").environ, "CONTAMINATION_LAB_CACHE": str(tmp_path / "cache")}
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    guided = [r for r in rows if r["instruction"] == "guided"]
    assert len(guided) == 2
    assert all(r["judge"] in ("exact", "near_exact", "none", "unparseable") and "judge_answer" in r for r in guided)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["judge"] == {"name": "llm", "model": model_id, "variant": "with_no", "demonstrations": 5,
                                "retries": 2}
    assert summary["alg2"]["unparseable"] == sum(r["judge"] == "unparseable" for r in guided)


def test_agreement_by_hand():
    from contaminate.calibrate import agreement

    result = agreement(["exact", "none", "none", "near_exact"], ["exact", "none", "near_exact", "near_exact"],
                       ("exact", "near_exact", "none", "unparseable"))
    # observed 3/4; expected by chance 1/4*1/4 + 1/4*2/4 + 2/4*1/4 = 5/16; kappa = (12/16 - 5/16) / (11/16) = 7/11
    assert result["agreement"] == 0.75 and result["kappa"] == pytest.approx(7 / 11)
    assert result["confusion"] == [[1, 0, 0, 0], [0, 1, 0, 0], [0, 1, 1, 0], [0, 0, 0, 0]]
    assert agreement(["none"] * 3, ["none"] * 3, ("exact", "none"))["kappa"] is None


@pytest.mark.slow
def test_a_study_judged_by_an_llm_gets_an_agreement_report(served_model, compose_config, tmp_path, monkeypatch):
    from contaminate.calibrate import main as calibrate_main
    from contaminate.run import run_config

    base_url, model_id = served_model
    monkeypatch.setenv("CONTAMINATION_LAB_CACHE", str(tmp_path / "models"))
    for seed in (0, 1):  # two models: calibration refuses one (no interval)
        # each request costs ~1 s on 2 cores: 2 instances a cell, and no re-asks (51 of 91 requests re-asked an
        # unparseable answer); re-asking is tested above, through the same server
        cfg = compose_config("contaminate", [
            "+dataset=synth_nli", *TINY_MODEL, "sample.n_members=8", "sample.n_non_members=8",
            "sample.n_detect=2", "contaminate.epochs=1", "detect.max_new_tokens=6", "detect.semantic_model=null",
            "judge=llm", "judge.retries=0", f"judge.generator.base_url={base_url}", f"judge.generator.model={model_id}",
            "judge.generator.api_key_env=null", *lean(), f"cache_dir={tmp_path / 'cache'}", f"seed={seed}"])
        run_config(cfg, tmp_path / "study" / f"s{seed}")
    calibration = json.loads((calibrate_main([str(tmp_path / "study")]) / "calibration.json").read_text())
    judges = calibration["judges"]
    assert judges["n"] == 2 * 5 * 2  # every guided completion of the five cells of both studies
    assert {"llm_vs_default", "llm_vs_calibrated", "llm_vs_truth", "default_vs_truth"} <= set(judges)
    assert sum(map(sum, judges["llm_vs_default"]["confusion"])) == 20
    report = (tmp_path / "study" / "calibration" / "calibration.md").read_text()
    assert "## Judges: the LLM judge, the threshold judges and the truth" in report


def test_a_local_model_as_judge(compose_config):
    """generation@judge.generator=local: the judge runs in-process (a tiny random model: its answers are noise, so
    what is checked is that each is recorded and labelled, retried where unparseable)."""
    from detect.cli import instantiate
    from detect.models import tiny_random

    cfg = compose_config("detect", ["+dataset=synth_nli", "judge=llm", "generation@judge.generator=local",
                                    f"judge.generator.model={tiny_random().path}", "judge.retries=1"])
    judge = instantiate(cfg.judge)
    rows = [{"reference": "a b c", "completion": "a b c"}, {"reference": "d e f", "completion": "x y z"}]
    labels = judge(rows)
    assert len(labels) == 2 and set(labels) <= {"exact", "near_exact", "none", "unparseable"}
    assert all("judge_answer" in row for row in rows)
    assert judge.describe()["name"] == "llm" and judge.describe()["demonstrations"] == 4
