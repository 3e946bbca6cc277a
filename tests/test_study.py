"""The study loop: the whole study on the tiny model (seconds), reuse, resumption, errors, and the study on
the embedded model with a small dose."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from lean import LEAK_READING, NO_EMBEDDING, TINY_MODEL, TINY_STUDY, lean

from contaminate.run import run_config
from contaminate.stages import CELLS, KNOWN_CELLS
from detect.errors import InputError

TINY = TINY_STUDY


@pytest.fixture
def study(compose_config, tmp_path):
    def _run(*overrides, run="run", cache="cache", full=False):
        """A tiny study, lean (tests/lean.py) unless ``full``: every detector."""
        cfg = compose_config("contaminate", [*TINY, *([] if full else lean()), f"cache_dir={tmp_path / cache}",
                                             *overrides])
        summary = run_config(cfg, tmp_path / run).groups["members"]
        return summary, tmp_path / run

    return _run


def _rows(folder: Path, name: str = "results.jsonl") -> list[dict]:
    return [json.loads(line) for line in (folder / name).read_text().splitlines()]


@pytest.mark.slow
def test_the_whole_study_writes_every_file_and_field(study):
    # the order tests skip a web copy by default (no order to find); here they run anyway, the one study test of them
    summary, folder = study("detect.detectors.sharded_likelihood.require_order=false",
                            "detect.detectors.permutation.require_order=false", full=True)
    for name in ("manifest.json", "results.jsonl", "summary.json", "report.md", "config.yaml", "train_log.json",
                 "loss.png"):
        assert (folder / name).is_file(), name
    assert (folder / "checkpoint" / "model" / "model.safetensors").is_file()
    found = summary["decontamination"]["detectors"]  # the data-side check of its stream (contaminate/decontam.py)
    assert found["gpt3_13gram"]["groups"]["members"]["flagged"] == 12  # every member's document, verbatim
    assert found["gpt3_13gram"]["groups"]["non-members"]["flagged"] == 0 and "embedding" not in found
    assert json.loads((folder / "summary.json").read_text())["decontamination"]["detectors"] == found
    report = (folder / "report.md").read_text()  # and in the report, beside the detectors
    assert "Would decontamination have caught it?" in report and "| members | metadata | 12/12 (1.00) |" in report
    blind = summary["blind_baseline"]  # the texts alone, no model: 12 members vs 12 non-members of a random split
    assert (blind["n_members"], blind["n_non_members"]) == (12, 12) and blind["low"] <= blind["auc"] <= blind["high"]
    assert "Blind baseline (the texts alone" in (folder / "report.md").read_text()
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["base_model"]["name"] == "tiny_random" and manifest["dataset"]["key"] == "synth_nli"
    assert manifest["split"] == "test" and manifest["other_split"] == "train"
    assert len(manifest["member_ids"]) == len(manifest["non_member_ids"]) == 12
    assert not set(manifest["member_ids"]) & set(manifest["non_member_ids"])
    assert set(manifest["detection_ids"]["members"]) <= set(manifest["member_ids"])
    assert manifest["format"]["name"] == "metadata" and "SynthNLI dataset, test split" in manifest["format"]["example"]
    assert manifest["contaminate"]["backend"] == "full" and manifest["contaminate"]["epochs"] == 1
    assert "peft" not in manifest["contaminate"]  # full fine-tuning: no adapter block
    assert summary["backend"] == "full"
    assert manifest["seeds"]["training"] == 0 and manifest["packages"]["transformers"]
    assert "git_commit" in manifest and manifest["timings"]["train_s"] > 0
    assert manifest["checkpoint"]["reused"] is False and manifest["checkpoint"]["id"]
    # where every model ran, as the runtime policy resolved it (auto on this CPU machine: cpu, float32)
    runtime = manifest["runtime"]
    assert runtime["requested"] == {"device": "auto", "dtype": "auto", "device_map": None}
    assert runtime["resolved"]["device"] == "cpu" and runtime["resolved"]["dtype"] == "float32"
    assert set(runtime["models"]) == {"contaminated", "clean"}  # the semantic score is off in these runs
    assert all(m == {"device": "cpu", "dtype": "float32"} for m in runtime["models"].values())
    assert runtime["training"] == {"device": "cpu", "weights": "float32", "autocast": None, "processes": 1,
                                   "padding_free": True}
    resolved = (folder / "config.yaml").read_text()
    assert "runtime:\n  device: cpu\n  dtype: float32" in resolved
    checkpoint = manifest["checkpoint"]
    assert checkpoint["trained_tokens"] > 0 and checkpoint["steps"] == 3 and checkpoint["tokens_per_second"] > 0
    # the stages' timings, and per computed cell the tokens it generated and scored
    assert {"sample_s", "train_s", "detect_s", "summarize_s", "total_s"} <= set(manifest["timings"])
    for cell, *_ in CELLS:
        timing = manifest["timings"]["cells"][cell]
        assert timing["generated_tokens"] > 0 and timing["scored_tokens"] > 0 and timing["total_s"] > 0

    rows = instance_rows = _rows(folder)
    # the five cells' guided, general and leak-reading rows, then each model's 40 known non-members
    # (sample.n_heldout: a study's sample=small), guided only
    assert len(instance_rows) == len(CELLS) * 3 * 4 + len(KNOWN_CELLS) * 40
    known = [r for r in rows if r["cell"].endswith("known_non_members")]
    assert {r["instruction"] for r in known} == {"guided"} and {r["ground_truth"] for r in known} == {"clean"}
    assert {r["instance_id"] for r in known} == set(manifest["known_non_member_ids"])
    assert not set(manifest["known_non_member_ids"]) & {*manifest["member_ids"], *manifest["non_member_ids"]}
    assert all(isinstance(r["loss_raw"], float) and isinstance(r["dc_pdd"], float) for r in known)
    # each model's recipe on its own 40: too few to bound one exact label among 4 at 5% (76 needed), enough for the
    # rule's near-exact part alone (12): that part, fitted and said so, and each of the model's cells under it
    recipe = summary["recipe"]
    assert set(recipe["models"]) == {"contaminated", "clean"} and recipe["rule"] == [1, 2]
    clean = recipe["models"]["clean"]
    assert clean["narrowed"] == {"rule": {"min_exact": 1, "min_near_exact": 2}, "needs": 76}
    assert clean["rule"] == {"min_exact": None, "min_near_exact": 2} and clean["bound"] <= 0.05
    assert set(recipe["cells"]) == {cell for cell, *_ in CELLS}
    assert all(block["exact"] == 0 for block in recipe["cells"].values())  # the near-exact part alone: never exact
    # what the command prints closes with each model's fitted recipe and its cells' verdicts under it, none refused
    from contaminate.reports.run import command_lines

    lines = command_lines(summary)
    assert not any("refused" in line for line in lines)
    for model in ("contaminated", "clean"):
        assert f"recipe on the {model} model: the recipe on 40 known non-members, its near-exact part alone" in \
            "\n".join(lines)
    assert sum(" recipe: " in line for line in lines) == len(CELLS)
    assert "## Algorithm 2 with the recipe" in (folder / "report.md").read_text()
    # each cell: one ChatGPT-Cheat? row over its whole pool (12), Oren et al.'s two order tests and the performance
    # test of that pool
    partition = _rows(folder, "partition.jsonl")
    assert sorted((r["cell"], r["detector"]) for r in partition) == sorted(
        (cell, detector) for cell, *_ in CELLS
        for detector in ("cheat", "sharded_likelihood", "permutation", "performance"))
    cheat = next(r for r in partition if r["detector"] == "cheat" and r["cell"] == "contaminated_x_other_split")
    assert cheat["n_references"] == 12 and "SynthNLI dataset train split" in cheat["prompt"]
    sharded = next(r for r in partition if r["detector"] == "sharded_likelihood")
    assert sharded["n_instances"] == 12 and sharded["n_shards"] == 4 and 0 <= sharded["p_value"] <= 1
    # logit scores on every guided row; the clean model is its own reference, so its ratio is 0
    guided = [r for r in instance_rows if r["instruction"] == "guided"]
    assert all(isinstance(r["min_k_plus"], float) for r in guided)
    assert all(abs(r["reference_ratio"]) < 1e-4 for r in guided if r["checkpoint"] == "clean")
    assert all(abs(r["reference_ratio"]) > 1e-4 for r in guided if r["checkpoint"] == "contaminated")
    assert {r["cell"] for r in rows} == {cell for cell, *_ in (*CELLS, *KNOWN_CELLS)}
    assert {(r["cell"], r["checkpoint"]) for r in rows} == {(cell, checkpoint) for cell, checkpoint, *_ in
                                                            (*CELLS, *KNOWN_CELLS)}
    other = [r for r in rows if r["cell"] == "contaminated_x_other_split"]
    assert {r["split"] for r in other} == {"train"} and "the train split" in other[0]["prompt"]
    assert {r["model"] for r in rows if r["checkpoint"] == "contaminated"} == {"tiny_random+full"}

    saved = json.loads((folder / "summary.json").read_text())
    assert saved == json.loads(json.dumps(summary))
    # every generated answer is classed (follow.py); each model's follow rate on its 40 known non-members is the one
    # its cells' Algorithm 1 / 2 are read against; each cell has its answers by reading (and Cheat?'s one answer)
    from detect.detectors.time_travel.follow import CLASSES

    assert all(r["answer_class"] in CLASSES for r in rows if r["raw_completion"] is not None)
    assert all(r["answer_class"] is None for r in rows if r["raw_completion"] is None)
    assert set(saved["follow"]) == {"contaminated", "clean"}
    for checkpoint, follow in saved["follow"].items():
        known = [r for r in rows if r["cell"] == f"{checkpoint}_x_known_non_members"]
        assert follow["n"] == 40 and follow["on"] == "known non-members" and follow["rate"] == sum(
            r["answer_class"] == "continuation" for r in known) / 40
    assert saved["cells"]["clean_x_members"]["follow"] == saved["follow"]["clean"]
    # a study's default reading (detect=one_shot): the tiny model has the embedded model's chat template, but its
    # instructions are asked as the leak went in (metadata: raw), after one worked example, and every guided /
    # general answer of its cells was asked so (detect=default, each way and the higher follow rate chosen:
    # test_the_papers_reading_asks_each_model_both_ways below)
    for checkpoint, follow in saved["follow"].items():
        rates = {name: r["rate"] for name, r in follow["by_format"].items()}
        assert set(rates) == {"raw"} and follow["prompt_format"] == "raw" and follow["shots"] == 1
        assert rates[follow["prompt_format"]] == follow["rate"]
        asked = {r["prompt_format"] for r in rows if r["checkpoint"] == checkpoint and r["instruction"] != "leak"
                 and r["raw_completion"] is not None}
        assert asked == {follow["prompt_format"]}
    assert {r["prompt_format"] for r in rows if r["instruction"] == "leak"} == {"raw"}
    assert set(saved["cells"]["contaminated_x_members"]["answers"]) == {"guided", "general", "leak", "cheat"}
    assert saved["cells"]["contaminated_x_members"]["answers"]["guided"]["n"] == 4
    for cell, checkpoint, pool, truth in CELLS:
        result = saved["cells"][cell]
        assert result["ground_truth"] == truth and result["checkpoint"] == checkpoint
        assert result["correct"]["alg2"] == (result["alg2"]["contaminated"] == (truth == "contaminated"))
        assert result["correct"]["alg2_leak"] == (result["alg2_leak"]["contaminated"] == (truth == "contaminated"))
        flagged = result["alg1"]["rouge_l"]["significant"]
        assert result["correct"]["alg1_rouge_l"] == (flagged == (truth == "contaminated"))
        assert result["correct"]["cheat_lenient"] == (result["cheat"]["lenient"] == (truth == "contaminated"))
        assert result["correct"]["sharded_likelihood"] == (
            result["sharded_likelihood"]["significant"] == (truth == "contaminated"))
        assert set(result["membership"]) == {"loss", "zlib", "min_k", "min_k_plus", "reference_ratio"}
    assert saved["accuracy"]["alg2"] == sum(c["correct"]["alg2"] for c in saved["cells"].values()) / len(CELLS)
    report = (folder / "report.md").read_text()
    assert "cf. the paper's Table 1" in report and "contaminated_x_members" in report and "loss.png" in report
    assert "## Replicas among the leak reading's completions (oracle" in report and "Alg. 2 leak (oracle)" in report
    assert "Cheat? strict / lenient" in report and "sharded likelihood" in report and "min_k_plus" in report
    assert "on cpu in float32." in report
    assert "## Did the model answer the instruction?" in report and "- clean model: follow " in report


@pytest.mark.slow
def test_the_papers_reading_asks_each_model_both_ways_and_keeps_the_format_it_follows_more(study):
    """detect=default (the paper's zero-shot prompts, every experiment's reading): each model's guided instruction
    is asked on its known non-members raw and through the chat template, the format with the higher follow rate is
    kept, and every guided / general answer of its cells is asked in it; no worked example before any prompt."""
    summary, folder = study("detect=default")
    rows = _rows(folder)
    for checkpoint, follow in summary["follow"].items():
        rates = {name: r["rate"] for name, r in follow["by_format"].items()}
        assert set(rates) == {"chat", "raw"} and rates[follow["prompt_format"]] == max(rates.values())
        assert rates[follow["prompt_format"]] == follow["rate"] and follow["shots"] == 0
        asked = {r["prompt_format"] for r in rows if r["checkpoint"] == checkpoint and r["instruction"] != "leak"
                 and r["raw_completion"] is not None}
        assert asked == {follow["prompt_format"]}
        assert not any("---" in r["prompt"] for r in rows if r["checkpoint"] == checkpoint and r.get("prompt"))


@pytest.mark.slow
def test_reuse_resume_and_force(study):
    first, folder = study()
    # same training config: the checkpoint and every cell are reused, rows unchanged
    _, again = study(run="again")
    manifest = json.loads((again / "manifest.json").read_text())
    assert manifest["checkpoint"]["reused"] is True and len(manifest["cached_cells"]) == len(CELLS) + len(KNOWN_CELLS)
    assert _rows(again) == _rows(folder)
    # what the command prints, the same verdicts from the cache
    from contaminate.reports.run import command_lines

    assert command_lines(json.loads((folder / "summary.json").read_text())) == \
        command_lines(json.loads((again / "summary.json").read_text()))
    # killed before one cell finished: only that cell is computed again
    cache = folder.parent / "cache" / "cells"
    victim = sorted(cache.glob("*.jsonl"))[0]
    victim.unlink()
    _, resumed = study(run="resumed")
    assert len(json.loads((resumed / "manifest.json").read_text())["cached_cells"]) == len(CELLS) + len(KNOWN_CELLS) - 1
    # Equal up to float rounding: a recomputed cell's logit scores come from batches of another composition
    # (its reference statistics are no longer shared with the cached clean cell), which moves the 7th digit.
    assert _rows(resumed) == [{k: pytest.approx(v, rel=1e-5) if isinstance(v, float) else v for k, v in row.items()}
                              for row in _rows(folder)]
    # killed mid-training: the unfinished checkpoint folder is trained again
    checkpoint = Path(manifest["checkpoint"]["folder"])
    (checkpoint / "lab_checkpoint.json").unlink()
    _, retrained = study(run="retrained")
    assert json.loads((retrained / "manifest.json").read_text())["checkpoint"]["reused"] is False
    # force: retrained, and the contaminated cells are recomputed for the new checkpoint
    _, forced = study("contaminate.force=true", run="forced")
    forced_manifest = json.loads((forced / "manifest.json").read_text())
    assert forced_manifest["checkpoint"]["reused"] is False
    assert set(forced_manifest["cached_cells"]) == {"clean_x_members", "clean_x_non_members",
                                                    "clean_x_known_non_members"}


@pytest.mark.slow
def test_a_different_training_config_is_not_reused(study):
    study()
    _, other = study("contaminate.learning_rate=2e-4", run="other")
    assert json.loads((other / "manifest.json").read_text())["checkpoint"]["reused"] is False


@pytest.mark.slow
def test_same_seed_same_members_cuts_and_completions(study):
    _, first = study(cache="cache_a")
    _, second = study(run="second", cache="cache_b")  # nothing shared: trained again from scratch
    strip = lambda rows: [{k: v for k, v in r.items() if k != "model"} for r in rows]  # noqa: E731
    assert strip(_rows(first)) == strip(_rows(second))
    _, reseeded = study("seed=1", run="reseeded", cache="cache_a")
    ids = lambda folder: json.loads((folder / "manifest.json").read_text())["member_ids"]  # noqa: E731
    assert ids(reseeded) != ids(first)


@pytest.mark.slow
def test_bad_input(study, tmp_path):
    too_few = "synth_nli test has 1200 instances, too few for 1000 members \\+ 1000 non-members"
    with pytest.raises(InputError, match=too_few):
        study("sample.n_members=1000", "sample.n_non_members=1000")
    with pytest.raises(InputError, match=r"names \{premise\}, which dataset synth_nli lacks"):
        study("format.templates.nli='{title} {premise}'")
    summary, folder = study()
    manifest = json.loads((folder / "manifest.json").read_text())
    (Path(manifest["checkpoint"]["folder"]) / "model" / "model.safetensors").unlink()
    with pytest.raises(InputError, match="checkpoint .* is missing or corrupt .*contaminate.force=true"):
        study(run="corrupt")


def test_unknown_backend_on_the_command_line(tmp_path):
    result = subprocess.run([sys.executable, "-m", "contaminate", "+dataset=synth_nli", "contaminate=openai_api",
                             f"hydra.run.dir={tmp_path}"], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.strip() == "error: unknown contaminate 'openai_api'; use one of full, lora, openai"


@pytest.mark.slow
def test_study_on_the_embedded_model_with_a_small_dose(tmp_path):
    """The real pipeline on SmolLM2-135M: 16 members, one epoch, 4 instances per cell, the lean detectors
    (tests/lean.py) with ChatGPT-Cheat?, the performance test and Algorithm 2's leak reading, which read a real
    model's text, and the order tests' skip line (about two minutes)."""
    result = subprocess.run(
        [sys.executable, "-m", "contaminate", "+dataset=synth_nli", "sample.n_members=16", "sample.n_non_members=16",
         "sample.n_detect=4", "contaminate.epochs=1", "detect.max_new_tokens=48",
         *lean(keep=("cheat", "performance", "permutation", "sharded_likelihood")), *LEAK_READING,
         f"cache_dir={tmp_path}/cache",
         f"hydra.run.dir={tmp_path}/run"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    folder = tmp_path / "run"
    summary = json.loads((folder / "summary.json").read_text())
    manifest = json.loads((folder / "manifest.json").read_text())
    rows = _rows(folder)
    assert manifest["base_model"]["name"] == "smollm2_135m" and manifest["checkpoint"]["reused"] is False
    assert manifest["checkpoint"]["final_loss"] < manifest["checkpoint"]["first_loss"]  # training did something
    partition = _rows(folder, "partition.jsonl")
    # guided, general and the leak reading per instance; the known non-members' guided ones
    assert len(rows) == len(CELLS) * 3 * 4 + len(KNOWN_CELLS) * 8 and all(r["completion"] is not None for r in rows)
    # Cheat? and the performance test per cell; the order tests skip the web copy (no order to find), said once
    assert sorted(r["detector"] for r in partition) == sorted(["cheat", "performance"] * len(CELLS))
    assert "permutation skipped on smollm2_135m: the leak's format metadata lays out one instance a document" \
        in result.stderr
    assert "no order to find" in manifest["timings"]["cells"]["contaminated_x_members"]["skipped"]["permutation"]
    for cell, *_ in CELLS:
        outcome = summary["cells"][cell]
        assert outcome["cheat"]["verdict"] in ("clean", "suspicious", "contaminated")
        assert "sharded_likelihood" not in outcome and "permutation" not in outcome
        # one epoch already makes the members more likely under the contaminated model than under the base
        if cell == "contaminated_x_members":
            assert outcome["membership"]["reference_ratio"] > 0
        counts = summary["cells"][cell]["alg2"]
        guided = [r for r in rows if r["cell"] == cell and r["instruction"] == "guided"]
        assert counts["exact"] == sum(r["judge"] == "exact" for r in guided)
        assert counts["near_exact"] == sum(r["judge"] == "near_exact" for r in guided)
        leak = [r for r in rows if r["cell"] == cell and r["instruction"] == "leak"]
        assert summary["cells"][cell]["alg2_leak"]["exact"] == sum(r["judge"] == "exact" for r in leak)
        assert all(r["prompt"].startswith(f"SynthNLI dataset, {r['split']} split\nsentence1: ") and
                   r["prompt"].endswith("sentence2:") for r in leak)  # the web copy itself, no instruction
    # the leak reading on real generation: the contaminated model continues its members' documents closer to them
    # than the untouched model does (one epoch of 16 members)
    mean_leak = {cell: sum(r["rouge_l"] for r in rows if r["cell"] == cell and r["instruction"] == "leak") / 4
                 for cell in ("contaminated_x_members", "clean_x_members")}
    assert mean_leak["contaminated_x_members"] > mean_leak["clean_x_members"], mean_leak
    # the base model on novel text: the clean cells of the clean model stay clean
    assert not summary["cells"]["clean_x_members"]["alg2"]["contaminated"]
    assert not summary["cells"]["clean_x_non_members"]["alg2"]["contaminated"]
    assert "contaminated_x_members" in result.stdout and "cheat_strict" in result.stdout.splitlines()[-1]


@pytest.mark.slow
def test_training_on_two_processes_saves_once_and_reports_once(tmp_path):
    """A distributed launch (torchrun: what accelerate launch --multi_gpu runs on GPUs; here two CPU processes
    over gloo): both train data-parallel, the main process alone saves, detects and reports."""
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m", "contaminate", *TINY, *lean(),
         f"cache_dir={tmp_path}/cache", f"hydra.run.dir={tmp_path}/run"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("cells right:") == 1
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["checkpoint"]["placement"]["processes"] == 2
    assert manifest["checkpoint"]["steps"] == 2  # 12 documents, batch 4 per process, 2 processes
    assert len(list((tmp_path / "cache" / "checkpoints").glob("*/lab_checkpoint.json"))) == 1


@pytest.mark.slow
def test_paper_table1_runs_one_study_per_task_shape(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "contaminate", "+experiment=paper_table1", *TINY_MODEL, "sample.n_members=8",
         "sample.n_non_members=8", "sample.n_detect=2", "contaminate.epochs=1", "detect.max_new_tokens=4",
         "detect.semantic_model=null", *lean(), *NO_EMBEDDING, f"cache_dir={tmp_path}/cache",
         f"hydra.sweep.dir={tmp_path}/sweep"],
        capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    studies = sorted(path.name for path in (tmp_path / "sweep").iterdir() if path.is_dir())
    assert studies == ["0_synth_nli_full", "1_synth_news_full", "2_synth_xsum_full"]
    tasks = {json.loads((tmp_path / "sweep" / s / "manifest.json").read_text())["dataset"]["task"] for s in studies}
    assert tasks == {"nli", "classification", "one_sentence_summary"}


@pytest.mark.slow
def test_changed_data_under_the_same_ids_is_not_reused(compose_config, tmp_path):
    # A local file edited in place keeps its instance ids; the cached checkpoint and cells must not be reused.
    data = tmp_path / "nli"
    data.mkdir()
    for split in ("train", "test"):
        rows = [{"sentence1": f"Person {i} sold {i} boats in town {i}.", "sentence2": f"Person {i} sold boats.",
                 "label": "entailment" if i % 2 else "not_entailment"} for i in range(40)]
        (data / f"{split}.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    overrides = [*TINY, *lean(), f"dataset.path={data}", f"cache_dir={tmp_path / 'cache'}"]
    first = run_config(compose_config("contaminate", overrides), tmp_path / "first").groups["members"]
    # Each pair is 12 words: GPT-3's 13-gram filter can read none of them and says so; the study goes on.
    assert "larger than every instance" in first["decontamination"]["skipped"]["gpt3_13gram"]
    assert "gpt3_13gram" not in first["decontamination"]["detectors"]
    assert "llama3_8gram" in first["decontamination"]["detectors"]
    test_file = data / "test.jsonl"
    test_file.write_text(test_file.read_text().replace("boats", "canoes"))
    run_config(compose_config("contaminate", overrides), tmp_path / "edited")
    manifest = json.loads((tmp_path / "edited" / "manifest.json").read_text())
    assert manifest["checkpoint"]["reused"] is False
    assert manifest["cached_cells"] == []  # the other split is unchanged, but its model is a new checkpoint
    assert all("canoes" in r["reference"] for r in _rows(tmp_path / "edited") if r["split"] == "test")


@pytest.mark.slow
def test_a_changed_detector_recomputes_the_cells_but_keeps_the_checkpoint(study, monkeypatch, tmp_path):
    import contaminate.stages as study_module

    extra = tmp_path / "scorer_patch.py"
    extra.write_text("THRESHOLD = 1\n")
    monkeypatch.setattr(study_module, "DETECTOR_CODE", [*study_module.DETECTOR_CODE, extra])
    study()
    extra.write_text("THRESHOLD = 2\n")  # stands for any edit to detect/*.py
    _, second = study(run="second")
    manifest = json.loads((second / "manifest.json").read_text())
    assert manifest["checkpoint"]["reused"] is True and manifest["cached_cells"] == []
