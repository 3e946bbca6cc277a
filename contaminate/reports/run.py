"""report.md for a study: the per-cell verdicts against ground truth, shaped like the paper's Tables 1 and 4.

Table 1 of the paper counts exact and near-exact replicas among the guided completions of the contaminated
model; Table 4 sets each algorithm's verdict beside the truth. Here both are per cell, and every verdict is
marked right or wrong, because here the truth is known.
"""

from __future__ import annotations

from pathlib import Path

from contaminate.reports.decontamination import decontamination_section
from detect.detectors import read_back
from detect.detectors.time_travel.follow import CLASSES, follow_text, formats_text
from detect.markdown import interval_text, row, table
from detect.pipeline import uninformative


def _training(checkpoint: dict) -> str:
    if checkpoint.get("first_loss") is None:  # a fine-tuning API job reports no loss curve here
        return f"job {checkpoint.get('job_id', '-')}, {checkpoint['train_seconds']:.0f} s"
    return (f"training loss {checkpoint['first_loss']:.3f} -> {checkpoint['final_loss']:.3f}, "
            f"{checkpoint['train_seconds']:.0f} s")


def _where(runtime: dict | None) -> str:
    if not runtime or not runtime.get("resolved"):
        return ""
    resolved = runtime["resolved"]
    spread = ", spread over GPUs" if resolved.get("device_map") else ""
    return f" on {resolved['device']} in {resolved['dtype']}{spread}"


def _regime(manifest: dict) -> list[str]:
    """The regime in a sentence (method section 8): the dose, the background and the members' share of the tokens."""
    regime = manifest.get("regime")
    if not regime:
        return []
    background = regime["background"]
    where = ("no background" if background["name"] == "none" else
             f"background {background['name']}, {background.get('source', '')}: {background['documents']:,} "
             f"documents, {background['tokens']:,} tokens")
    share = (f"; members {regime['members_token_share']:.1%} of the {regime['training_tokens']:,} training tokens "
             f"({regime['documents']['member']:,} member documents)" if regime.get("tokens") else "")
    control = {"background": "The control (the clean cells) is the same training on the background alone.",
               "swap twin": "The control (the clean cells) is the swap twin: the same stream, steps and schedule, "
                            "each planted group replaced by a disjoint group of the same split.",
               "none": "No control model is read (plant.control=none): the members are compared with the "
                       "never-planted group under the same model."}.get(
        regime["control"], "The control is the untouched base model.")
    post = manifest.get("post_train")
    if post and post.get("kind") not in (None, "none"):  # both models trained further, alike (training/post.py)
        control = control.replace("the untouched base model", "the base model") + (
            f" Both it and the contaminated model were then post-trained alike (post_train={post['kind']}).")
    loss = f" Loss: {regime['loss']}." if regime.get("loss") else ""
    truth = "" if regime["exposures"] != 0 else " No member was trained in: every cell's ground truth is clean."
    return [f"Regime: {regime['name']}. Format {regime['format']}; {where}{share}. {control}{loss}{truth}", ""]


def reference_text(reference: dict | str | None) -> str | None:
    """Which model the reference ratio read, in a sentence, from the manifest's ``runtime.reference_model``, saying
    whether it was the oracle (the study's clean model). A study before the setting read the clean model."""
    if reference is None:
        return None
    if isinstance(reference, str):  # before issue 26: always the clean model
        reference = {"kind": "clean", "model": None, "oracle": True}
    model = f" {reference['model']}" if reference.get("model") else ""
    oracle = (" It is the **oracle**: the contaminated model's own twin before the leak, which no practitioner has; "
              "the reference ratio against it is an oracle's number, not a practitioner's.")
    if reference["kind"] == "none":
        return "Reference ratio: not computed (`detect.reference_model=null`)."
    if reference["kind"] == "clean":
        return (f"Reference ratio against the study's clean model{model} (`detect.reference_model=clean`)." +
                (oracle if reference["oracle"] else " It is not the contaminated model's twin before the leak (the "
                 "untouched base model beside a background), so not the oracle either."))
    given = ("the base model" if reference["kind"] == "base" else "the given model") + model
    setting = reference["kind"] if reference["kind"] == "base" else reference.get("path") or reference.get("model")
    if reference["oracle"]:
        why = " (no background: the base model is the control)" if reference["kind"] == "base" else ""
        return (f"Reference ratio against {given} (`detect.reference_model={setting}`), which is also the study's "
                f"clean model{why}.{oracle}")
    if reference.get("same_as") == "clean":
        return (f"Reference ratio against {given} (`detect.reference_model={setting}`), which is also the study's "
                f"clean model, the untouched base beside a background: a reference a practitioner can have, not the "
                f"oracle.")
    if reference.get("same_as") == "contaminated":
        return (f"Reference ratio against {given} (`detect.reference_model={setting}`), which is the contaminated "
                f"model itself: its ratio there is 0.")
    return (f"Reference ratio against {given} (`detect.reference_model={setting}`), not the study's clean model: a "
            f"reference a practitioner can have, not the oracle.")


def recipe_lines(summary: dict) -> list[str]:
    """Algorithm 2 with each model's recipe, fitted on its own known non-members (summary.json "recipe")."""
    from detect.judges.recipe import fit_line

    recipe = summary.get("recipe")
    if not recipe:
        return []
    lines = ["", "## Algorithm 2 with the recipe (thresholds fitted on each model's own known non-members)", ""]
    for checkpoint, fit in recipe["models"].items():
        lines.append(f"- {checkpoint} model: " + (f"refused: {fit['refused']}" if "refused" in fit else fit_line(fit)))
    if recipe["cells"]:
        lines += ["", *table(["cell", "ground truth", "exact", "near-exact", "Algorithm 2 (recipe)"])]
        for name, block in recipe["cells"].items():
            truth = summary["cells"][name]["ground_truth"]
            right = block["contaminated"] == (truth == "contaminated")
            lines.append(row([name, truth, block["exact"], block["near_exact"],
                              f"{'contaminated' if block['contaminated'] else 'clean'} {'✓' if right else '✗'}"]))
    return lines


def answers_lines(summary: dict) -> list[str]:
    """Did each model answer the paper's instruction? Its follow rate on its known non-members, and each cell's guided
    answers by class (detect/detectors/time_travel/follow.py); where a model's rate is below the bar its Algorithm 1
    and 2 verdicts read "uninformative"."""
    cells = summary["cells"]
    if not any(cell.get("answers") for cell in cells.values()):
        return []
    lines = ["", "## Did the model answer the instruction? (each answer classed: detect/detectors/time_travel/"
                 "follow.py)", ""]
    for checkpoint, follow in (summary.get("follow") or {}).items():
        state = "informative" if follow["informative"] else "**uninformative: the instruction was not followed**"
        asked = formats_text(follow)
        lines.append(f"- {checkpoint} model: {follow_text(follow)} answered the guided instruction with a "
                     f"continuation (bar {follow['bar']:.2f}): its Algorithm 1 and 2 verdicts are {state}."
                     + (f" Its instructions were {asked}." if asked else ""))
    readings = [reading for reading in ("guided", "general", "leak")
                if any(reading in (cell.get("answers") or {}) for cell in cells.values())]
    lines += ["", *table(["cell", "answers", "n", *(name.replace("_", " ") for name in CLASSES)])]
    for name, cell in cells.items():
        for reading in readings:
            block = (cell.get("answers") or {}).get(reading)
            if block:
                lines.append(row([name, reading, block["n"], *(block["classes"][c] for c in CLASSES)]))
    return lines


def skipped_lines(summary: dict) -> list[str]:
    """The detectors that did not run on some cell, each reason once with the cells it held for."""
    found: dict[tuple[str, str], list[str]] = {}
    for name, cell in summary["cells"].items():
        for detector, why in (cell.get("skipped") or {}).items():
            found.setdefault((detector, why), []).append(name)
    if not found:
        return []
    return ["", "Not run:", ""] + [f"- {detector} on {', '.join(names)}: {why}" for (detector, why), names in
                                   found.items()]


def cells_right(summary: dict) -> str:
    """"alg2 5/5 (2 uninformative), cheat_strict 4/5": each verdict's cells right by the rule's outcome, and how many
    of them read answers that mostly did not answer the instruction (uninformative: right by the rule, not by
    evidence)."""
    n = len(summary["cells"])
    unread = summary.get("uninformative") or {}
    return ", ".join(f"{name} {round(share * n)}/{n}" + (f" ({unread[name]} uninformative)" if unread.get(name) else "")
                     for name, share in summary["accuracy"].items())


def verdict_of(cell: dict, block: dict) -> tuple[str, bool, bool]:
    """A cell's partition verdict under a rule's labels (``block``: whether the rule flags it): "contaminated" or
    "clean", whether its ground truth agrees, and whether its model mostly did not answer the guided instruction
    (then the verdict is uninformative: "clean" from answers that do not answer would say nothing)."""
    return ("contaminated" if block["contaminated"] else "clean",
            block["contaminated"] == (cell["ground_truth"] == "contaminated"), bool(uninformative(cell)))


def verdict_line(name: str, cell: dict, reader: str, block: dict) -> str:
    """One cell's partition verdict under a rule's labels (``block``: its exact and near-exact counts and whether the
    rule flags it): uninformative where its model mostly did not answer the guided instruction (its follow line
    says so), and marked where it is wrong."""
    found, right, unread = verdict_of(cell, block)
    return (f"{name:<28} truth {cell['ground_truth']:<12} {reader}: {block['exact']} exact, {block['near_exact']} "
            f"near-exact -> " + (f"uninformative: instruction not followed (the rule: {found})" if unread else found)
            + ("" if right or unread else "  (wrong)"))


def command_lines(summary: dict) -> list[str]:
    """What ``python -m contaminate`` prints after the run folder for a study: Algorithm 2's verdict on each cell
    (uninformative where its model mostly did not answer the instruction), the cells that cannot exist, each model's
    recipe and the prompt format its instructions were asked in with its follow rate, and the cells right. A pure
    function of summary.json, so the README's block is checked against a committed summary (tests/test_docs.py)."""
    from detect.judges.recipe import fit_line

    lines = [verdict_line(name, cell, "Algorithm 2", cell["alg2"]) for name, cell in summary["cells"].items()
             if "alg2" in cell]  # Algorithm 2 switched off: the cells-right line below says the rest
    lines += [f"{name:<28} not run: {why}" for name, why in (summary.get("cells_not_run") or {}).items()]
    recipe = summary.get("recipe") or {}
    for checkpoint, fit in recipe.get("models", {}).items():  # each model's thresholds, then its cells under them
        lines.append(f"recipe on the {checkpoint} model: " + (f"refused: {fit['refused']}" if "refused" in fit
                                                               else fit_line(fit)))
        lines += [verdict_line(name, summary["cells"][name], "recipe", block)
                  for name, block in (recipe.get("cells") or {}).items()
                  if summary["cells"][name]["checkpoint"] == checkpoint]
    for checkpoint, follow in (summary.get("follow") or {}).items():  # did each model answer the paper's instruction?
        lines.append(f"instructions on the {checkpoint} model: {formats_text(follow) or follow_text(follow)}"
                     + ("" if follow["informative"] else f"; below {follow['bar']:.2f}: Algorithm 1 and 2 "
                                                         f"uninformative"))
    return lines + ["cells right: " + cells_right(summary)]


def write_report(path: Path, summary: dict, manifest: dict) -> None:
    cells = summary["cells"]
    lines = [
        f"# Contamination study: {summary['dataset']} / {summary['split']} / {summary['base_model']} "
        f"+ {summary['backend']}", "",
        f"{len(manifest['member_ids'])} members "
        f"{'trained in' if (manifest.get('regime') or {}).get('exposures') != 0 else 'drawn but not trained in'} "
        f"({summary['format']} format), "
        f"{len(manifest['non_member_ids'])} held-out non-members, {next(iter(cells.values()))['n_instances']} "
        f"instances per cell, seed {summary['seed']}. Checkpoint "
        f"{'reused' if manifest['checkpoint']['reused'] else 'trained'} "
        f"({_training(manifest['checkpoint'])}); study {manifest['timings']['total_s']:.0f} s"
        f"{_where(manifest.get('runtime'))}.", "",
        *_regime(manifest),
    ]
    reference = reference_text((manifest.get("runtime") or {}).get("reference_model"))
    if reference:
        lines += [reference, ""]
    first = next(iter(cells.values()))
    detectors = list(read_back(first))
    for cls, _ in detectors:  # a detector's own study-level section (Algorithm 2: the paper's Table 1)
        section = cls.study_section(cells, manifest)
        lines += ([""] if section and lines and lines[-1] else []) + section
    headers = [header for cls, block in detectors for header, _ in cls.report_columns(block, first["correct"])]
    lines += ["", "## Verdicts against ground truth (cf. the paper's Tables 3 and 4)", "",
              *table(["cell", "ground truth", *headers])]
    for name, cell in cells.items():
        # its model mostly did not answer (or, for Algorithm 1, the partition's general answers did not): Algorithm 1
        # / 2 say nothing either way
        columns = [f"uninformative ({text})" if cls.follows_instruction and uninformative(cell, cls) else text
                   for cls, block in read_back(cell) for _, text in cls.report_columns(block, cell["correct"])]
        lines.append(row([name, cell["ground_truth"], *columns]))
    lines += [row([name, f"not run: {why}"]) for name, why in (summary.get("cells_not_run") or {}).items()]
    lines += skipped_lines(summary)
    lines += answers_lines(summary)
    lines += recipe_lines(summary)
    scored = [(cls, block) for cls, block in detectors if cls.scores and block]
    if scored:
        names = [(cls.name, score) for cls, block in scored for score in block]
        lines += ["", "## Logit scores (mean per cell; higher = more likely seen in training)", "",
                  *table(["cell", "ground truth", *(score for _, score in names)])]
        lines += [row([name, cell["ground_truth"], *(f"{cell[detector][score]:.3f}" for detector, score in names)])
                  for name, cell in cells.items()]
    blind = summary.get("blind_baseline")
    if blind:
        null = "" if "critical_auc" not in blind else (
            f" Permutation null ({blind['n_permutations']} label shuffles): mean {blind['null_mean']:.2f}, p = "
            f"{blind['p_value']:.2f}; at {blind['n_members']} vs {blind['n_non_members']} texts the smallest AUC "
            f"it could have rejected is {blind['critical_auc']:.2f}.")
        repeated = f", repeated {blind['repeats']} times" if "repeats" in blind else ""
        lines += ["", f"Blind baseline (the texts alone, no model: {blind['features']}, {blind['classifier']}, "
                      f"{blind['folds']}-fold cross-validation{repeated}): members vs "
                      f"non-members AUC {interval_text(blind['auc'], blind['low'], blind['high'])}." + null
                  + (" **Warning: the texts alone separate the members from the non-members, so the detectors' "
                     "numbers cannot be read as membership.**" if blind["biased"] else
                     " The split is not separable without the model at this size, as a random split should be.")]
    if summary.get("decontamination"):  # the data-side check of the stream before training (contaminate/decontam.py)
        exposures = summary["regime"].get("exposures")
        lines += decontamination_section(summary["decontamination"],
                                         [{"name": "members", "exposures": 1 if exposures is None else exposures}])
    lines += ["", "Cells right: " + cells_right(summary) + ".", "",
              "## Training loss", "", "![training loss](loss.png)", "",
              "Rows with every prompt, completion and score: `results.jsonl`. Provenance: `manifest.json`.", ""]
    path.write_text("\n".join(lines))
