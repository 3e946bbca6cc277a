"""The docs hold what the code prints: no pasted traceback, every documented command a config the lab accepts, the
README's headline tables as the script generates them from the committed calibration, and the committed
calibration as its committed studies recompute it."""

import json
import math
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRANSFER = ROOT / "results" / "transfer_cpu"   # calibrated with results/planted_cpu's studies
HEADLINE = ROOT / "results" / "profile_cpu"    # the headline tables (docs/findings.md): a calibration a dataset
HEADLINE_DOSE0 = ROOT / "results" / "humaneval_dose0"


def _docs() -> list[Path]:
    return [ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("results/*/README.md"),
            *ROOT.glob("results/*/*.md")]


def test_no_traceback_stands_in_the_docs():
    pasted = [str(path.relative_to(ROOT)) for path in _docs() if "Traceback (most recent call last)" in
              path.read_text()]
    assert not pasted, f"a traceback where a table or a number should be: {pasted}"



def test_the_readme_runs_the_tests_as_ci_does():
    """The README's test command is .ci/run's, install to pytest: what a contributor runs is what CI runs."""
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci.startswith('CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install') and "python -m pytest" in ci
    assert ci in (ROOT / "README.md").read_text().splitlines()


def test_no_doc_points_outside_the_repository_and_every_cited_method_section_exists():
    """A clone has no ../shared/: the method specification is docs/method.md, and "method section N" names one of
    its sections."""
    outside = [str(path.relative_to(ROOT)) for path in _docs() if "../shared" in path.read_text()]
    assert not outside, f"a doc links outside the repository: {outside}"
    sections = {int(n) for n in re.findall(r"^## (\d+)\. ", (ROOT / "docs" / "method.md").read_text(), re.M)}
    assert sections == set(range(1, 14))
    cited = set()
    code = [*ROOT.glob("detect/**/*.py"), *ROOT.glob("contaminate/**/*.py"), *ROOT.glob("conf/**/*.yaml")]
    for path in [*_docs(), *code]:
        text = path.read_text()
        cited |= {int(n) for n in re.findall(r"method sections? (\d+)", text)}
        cited |= {int(n) for n in re.findall(r"method sections? \d+-(\d+)", text)}
    assert cited and cited <= sections, f"cited method sections that docs/method.md lacks: {sorted(cited - sections)}"

def documented_commands() -> list[tuple[str, str, list[str]]]:
    """Every ``python -m detect`` / ``python -m contaminate`` in a shell block of the README and docs/: (where,
    program, arguments), continuation lines joined, comments dropped, ``<placeholders>`` and ``$vars`` filled."""
    found = []
    for path in [ROOT / "README.md", *sorted(ROOT.glob("docs/*.md"))]:
        for block in re.findall(r"```(?:bash|sh)?\n(.*?)```", path.read_text(), re.S):
            for line in re.sub(r"\\\n\s*", " ", block).splitlines():
                match = re.search(r"python -m (detect|contaminate)(\s.*)?$", line)
                if match:
                    arguments = re.split(r"\s#\s", match.group(2) or "")[0]
                    arguments = re.sub(r"\$\w+", "1", re.sub(r"<[^>]*>", "org/placeholder", arguments))
                    found.append((f"{path.name}: {line.strip()[:100]}", match.group(1), shlex.split(arguments)))
    return found


def test_every_documented_command_is_a_config_the_lab_accepts():
    """Composed as the command line composes it (group choices checked, a multirun's first value of each swept
    key, an experiment's sweep included) and checked as the run would check it before any work: a renamed group
    or key, a removed option or a value out of range in the docs fails here. Paths that only exist on the
    reader's machine (a corpus folder) are the one failure allowed."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from contaminate.run import check_config
    from detect.cli import CONF_DIR, check_overrides
    from detect.errors import InputError
    from detect.pipeline import check_detection

    commands = documented_commands()
    assert len(commands) >= 25
    for where, program, arguments in commands:
        first = [a.split(",")[0] if "=" in a and "(" not in a else a
                 for a in arguments if a not in ("-m", "--multirun")]
        for experiment in [a.split("=", 1)[1] for a in first if a.startswith("+experiment=")]:
            swept = OmegaConf.load(CONF_DIR / "experiment" / f"{experiment}.yaml").hydra.sweeper.params
            given = {a.split("=", 1)[0] for a in first}
            first += [f"{key}={str(value).split(',')[0]}" for key, value in swept.items() if key not in given]
        overrides = check_overrides([program, *first])[1:]
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose("detect" if program == "detect" else "contaminate", overrides)
        try:
            check_detection(cfg) if program == "detect" else check_config(cfg)
        except InputError as error:
            assert "no such file" in str(error), f"{where}: {error}"


def _headline_tables():
    from contaminate.reports import headline

    return headline


def test_the_readme_is_a_front_door():
    """At most 150 lines, the headline's first block (bullets or a table) at most eight lines, each results folder
    it links there a real one."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150, "README.md: move detail into docs/ (the README is read in two minutes)"
    headline = readme.split("## Headline")[1].split("\n\n")[1]
    assert 0 < len(headline.splitlines()) <= 8
    linked = re.findall(r"\]\((results/[^)#]+)\)", headline)
    assert linked and all((ROOT / folder / "README.md").is_file() for folder in linked), linked


def differences(found, committed, where: str = "", rel: float = 1e-9) -> list[str]:
    """Where two JSON values differ, floats compared to ``rel`` (a fresh install's scikit-learn or numpy may round the
    16th digit of a fitted calibration otherwise: 0.4992753387524862 against 0.49927533875248625); NaN equals NaN."""
    if isinstance(found, dict) and isinstance(committed, dict):
        if set(found) != set(committed):
            return [f"{where}: keys {sorted(set(found) ^ set(committed))}"]
        return [d for key in found for d in differences(found[key], committed[key], f"{where}.{key}", rel)]
    if isinstance(found, list) and isinstance(committed, list):
        if len(found) != len(committed):
            return [f"{where}: {len(found)} items against {len(committed)}"]
        return [d for i, (a, b) in enumerate(zip(found, committed)) for d in differences(a, b, f"{where}[{i}]", rel)]
    if isinstance(found, bool) or isinstance(committed, bool):
        return [] if found is committed else [f"{where}: {found!r} against {committed!r}"]
    if isinstance(found, float) and isinstance(committed, (int, float)):
        same = (math.isnan(found) and math.isnan(committed)) or math.isclose(found, committed, rel_tol=rel,
                                                                              abs_tol=1e-12)
        return [] if same else [f"{where}: {found} against {committed}"]
    return [] if found == committed else [f"{where}: {found!r} against {committed!r}"]


def test_differences_compares_floats_to_their_rounding_and_everything_else_exactly():
    assert differences({"a": [0.4992753387524862, "x"]}, {"a": [0.49927533875248625, "x"]}) == []
    assert differences({"a": float("nan"), "b": float("inf")}, {"a": float("nan"), "b": float("inf")}) == []
    assert differences({"a": [0.5, "x"]}, {"a": [0.5001, "x"]}) == [".a[0]: 0.5 against 0.5001"]
    assert differences({"a": 1}, {"a": 1, "b": 2}) == [": keys ['b']"] and differences(True, 1.0) != []


PLANTED = ROOT / "results" / "planted_cpu"
UNITS = ROOT / "results" / "units_cpu"
RECIPE = ROOT / "results" / "replicas_recipe_cpu"   # issue 45 item 5: the recipe where members replay, six draws
RECIPE_GEMMA = ROOT / "results" / "replicas_recipe_gemma_cpu"  # issue 69 item 3: that design on Gemma 3 270M
RECIPE_GEMMA_ELICIT = ROOT / "results" / "replicas_recipe_gemma_elicit"  # the same checkpoints elicited before read
RECIPE_CODE = ROOT / "results" / "replicas_recipe_humaneval_cpu"  # the same on HumanEval, elicited, partitions of 6
SHIFT = ROOT / "results" / "replicas_recipe_humaneval_shift"  # issue 47 item 4: that design on a rewritten known pool
ARMS = ROOT / "results" / "elicit_arms_humaneval"  # issue 68 item 4: that design as left and elicited, new draws
TRAINED_ARMS = ROOT / "results" / "shift_arms_trained"  # issue 68 item 3: those models' known pool by rewrite arm


@pytest.mark.slow
@pytest.mark.parametrize("folder, studies, options", [
    (UNITS, [UNITS], ["--transfer"]), (PLANTED, [PLANTED], []), (TRANSFER, [PLANTED, TRANSFER], []),
    (HEADLINE / "humaneval", [HEADLINE / "humaneval"], []), (HEADLINE / "synth_nli", [HEADLINE / "synth_nli"], []),
    (RECIPE, [RECIPE], []), (RECIPE_GEMMA, [RECIPE_GEMMA], []), (RECIPE_GEMMA_ELICIT, [RECIPE_GEMMA_ELICIT], []),
    (RECIPE_CODE, [RECIPE_CODE], ["--partition-size", "6"]),
    (SHIFT, [SHIFT], ["--partition-size", "6"]), (SHIFT / "as_drawn", [SHIFT / "as_drawn"], ["--partition-size", "6"]),
    (ARMS / "none", [ARMS / "none"], ["--partition-size", "6"]),
    (ARMS / "elicit", [ARMS / "elicit"], ["--partition-size", "6"]),
    *((TRAINED_ARMS / arm, [TRAINED_ARMS / arm], ["--partition-size", "6"])
      for arm in ("rewrite", "rename", "reword"))],
    ids=["units", "planted", "transfer", "profile_humaneval", "profile_synth_nli", "replicas_recipe",
         "replicas_recipe_gemma", "replicas_recipe_gemma_elicited", "replicas_recipe_humaneval",
         "recipe_shift_rewritten", "recipe_shift_as_drawn",
         "elicit_arms_as_left",
         "elicit_arms_elicited", "trained_arms_rewrite", "trained_arms_rename", "trained_arms_reword"])
def test_the_committed_calibration_recomputes_from_its_committed_studies(tmp_path, folder, studies, options):
    from contaminate.calibrate import main

    main([*(str(f / "studies") for f in studies), *options, "--out", str(tmp_path)])
    _same_calibration(tmp_path, folder)


def _same_calibration(again_dir: Path, folder: Path) -> None:
    """A calibration recomputed in ``again_dir`` is the committed one in ``folder``: its table (but its timestamp),
    every block of calibration.json that comes from the studies, and the same cards."""
    def without_timestamp(path: Path) -> list[str]:
        return [line for line in path.read_text().splitlines() if "Generated" not in line]

    assert without_timestamp(again_dir / "calibration.md") == without_timestamp(folder / "calibration.md")
    again, committed = (json.loads((f / "calibration.json").read_text()) for f in (again_dir, folder))
    for block in ("by_regime", "recipe", "cards", "cross_model_thresholds"):
        assert not differences(again[block], committed[block]), (block, differences(again[block], committed[block])[:5])
    assert sorted(p.name for p in again_dir.glob("card*.json")) == sorted(p.name for p in folder.glob("card*.json"))


def test_the_shifted_pools_table_is_the_scripts_output():
    """results/replicas_recipe_humaneval_shift/shift.md (included in its README, quoted in docs/findings.md and
    docs/calibration.md) as contaminate/analyses/paired.py prints it from the two committed calibrations."""
    from contaminate.analyses import paired

    command = ("python -m contaminate.analyses.paired results/replicas_recipe_humaneval_shift/as_drawn "
               "results/replicas_recipe_humaneval_shift > results/replicas_recipe_humaneval_shift/shift.md")
    assert paired.report(SHIFT / "as_drawn", SHIFT) == (SHIFT / "shift.md").read_text(), command


def test_the_elicitation_arms_table_is_the_scripts_output():
    """results/elicit_arms_humaneval/arms.md (included in its README) as contaminate/analyses/paired.py prints it from
    the two committed calibrations of the same draws, as the leak left them and elicited."""
    from contaminate.analyses import paired

    command = ("python -m contaminate.analyses.paired results/elicit_arms_humaneval/none "
               "results/elicit_arms_humaneval/elicit --labels 'as left' elicited "
               "> results/elicit_arms_humaneval/arms.md")
    assert paired.report(ARMS / "none", ARMS / "elicit", ("as left", "elicited")) == (ARMS / "arms.md").read_text(), \
        command
    command = ("python -m contaminate.analyses.paired results/replicas_recipe_gemma_cpu "
               "results/replicas_recipe_gemma_elicit --labels 'as left' elicited "
               "> results/replicas_recipe_gemma_elicit/arms.md")
    assert paired.report(RECIPE_GEMMA, RECIPE_GEMMA_ELICIT, ("as left", "elicited")) == \
        (RECIPE_GEMMA_ELICIT / "arms.md").read_text(), command


@pytest.mark.slow
def test_the_trained_shift_arms_tables_are_the_scripts_output(tmp_path):
    """results/shift_arms_trained: its as-drawn calibration recomputes from results/elicit_arms_humaneval's studies of
    the same two draws, and each arm's table (included in its README) is contaminate/analyses/paired.py's output from
    the two committed calibrations."""
    from contaminate.analyses import paired
    from contaminate.calibrate import main

    main([str(ARMS / "none" / "studies" / draw) for draw in ("s6", "s7")] + ["--partition-size", "6", "--out",
                                                                              str(tmp_path)])
    _same_calibration(tmp_path, TRAINED_ARMS / "as_drawn")
    for arm in ("rewrite", "rename", "reword"):
        command = (f"python -m contaminate.analyses.paired {TRAINED_ARMS / 'as_drawn'} {TRAINED_ARMS / arm} "
                   f"--labels 'as drawn' {arm} > {TRAINED_ARMS / arm}.md")
        assert paired.report(TRAINED_ARMS / "as_drawn", TRAINED_ARMS / arm, ("as drawn", arm)) == \
            (TRAINED_ARMS / f"{arm}.md").read_text(), command


def test_the_template_spread_tables_are_the_scripts_output():
    """Every results/template_spread/<reading>/table.md as contaminate/analyses/template_spread.py renders its kept
    spread.json (the numbers bench/template_spread.py measured), so no wording's row is edited by hand."""
    from contaminate.analyses.template_spread import render

    folders = sorted(p.parent for p in (ROOT / "results" / "template_spread").glob("*/spread.json"))
    assert len(folders) >= 5  # both untouched models and three fine-tuned readings
    for folder in folders:
        kept = json.loads((folder / "spread.json").read_text())
        assert render(kept["found"], kept["header"]) + "\n" == (folder / "table.md").read_text(), \
            f"python -m contaminate.analyses.template_spread {folder}/spread.json > {folder}/table.md"


def test_the_recipe_needs_table_is_the_scripts_output():

    from contaminate.analyses import recipe_needs

    assert recipe_needs.table() == (ROOT / "results" / "recipe_needs" / "needs.md").read_text(), \
        "python -m contaminate.analyses.recipe_needs > results/recipe_needs/needs.md"


def test_the_planted_profile_tables_are_the_scripts_output():
    """results/planted_cpu/tables.md as contaminate/reports/planted.py prints it from the committed runs' plant.json and
    the committed calibration (its README includes the file)."""

    from contaminate.reports import planted as planted_table

    for folder in (PLANTED, RECIPE, RECIPE_GEMMA, RECIPE_GEMMA_ELICIT, RECIPE_CODE):
        assert planted_table.main(str(folder / "studies"), str(folder)) == (folder / "tables.md").read_text(), \
            f"python -m contaminate.reports.planted {folder}/studies {folder} > {folder}/tables.md"


def test_the_best_prefix_table_is_the_scripts_output():
    """results/replicas_recipe_cpu/best_prefix.md (in its README and quoted in docs/detectors.md) as
    contaminate/analyses/best_prefix.py prints it from the committed rows; the recipe's flags under the paper's reading
    agree with the committed calibration's recipe table (a second computation of the same TPR)."""
    import io
    from contextlib import redirect_stdout

    from contaminate.analyses import best_prefix as best_prefix_judge

    printed = io.StringIO()
    with redirect_stdout(printed):
        best_prefix_judge.main([str(RECIPE / "studies")])
    assert printed.getvalue() == (RECIPE / "best_prefix.md").read_text(), \
        f"python -m contaminate.analyses.best_prefix {RECIPE}/studies > {RECIPE}/best_prefix.md"
    recipe = printed.getvalue().split("## The recipe")[1]
    assert "| paper (as generated) | 6/6 (1.00 [0.54, 1.00]) | 6/6 (1.00 [0.54, 1.00]) | 5/6" in recipe


def test_the_profile_tables_are_the_scripts_output():
    """results/profile_cpu's runs.md and tables.md as contaminate/reports/planted.py and contaminate/reports/headline.py
    print them from the committed studies and calibrations (its README includes both)."""

    from contaminate.reports import planted as planted_table

    assert planted_table.main(str(HEADLINE / "humaneval" / "studies")) == (HEADLINE / "runs.md").read_text(), \
        "python -m contaminate.reports.planted results/profile_cpu/humaneval/studies > results/profile_cpu/runs.md"
    assert _headline_tables().tables(HEADLINE, HEADLINE_DOSE0) == (HEADLINE / "tables.md").read_text(), \
        "python -m contaminate.reports.headline results/profile_cpu --dose0 results/humaneval_dose0 > .../tables.md"


def test_the_readme_first_command_output_is_what_the_command_prints_from_the_measured_summary():
    """The README's block of what the first command prints is, line by line, what the measured run printed
    (results/readme_study_71/lean/stdout.txt, below its run folder's line) and
    contaminate.reports.run.command_lines of that run's committed summary: what a fresh run prints, and what the code
    prints from its summary today."""
    import re

    from contaminate.reports.run import command_lines

    readme = (ROOT / "README.md").read_text()
    block = re.search(r"The first command prints.*?\n```\n(.*?)\n```", readme, re.DOTALL).group(1).splitlines()
    measured = ROOT / "results" / "readme_study_71" / "lean"
    printed = (measured / "stdout.txt").read_text().splitlines()
    assert block[0] == "runs/contaminate/<time>_synth_nli_smollm2_135m_full"
    assert re.fullmatch(r".*runs/contaminate/[\d_-]+_synth_nli_smollm2_135m_full", printed[0])
    assert block[1:] == printed[1:]
    assert block[1:] == command_lines(json.loads((measured / "summary.json").read_text()))


def test_the_profile_answers_table_is_the_modules_output():
    """results/profile_cpu/answers.md (included in its README): every answer of the committed rows classed again
    (follow.py) and its follow rate over runs, as python -m contaminate.analyses.answers prints it."""
    from contaminate.analyses.answers import main

    folders = [str(HEADLINE / "humaneval" / "studies"), str(HEADLINE / "synth_nli" / "studies")]
    assert main(folders) == (HEADLINE / "answers.md").read_text(), \
        "python -m contaminate.analyses.answers results/profile_cpu/{humaneval,synth_nli}/studies > .../answers.md"


def test_a_planted_run_resumed_from_the_cache_says_its_detection_time_is_the_last_invocations(tmp_path):
    """A run stopped and resumed reads its finished member cells from the cache: its detect s covers only the last
    invocation, and the table says how many groups' members an earlier one detected (manifests as a run writes them,
    and gzipped as --keep-studies keeps them)."""
    import gzip

    from contaminate.reports import planted as planted_table

    def manifest(group: str, cached: list[str], gz: bool) -> None:
        folder = tmp_path / "groups" / group
        folder.mkdir(parents=True)
        text = json.dumps({"cached_cells": cached}).encode()
        (folder / ("manifest.json.gz" if gz else "manifest.json")).write_bytes(gzip.compress(text) if gz else text)

    assert planted_table.members_cached(tmp_path) == (0, 0)
    manifest("x1", ["contaminated_x_members", "contaminated_x_non_members"], gz=True)
    manifest("x2", ["contaminated_x_non_members", "contaminated_x_known_non_members"], gz=False)  # detected now
    manifest("x4", ["contaminated_x_members"], gz=False)
    assert planted_table.members_cached(tmp_path) == (2, 3)
    run = {"folder": "s1", "draw": 1, "seed": 1, "stream": {"training_tokens": 1000, "tokens": {"background": 900}},
           "checkpoint": {"steps": 3, "train_seconds": 10.0, "tokens_per_second": 100.0},
           "timings": {"detect_x1_s": 0.0, "detect_x2_s": 5.0, "detect_x4_s": 0.0}, "members_cached": (2, 3),
           "groups": [{"name": "x1", "exposures": 1, "token_share": 0.01, "tokens": 10}]}
    assert "| 10 | 5 (resumed: 2 of 3 groups' members detected earlier) | 1.00% |" in planted_table.runs_table([run])[2]
    assert "resumed" not in planted_table.runs_table([{**run, "members_cached": (0, 3)}])[2]


def test_included_result_tables_are_the_files_the_scripts_wrote():
    """docs blocks marked ``<!-- include results/... -->`` hold their file's content (contaminate/reports/includes.py),
    and the detector-fix AUC table recomputes from its committed per-instance scores
    (contaminate/analyses/detector_fixes.py)."""

    from contaminate.reports import includes as include_tables

    for path in _docs():
        text = path.read_text()
        assert include_tables.filled(text) == text, f"python -m contaminate.reports.includes {path.relative_to(ROOT)}"
    fixes = ROOT / "results" / "detector_fixes"
    if (fixes / "scores.jsonl").is_file():
        from contaminate.analyses import detector_fixes

        assert detector_fixes.table(fixes) == (fixes / "auc.md").read_text()
        assert detector_fixes.studies_table(fixes) == (fixes / "studies.md").read_text()
        if (fixes / "orders.md").is_file():
            assert detector_fixes.orders_table(fixes) == (fixes / "orders.md").read_text()


def test_the_readme_study_table_is_the_scripts_output():
    """results/readme_study/table.md and fp32/table.md (included in docs/study.md) as contaminate/reports/study.py
    prints them from the committed summary and manifest of the README's first command (bf16, and float32 forced)."""

    from contaminate.reports import study as study_table

    for folder in (ROOT / "results" / "readme_study", ROOT / "results" / "readme_study" / "fp32",
                   *(ROOT / "results" / "readme_study_45" / name for name in ("before", "after", "elicit")),
                   ROOT / "results" / "readme_study_46" / "after",
                   *(ROOT / "results" / "readme_study_71" / name
                     for name in ("default", "shots3", "small", "small_shots2", "lean", "lean/before", "lean/fp32"))):
        name = folder.relative_to(ROOT)
        assert study_table.main(str(folder)) == (folder / "table.md").read_text(), \
            f"python -m contaminate.reports.study {name} > {name}/table.md"


def test_the_dose0_table_is_the_scripts_output():
    """results/humaneval_dose0/table.md (included in its README) as contaminate/reports/dose0.py prints it from the
    committed summary and rows of the base model's run on all of HumanEval (issue 34 item 3)."""

    from contaminate.reports import dose0 as dose0_table

    folder = ROOT / "results" / "humaneval_dose0"
    assert dose0_table.main(str(folder)) == (folder / "table.md").read_text(), \
        "python -m contaminate.reports.dose0 results/humaneval_dose0 > results/humaneval_dose0/table.md"


def test_the_replicas_tables_are_the_scripts_output():
    """results/replicas_cpu/tables.md (included in its README) as contaminate/analyses/replicas.py prints it from the
    kept records: each run's plant.json, config.yaml and its groups' rows."""

    from contaminate.analyses import replicas as replicas_table

    folder = ROOT / "results" / "replicas_cpu"
    assert replicas_table.main(str(folder / "studies")) == (folder / "tables.md").read_text(), \
        "python -m contaminate.analyses.replicas results/replicas_cpu/studies > results/replicas_cpu/tables.md"


def test_the_pilot_tables_are_the_scripts_output():
    """results/pilot_cpu/tables.md (included in its README) as contaminate/analyses/pilot.py prints it from the
    committed runs' plant.json and config.yaml (issue 34 item 5)."""

    from contaminate.analyses import pilot as pilot_table

    folder = ROOT / "results" / "pilot_cpu"
    assert pilot_table.main(str(folder / "studies")) == (folder / "tables.md").read_text(), \
        "python -m contaminate.analyses.pilot results/pilot_cpu/studies > results/pilot_cpu/tables.md"


def test_the_gpu_tables_are_the_scripts_output():
    """results/gpu_*/table.md (included in docs/gpu.md) as contaminate/reports/gpu.py prints them from the committed
    bench JSON and planted runs' records of the two H200 sessions and the H100 one."""

    from contaminate.reports import gpu as gpu_table

    for name in ("gpu_h200", "gpu_h200_1b", "gpu_h100_1b"):
        folder = ROOT / "results" / name
        assert gpu_table.main(str(folder)) == (folder / "table.md").read_text(), \
            f"python -m contaminate.reports.gpu results/{name} > results/{name}/table.md"


def test_the_gpu_table_prints_a_run_without_finite_losses_as_no_measurement(tmp_path):
    """A training rate timed over non-finite losses is not a number for the docs: the JSON's own loss (NaN), or,
    for a JSON from before bench_gpu.py kept one, the Trainer's line in the log beside it (its filtered mean, 0)."""
    import json

    from contaminate.reports import gpu as gpu_table

    args = {"attn": "sdpa", "batch_size": 16, "doc_tokens": 512, "prompt_tokens": 150, "new_tokens": 128}
    training = {"steps_timed": 10, "parameters": 1.24e9, "tokens_per_s": 27414, "model_tflops": 206.0,
                "mfu": 0.208, "max_memory_gib": 36.0}
    for name, extra, log in [("bench_a", {"train_loss": float("nan")}, None), ("bench_b", {}, "{'train_loss': '0'}"),
                             ("bench_c", {"train_loss": 11.76}, None), ("bench_d", {}, "{'train_loss': '11.76'}")]:
        (tmp_path / f"{name}.json").write_text(json.dumps({"device": "GPU", "args": {**args, "attn": name},
                                                           "training": {**training, **extra}}))
        if log:
            (tmp_path / f"{name}.log").write_text(log)
    rows = {line.split(",")[1].strip(): line for line in gpu_table.throughput_lines(tmp_path) if "training," in line}
    assert "no measurement" in rows["bench_a"] and "nan" in rows["bench_a"]
    assert "no measurement: mean training loss 0" in rows["bench_b"]
    for finite in ("bench_c", "bench_d"):
        assert "27,414 | 206.0 | 20.8% | 36.0 GiB" in rows[finite]


def test_the_config_groups_table_is_generated_from_conf():
    """docs/generated/config_groups.md (included in docs/study.md) as contaminate/reports/config_groups.py prints it
    from conf/: a group, an option or a setting added to conf/ and not to the docs fails here."""

    from contaminate.reports import config_groups as config_groups

    assert config_groups.table() == (ROOT / "docs" / "generated" / "config_groups.md").read_text(), \
        ("python -m contaminate.reports.config_groups > docs/generated/config_groups.md; "
         "python -m contaminate.reports.includes docs/study.md")
    assert "`paraphrase`" in config_groups.table() and "`planted_cpu`" in config_groups.table()


def test_no_test_loads_a_file_by_path():
    """What a test reads of the lab it imports as a package (contaminate.reports for the table generators): a script
    loaded by path is code the package does not ship and the linter's import checks never see."""
    loaders = ("sys.path.insert", "sys.path.append", "spec_from_file_location", "runpy.run_path")
    found = [f"{path.name}:{number}" for path in sorted((ROOT / "tests").glob("*.py")) if path.name != "test_docs.py"
             for number, line in enumerate(path.read_text().splitlines(), 1) if any(x in line for x in loaders)]
    assert not found, f"load these through the package instead: {found}"


def test_every_markdown_table_goes_through_one_helper():
    """detect/markdown.py's table: a header, its rule and its rows by hand; and no other module of the lab (bench/'s
    scripts included) writes a table's rule line itself (issue 46: 59 headers were built by hand beside the one
    helper), nor a row (issue 70: 85 rows were f-strings ``f"| {a} | {b} |"`` or ``"| " + " | ".join(cells) + " |"``
    beside ``row``; bench/ had 18 more)."""
    import ast

    from detect.markdown import row, table

    assert table(["a", "b"], [[1, "x"], ["", 2.5]]) == ["| a | b |", "|---|---|", "| 1 | x |", "| | 2.5 |"]
    assert row(["", "value"]) == "| | value |"

    def starts_a_row(node: ast.AST) -> bool:
        """A string literal (plain, or an f-string's first literal part) that opens a table line: "| ...", "|---",
        or a lone "|" followed by a formatted value (f"|{cell}...")."""
        if isinstance(node, ast.JoinedStr) and node.values:
            first, *rest = node.values
            return (isinstance(first, ast.Constant) and isinstance(first.value, str)
                    and (first.value.startswith(("| ", "|-"))
                         or (first.value == "|" and bool(rest) and isinstance(rest[0], ast.FormattedValue))))
        return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(("| ", "|-"))

    def rows_by_hand(source: str) -> list[int]:
        """Lines that build a table line by hand: such a literal, or a concatenation whose first operand is one or
        a lone "|" (``"|" + "---|" * n``, ``"| " + " | ".join(cells) + " |"``)."""
        found = set()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
                first = node.left
                while isinstance(first, ast.BinOp) and isinstance(first.op, ast.Add):
                    first = first.left
                if starts_a_row(first) or (isinstance(first, ast.Constant) and first.value == "|"):
                    found.add(node.lineno)
            elif starts_a_row(node):
                found.add(node.lineno)
        return sorted(found)

    assert rows_by_hand('x = f"| {a} | {b:.3f} |"\ny = f"|{a}|"\nz = "| " + " | ".join(c) + " |"\n'
                        'w = "|" + "---|" * n\nv = "| {} |".format(a)\n') == [1, 2, 3, 4, 5]
    assert rows_by_hand('x = row([a, f"{b:.3f}"])\ny = "|".join(p)\nz = " | ".join(c)\nw = f"{a} | {b}"\n') == []
    modules = [path for package in ("detect", "contaminate", "bench") for path in sorted((ROOT / package).rglob("*.py"))
               if path.name != "markdown.py"]
    by_hand = [f"{path.relative_to(ROOT)}:{number}" for path in modules
               for number, line in enumerate(path.read_text().splitlines(), 1) if "|---" in line]
    assert not by_hand, f"write these tables with detect.markdown.table: {by_hand}"
    by_hand = [f"{path.relative_to(ROOT)}:{number}" for path in modules for number in rows_by_hand(path.read_text())]
    assert not by_hand, f"write these rows with detect.markdown.row (or table): {by_hand}"


def test_every_interval_goes_through_one_helper():
    """Issue 70 item 4: "estimate [low, high]" is written by detect/markdown.py's interval_text, the same format spec
    on all three numbers; no module of the lab builds "[{low}, {high}]" by hand beside it (a count "k/n [low, high]"
    excepted: its estimate is no number in the bounds' format)."""
    from detect.markdown import interval_text

    assert interval_text(0.1666, 0.0, 0.6) == "0.17 [0.00, 0.60]"
    assert interval_text(0.08, -0.0091, 0.1694, "+.3f") == "+0.080 [-0.009, +0.169]"
    assert interval_text(0.8125, 0.62, 0.95049, ".3f") == "0.812 [0.620, 0.950]"
    assert interval_text(1, 0.5, 1.0, ".3f") == "1.000 [0.500, 1.000]"
    assert interval_text("0.50", "0.12", "never", spec="") == "0.50 [0.12, never]"  # formatted by the caller

    by_hand = re.compile(r"\[\{[^}]*low[^}]*\}, \{[^}]*high")
    allowed = {"contaminate/reports/calibration_regimes.py": 1}  # fraction: "3/6 [0.12, 0.88]"
    found = {}
    for package in ("detect", "contaminate"):
        for path in sorted((ROOT / package).rglob("*.py")):
            count = len(by_hand.findall(path.read_text()))
            if count > allowed.get(str(path.relative_to(ROOT)), 0):
                found[str(path.relative_to(ROOT))] = count
    assert not found, f"write these intervals with detect.markdown.interval_text: {found}"


def test_the_readme_headline_states_each_studys_planted_share_of_the_training_tokens():
    """Issue 47 item 6: every headline names its regime by the planted share of the training tokens, as the
    committed runs' plant.json (or the power profile's kept run.json) counted it (``planted_share_text``)."""
    from contaminate.reports.planted import planted_share_text

    readme = (ROOT / "README.md").read_text()
    headline = readme[readme.index("## Headline"):readme.index("## Read more")]
    headline = " ".join(headline.split())
    power = [planted_share_text(ROOT / "results" / name / "studies") for name in ("power_cpu", "power_gemma_cpu")]
    assert f"a small fine-tune planted {power[0]} / {power[1]} of the tokens" in headline, power
    recipe = [planted_share_text(folder / "studies") for folder in (RECIPE, RECIPE_CODE, RECIPE_GEMMA)]
    assert f"planted {recipe[0]} / {recipe[1]} / {recipe[2]} of the tokens" in headline, recipe


def test_the_power_profiles_status_is_the_scripts_output():
    """results/power_cpu/status.md (included in its README) as contaminate/analyses/power.py prints it from the kept
    runs, one line each: its unit, stream, cost and pass@1 by dose."""
    import io
    from contextlib import redirect_stdout

    from contaminate.analyses import power

    folder = ROOT / "results" / "power_cpu"
    printed = io.StringIO()
    with redirect_stdout(printed):
        power.main([str(folder / "studies"), "--status"])
    assert printed.getvalue() == (folder / "status.md").read_text(), \
        "python -m contaminate.analyses.power results/power_cpu/studies --status > results/power_cpu/status.md"


def test_the_power_profiles_tables_are_the_scripts_output(tmp_path):
    """results/power_cpu/tables.md and power.json (the README's findings quote them) as contaminate/analyses/power.py
    prints and writes them from the kept runs and the contrasts registered in conf/experiment/power_cpu.yaml."""
    import io
    from contextlib import redirect_stdout

    from contaminate.analyses import power

    folder = ROOT / "results" / "power_cpu"
    printed = io.StringIO()
    with redirect_stdout(printed):
        power.main([str(folder / "studies"), "--json", str(tmp_path / "power.json")])
    command = ("python -m contaminate.analyses.power results/power_cpu/studies --json results/power_cpu/power.json "
               "> results/power_cpu/tables.md")
    assert printed.getvalue() == (folder / "tables.md").read_text(), command
    found, committed = (json.loads(path.read_text()) for path in (tmp_path / "power.json", folder / "power.json"))
    assert not differences(found, committed), (differences(found, committed)[:5], command)


def test_every_interval_the_power_findings_quote_is_in_the_profiles_tables():
    """The power profile's and the shifted recipe's findings (their READMEs, the top README's headline,
    docs/findings.md and calibration.md) are prose over results/power_cpu/tables.md and
    results/replicas_recipe_humaneval_shift/shift.md: every estimate with its interval they quote ("0.72 [0.68,
    0.76]", "+0.178 [+0.126, +0.229]") and every pooled count ("43/240") stands in the tables as the report printed
    it (a threshold's move, "-0.123 [-0.141, -0.105]", may be quoted as a fall: "0.123 [0.105, 0.141]")."""
    tables = (ROOT / "results" / "power_cpu" / "tables.md").read_text()
    shifted = (SHIFT / "shift.md").read_text()
    falls = {f"{m[0]} [{m[2]}, {m[1]}]" for m in re.findall(r"-(\d\.\d{3}) \[-(\d\.\d{3}), -(\d\.\d{3})\]", shifted)}
    tables += shifted + "\n".join(sorted(falls))
    tables += "".join((ROOT / "results" / name / "tables.md").read_text()  # the recipe's unshifted rates beside them
                      for name in ("replicas_recipe_cpu", "replicas_recipe_humaneval_cpu", "replicas_recipe_gemma_cpu"))
    tables += (RECIPE_GEMMA / "answers.md").read_text()  # its follow rates (issue 69 item 3)
    tables += "".join((RECIPE_GEMMA_ELICIT / name).read_text() for name in ("tables.md", "answers.md", "arms.md",
                                                                               "best_prefix.md"))
    # the untouched models' follow rates (the headline's last row)
    tables += "".join((ROOT / "results" / "follow_untouched" / path).read_text()
                      for path in ("table.md", "gemma3_270m/table.md"))
    tables += (ARMS / "arms.md").read_text()  # the recipe as left and elicited (issue 68 item 4)
    # the second model's run, its thresholds across models and its untouched pass@1 (issue 69)
    tables += "".join((ROOT / "results" / path).read_text() for path in (
        "power_gemma_cpu/tables.md", "power_gemma_cpu/transfer.md", "pass_at_1_untouched/gemma3_270m/table.md"))
    quoted = re.compile(r"[+-]?\d\.\d{2,3} \[[+-]?\d\.\d{2,3}, [+-]?\d\.\d{2,3}\]|\b\d+/\d{3}\b")
    regions = [("results/power_cpu/README.md", "## Findings", "## Runs"), ("README.md", "## Headline", "## Read more"),
               ("docs/findings.md", "## The power profile", "## The profile:"),
               ("docs/findings.md", "## The recipe under shift", "## The second model"),
               ("docs/findings.md", "## The second model", "## The profile's tables"),
               ("docs/calibration.md", "Every study reads its known non-members", "The calibration fits the recipe"),
               ("results/replicas_recipe_humaneval_shift/README.md", "## What it shows", "## The two fits"),
               ("docs/findings.md", "## Elicited and not", "## The recipe under shift"),
               ("results/elicit_arms_humaneval/README.md", "## What it shows", "## The two readings"),
               ("results/replicas_recipe_gemma_cpu/README.md", "## What it shows", "## Runs, tables and wall time"),
               ("results/replicas_recipe_gemma_elicit/README.md", "## What it shows", "## The two readings")]
    missing = []
    for name, start, end in regions:
        text = (ROOT / name).read_text()
        region = text[text.index(start):text.index(end)]
        if name == "README.md":  # only the headline's parts that cite these folders (the table is one part)
            region = "\n".join(part for part in re.split(r"\n(?=- )|\n\n", region)
                               if any(name in part for name in ("power_cpu", "replicas_recipe_humaneval_shift",
                                                                "elicit_arms_humaneval", "replicas_recipe_gemma")))
        found = quoted.findall(region)
        assert found, f"{name} quotes no interval of the power profile or the shifted recipe"
        missing += [f"{name}: {q}" for q in found if q not in tables]
    assert not missing, f"quoted but not in results/power_cpu/tables.md or the shift's shift.md: {missing}"


def test_the_decontamination_tables_are_the_scripts_output():
    """results/decontam_cpu/tables.md (included in its README) as contaminate/analyses/decontam.py prints it from the
    kept draws' decontamination.json (and the trained runs' plant.json, where kept)."""
    import io
    from contextlib import redirect_stdout

    from contaminate.analyses import decontam

    folder = ROOT / "results" / "decontam_cpu"
    printed = io.StringIO()
    trained = ["--trained", str(folder / "trained")] if (folder / "trained").is_dir() else []
    with redirect_stdout(printed):
        decontam.main([str(folder / "draws"), *trained])
    assert printed.getvalue() == (folder / "tables.md").read_text(), \
        "python -m contaminate.analyses.decontam results/decontam_cpu/draws > results/decontam_cpu/tables.md"


def test_the_layout_proof_tables_are_the_scripts_output():
    """results/layout_70's compare_runs tables (issue 70's steps, each against the commit before them) as
    results/layout_70/table.py prints them from the committed cmp.sh logs."""
    import subprocess
    import sys

    folder = ROOT / "results" / "layout_70"
    for steps, name in ((["4f4e4db", "4aaa03a", "b739f12", "2a4fbd4", "ef63d03", "7c6cb73"], "table.md"),
                        (["e2e1ba3", "d88e144", "b49e750", "448376d", "489f696", "03ef49a", "c507af8"],
                         "table-e2e1ba3.md"),
                        (["54aa5ab", "efe3942", "b1db91a", "88923c9", "bd99127"], "table-54aa5ab.md")):
        printed = subprocess.run([sys.executable, str(folder / "table.py"), *steps], capture_output=True, text=True,
                                 check=True).stdout
        assert printed == (folder / name).read_text(), f"python results/layout_70/table.py {' '.join(steps)} > {name}"
