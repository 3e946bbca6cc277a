"""One partition x one model -> rows (every prompt, completion and score) + a summary with every verdict.

    python -m detect +dataset=synth_nli split=test model=smollm2_135m

``run_partition`` is the one sequence both ``python -m detect`` and the lab's studies (once per cell) run:
every logit request in one batched pass, then ``detect_partition`` (the guided and general completions, their
scores and judge labels, and the instance-level logit scores), then ``partition_rows`` (the partition-level
detectors). A detector whose needs the model cannot meet (log-probabilities from a server that gives none) is
skipped with one line saying why. ``summarize`` turns any set of rows into every detector's outcome (each detector
is a module of ``detect/detectors/``, built from ``detect.detectors`` in the config). ``main`` is what
``python -m detect`` runs, as a recipe: set up each component once (data, judge, model, detectors), run the
partition, and write ``results.jsonl`` (one row per instance and instruction), ``partition.jsonl`` (one row per
partition-level detector: ChatGPT-Cheat?, the sharded likelihood test), ``summary.json``, ``report.md`` and
``config.yaml`` to the run folder.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

from detect.datasets import Example, load_split, sample
from detect.detectors import Detector, Evidence, build, read_back
from detect.detectors.base import PlainText
from detect.detectors.time_travel import SCORES, Algorithm1  # SCORES: the generation scores (public here too)
from detect.detectors.time_travel.elicit import demonstrations
from detect.detectors.time_travel.follow import UNINFORMATIVE, answer_classes, classify_row, follow_block, follow_text
from detect.detectors.time_travel.leak import locate
from detect.detectors.time_travel.prompts import INSTRUCTIONS, PAPER, build_prompt, check_wording, clean_completion
from detect.detectors.time_travel.scores import rouge_l
from detect.detectors.time_travel.split import cut_unit, split_instance
from detect.detectors.time_travel.stopping import AnswerShape
from detect.errors import InputError
from detect.exchangeability import precheck, precheck_line
from detect.judges.threshold import thresholds_line
from detect.markdown import row as markdown_row
from detect.markdown import table
from detect.models import check_backend
from detect.validate import check_node, count

_SAID: set[tuple[str, str]] = set()  # (model, detector) skips already printed: one line per run, not per cell
FOLLOW_BAR = 0.5  # detect.follow.min_rate: below it a model "mostly does not follow" the instruction
ANSWER_END = "\n---"  # where a worked example's answer ends (elicit.SEPARATOR): a few-shot answer is cut there
LEAK = "leak"  # Algorithm 2's oracle reading: the first piece inside the leak's own rendering (time_travel/leak.py)
READINGS = (*INSTRUCTIONS, LEAK)  # every completion a partition may generate, in row order


def run_partition(evidence: Evidence, detectors: Sequence[Detector], *, judge, detect_cfg,
                  semantic=None, instructions: Sequence[str] = READINGS,
                  prompt_format: str | None = None) -> tuple[list[dict], dict]:
    """One partition x one model: (instance rows + partition rows, timing and skips). ``evidence`` holds the
    model (and a reference model, if any); ``detect_cfg`` is the ``detect`` group (cut points, stop rule);
    ``instructions``: the Time Travel prompts that may be generated (guided, general, and the leak reading; a study's
    known non-members: the guided one only), each generated only where a running detector reads its completions
    (``completions_read``); ``prompt_format``: the format the guided and general instructions are asked in (chat or
    raw, one the model takes: ``instruction_formats``), else the model's own."""
    timing: dict = {}
    skipped = {d.name: reason for d in detectors if (reason := d.skipped(evidence))}
    for name, reason in skipped.items():
        if (evidence.model.name, name) not in _SAID:
            _SAID.add((evidence.model.name, name))
            print(f"{name} skipped on {evidence.model.name}: {reason}", file=sys.stderr)
    running = [d for d in detectors if d.runnable(evidence)]  # decided once for every stage below
    instructions = completions_read(running, instructions)  # none: no completion generated, judged or scored
    started = time.time()
    requests = logit_requests(running, evidence)
    if requests:  # one batched pass for everything the logit detectors read
        evidence.model.prefetch(requests)
        if evidence.scoring_reference is not None:
            evidence.scoring_reference.prefetch([r for d in running for r in d.reference_requests(evidence)])
        timing["logits_s"] = round(time.time() - started, 2)
    started = time.time()
    rows = detect_partition(evidence.instances, dataset=evidence.dataset, split=evidence.split, model=evidence.model,
                            judge=judge, semantic=semantic, membership=instance_scorer(running, evidence),
                            seed=evidence.seed, cut_low=detect_cfg.cut.low, cut_high=detect_cfg.cut.high,
                            stop=detect_cfg.stop, instructions=instructions, reader=evidence.reader,
                            prompt_format=prompt_format, shots=elicit_shots(detect_cfg),
                            wording=instruction_wording(detect_cfg))
    timing["instances_s"] = round(time.time() - started, 2)
    started = time.time()
    rows += partition_rows(running, evidence)
    timing["partition_s"] = round(time.time() - started, 2)
    if skipped:
        timing["skipped"] = skipped
        # kept with the rows (a study's cell cache; not in partition.jsonl: is_record), so a summary says what did
        # not run and why
        rows += [{"level": "partition", "detector": name, "skipped": reason, "dataset": evidence.dataset.key,
                  "split": evidence.split} for name, reason in skipped.items()]
    return rows, timing


def completions_read(detectors: Sequence[Detector], allowed: Sequence[str] = READINGS) -> tuple[str, ...]:
    """The Time Travel instructions of ``allowed`` whose completions one of ``detectors`` reads (``completions``),
    in the paper's order: ("guided", "general") with Algorithm 1, ("guided",) with Algorithm 2 alone, () without
    either; "leak" last, with Algorithm 2's leak reading."""
    read = {instruction for detector in detectors for instruction in detector.completions}
    return tuple(instruction for instruction in allowed if instruction in read)


def detect_partition(
    examples: Sequence[Example], *, dataset, split: str, model, judge, semantic=None, membership=None,
    seed: int = 0, cut_low: float = 0.4, cut_high: float = 0.7, stop=None, instructions: Sequence[str] = INSTRUCTIONS,
    reader=None, prompt_format: str | None = None, shots: int = 0, wording: str = PAPER,
) -> list[dict]:
    """Guided and general completions for each instance, scored and judged: one row per (instance, instruction).
    Every instance has its guided row, which carries its instance scores; with ``instructions`` empty nothing is
    generated (the row's completion, scores and label are None).

    ``dataset`` is the dataset config (title, task); ``model`` a ``detect.models.LanguageModel``;
    ``semantic`` is an optional ``(references, candidates) -> scores`` callable; ``membership`` an optional
    ``examples -> [{score: value}]`` callable (``instance_scorer``) whose scores of each instance go on its
    guided row; ``stop`` (``detect.stop`` config: enabled, length_factor, margin_chars) makes generation stop each
    completion once its answer is done (``detect/detectors/time_travel/stopping.py``); ``instructions``: which of
    the guided and general prompts to generate (both by default; Algorithm 2 and the judge read the guided ones),
    and "leak" (Algorithm 2's oracle reading: the first piece inside ``reader``'s rendering of each instance,
    continued as raw text; ``detect/detectors/time_travel/leak.py``), cleaned, scored and judged as the guided ones;
    ``prompt_format``: how the guided and general prompts are put to the model (chat or raw), else as it is prompted;
    ``shots``: worked examples of the same instruction on standard-library text before each guided and general prompt
    (``detect.elicit.shots``, ``detect/detectors/time_travel/elicit.py``: a stand-in for a model that follows it);
    ``wording``: which wording of the guided and general instructions asks (``detect.wording``: the paper's, or one of
    the rewordings in ``detect/detectors/time_travel/prompts.py``; the worked examples are asked in it too).
    """
    unit = cut_unit(dataset.task)  # code at line boundaries
    cuts = [split_instance(example, seed=seed, low=cut_low, high=cut_high, unit=unit) for example in examples]
    rows = []
    demos: dict[tuple[str, str | None], str] = {}  # (instruction, label) -> its worked examples, where shots > 0
    for instruction in ("guided", *(i for i in instructions if i not in ("guided", LEAK))):
        for example, cut in zip(examples, cuts):
            prompt = build_prompt(instruction, dataset.task, first_piece=cut.first, label=example.label,
                                  dataset_name=dataset.title, split_name=split, wording=wording)
            if shots:  # the demonstrations' label line shows the query's own label: the task is to copy
                key = (instruction, example.label)
                if key not in demos:
                    demos[key] = demonstrations(instruction, dataset.task, shots, seed=seed,
                                                labels=[example.label] if example.label else (),
                                                cut_low=cut_low, cut_high=cut_high, wording=wording)
                prompt = demos[key] + prompt
            rows.append(_row(dataset, split, example, cut, instruction, prompt))
    generated = [row for row in rows if row["instruction"] in instructions]
    # with worked examples, the answer ends where the model writes their separator, as each demonstration's did
    _complete(generated, model, stop, prompt_format=prompt_format, end=ANSWER_END if shots else None)
    if LEAK in instructions:
        leak_rows = _leak_rows(examples, cuts, dataset, split, model, stop, reader or PlainText())
        rows += leak_rows
        generated += leak_rows
    for row in generated:  # did it answer? (follow.py: continuation, empty, restatement, an echo)
        row["answer_class"] = classify_row(row, dataset.title)
    _score_semantic(generated, semantic)
    guided = [row for row in rows if row["instruction"] == "guided"]
    if LEAK in instructions:  # the leak reading's scores on each instance's guided row too, as its other scores
        for row, leak_row in zip(guided, leak_rows):
            row.update({f"{score}_leak": leak_row[score] for score in SCORES})
    if membership is not None:  # one value per instance, whatever the instruction: kept on the guided row
        for row, scores in zip(guided, membership(examples)):
            row.update(scores)
    for row in rows:
        row["judge"] = None
    # Algorithm 2 reads the guided completions (and its leak reading the leak ones); an LLM judge is paid per call:
    # judge those only
    judged = [row for row in generated if row["instruction"] in ("guided", LEAK)]
    for row, label in zip(judged, judge(judged) if judged else []):
        row["judge"] = label
    return rows


def _row(dataset, split: str, example: Example, cut, instruction: str, prompt: str) -> dict:
    return {
        "dataset": dataset.key, "split": split, "instance_id": example.instance_id, "label": example.label,
        "instruction": instruction, "prompt": prompt, "first_piece": cut.first,
        "separator": cut.separator, "reference": cut.second, "cut_unit": cut.unit,
        "cut_fraction": cut.fraction,
        # what is not generated stays None
        "raw_completion": None, "stop": None, "completion": None, "answer_class": None, "rouge_l": None,
        "semantic": None,
    }


def _leak_rows(examples: Sequence[Example], cuts: Sequence, dataset, split: str, model, stop, reader) -> list[dict]:
    """The leak reading's rows: each instance's rendering by ``reader`` up to its second piece, continued as raw text
    (no chat template), read back as the instance's own text (a dump's JSON decoded), then cleaned and scored against
    the same second piece as its guided row (Algorithm 2's leak reading checked that every rendering holds it)."""
    found = [locate(reader.rendering(example, split), cut) for example, cut in zip(examples, cuts)]
    missing = [e.instance_id for e, leak in zip(examples, found) if leak is None]
    if missing:
        raise InputError(f"the leak's rendering ({reader.name}) does not hold instance {missing[0]}'s pieces, so the "
                         f"leak reading has no prompt for it; turn off detect.detectors.alg2_leak")
    rows = [_row(dataset, split, e, cut, LEAK, leak.prompt) for e, cut, leak in zip(examples, cuts, found)]
    _complete(rows, model, stop, leaks=found)
    return rows


INSTRUCTION_FORMATS = ("follow", "model", "chat", "raw")  # detect.instruction_format
FORMAT_CHOICE = "instruction_format"  # a known cell's record of the prompt format its model's instructions are asked in


def instruction_setting(detect_cfg) -> str:
    """``detect.instruction_format`` (``model`` where a config predates it)."""
    return detect_cfg.get("instruction_format", "model")


def instruction_formats(model, setting: str = "model") -> tuple[str, ...]:
    """The formats Time Travel's guided and general prompts are read in on ``model`` (``detect.instruction_format``):
    ``follow`` every one it takes, its own first (a local model with a chat template: chat and raw; the format chosen
    on its known non-members, ``choose_format``); ``model`` its own (``detect.prompt_format``); ``chat`` / ``raw``
    that one, where the model takes it (one line where not)."""
    formats = tuple(getattr(model, "prompt_formats", None) or (getattr(model, "prompt_format", None),))
    if setting == "follow":
        return formats
    if setting == "model":
        return formats[:1]
    if setting not in formats:
        raise InputError(f"detect.instruction_format={setting}: {model.name} takes {', '.join(formats)} prompts; use "
                         f"one of them, follow (the one it follows more on its known non-members) or model")
    return (setting,)


def choose_format(known: dict[str, Sequence[dict]], bar: float = FOLLOW_BAR) -> dict:
    """The prompt format a model follows the guided instruction in more often, from its known non-members' guided
    answers in each (``known``: format -> rows): the higher follow rate, a tie to chat (as the paper prompts its chat
    models), then to the first given. Chosen on instances it cannot have seen, never on members; they are the ones the
    recipe fits on, so its guarantee holds given the choice only as far as the follow rate and the labels are apart.
    Returns {"chosen", "by_format": {format: {"rate", "n"}}}."""
    rates = {}
    for name, rows in known.items():
        block = follow_block([r for r in rows if r.get("instruction") == "guided"], on="known non-members", bar=bar)
        rates[name] = {"rate": block["rate"], "n": block["n"]} if block else {"rate": None, "n": 0}
    order = list(known)
    chosen = max(order, key=lambda f: (rates[f]["rate"] if rates[f]["rate"] is not None else -1.0, f == "chat",
                                       -order.index(f)))
    return {"chosen": chosen, "by_format": rates}


def unjudged(guided: Sequence[dict]) -> list[None]:
    """A judge that labels nothing: for completions whose labels nobody reads (the recipe's known non-members)."""
    return [None] * len(guided)


def _complete(rows: list[dict], model, stop, leaks: Sequence | None = None, prompt_format: str | None = None,
              end: str | None = None) -> None:
    """Each row's completion of its prompt (cut at its answer's end where ``stop`` is on), cleaned and scored.
    ``leaks``: the leak reading's ``LeakCut`` per row: each prompt continued as raw text, its answer's shape that of
    the second piece as the rendering writes it, the continuation read back as the instance's own text.
    ``prompt_format``: this call's (chat or raw), else the model's own; each row records the one it was asked in.
    ``end``: the answer ends where the model writes it (few-shot: the demonstrations' separator), cut there."""
    if not rows:
        return
    prompts = [row["prompt"] for row in rows]
    written = [row["reference"] for row in rows] if leaks is None else [leak.written for leak in leaks]
    options = {"raw": True} if leaks is not None else {"prompt_format": prompt_format} if prompt_format else {}
    asked = "raw" if leaks is not None else prompt_format or getattr(model, "prompt_format", None)
    # the answer read as generated (the paper's judge), or cut at the reference's line count (detect.stop.lines: the
    # line-stop variant); the leak reading always so, as it continues a document whose next line is the leak's label
    lines = leaks is not None or bool(stop is not None and stop.get("lines", False))
    if stop is not None and stop.enabled:
        shapes = [AnswerShape.of(r["first_piece"], r["separator"], answer, length_factor=stop.length_factor,
                                 margin_chars=stop.margin_chars, lines=lines, end=end)
                  for r, answer in zip(rows, written)]
        raw_completions = model.generate(prompts, stop=shapes, **options)
    else:
        raw_completions = model.generate(prompts, **options)
        if end:  # no stop rule: the answer still ends at the separator
            raw_completions = [raw[: raw.index(end)] if end in raw else raw for raw in raw_completions]
    reasons = model.stop_reasons or [None] * len(rows)
    for row, raw, reason, leak in zip(rows, raw_completions, reasons, leaks or [None] * len(rows)):
        row["raw_completion"], row["stop"], row["prompt_format"] = raw, reason, asked
        row["completion"] = clean_completion(raw if leak is None else leak.read(raw), row["reference"],
                                             row["first_piece"], cut_lines=lines)
        row["rouge_l"] = rouge_l(row["reference"], row["completion"])


def _score_semantic(rows: list[dict], semantic) -> None:
    if semantic is not None and rows:
        # method section 6: a cut inside a sentence is scored as the whole instance (first piece + completion vs
        # original), so the embedding sees a full sentence on both sides; otherwise the completion alone.
        whole = [row["cut_unit"] == "word" for row in rows]
        references = [r["first_piece"] + r["separator"] + r["reference"] if w else r["reference"]
                      for r, w in zip(rows, whole)]
        candidates = [r["first_piece"] + r["separator"] + r["completion"] if w else r["completion"]
                      for r, w in zip(rows, whole)]
        for row, value in zip(rows, semantic(references, candidates)):
            row["semantic"] = value


def recipe_known(judge, dataset, split: str, examples: Sequence[Example], detectors: Sequence[Detector]) -> list:
    """``judge=recipe``, before any model opens: its known non-members, none of them in the partition judged, and
    enough of them for Algorithm 2's rule at the partition's size and the budget (one line each where not)."""
    from detect.judges.recipe import PAPER_RULE, check_enough
    from detect.judges.threshold import normalize

    known = judge.known(dataset, split)
    judged = {normalize(example.full_text): example.instance_id for example in examples}
    shared = [example for example in known if normalize(example.full_text) in judged]
    if shared:
        first = judged[normalize(shared[0].full_text)]
        raise InputError(f"judge.known_non_members={judge.known_non_members}: {len(shared)} of its {len(known)} "
                         f"instances {'is' if len(shared) == 1 else 'are'} in the partition being judged (instance "
                         f"{first} of {dataset.key} {split}{', among others' * (len(shared) > 1)}); known "
                         f"non-members must be instances the model cannot have seen, none of them judged: remove them")
    alg2 = next((d for d in detectors if d.name == "alg2"), None)
    judge.rule = PAPER_RULE if alg2 is None else (alg2.min_exact, alg2.min_near_exact)
    judge.partition_size = len(examples)
    check_enough(len(known), judge.partition_size, judge.rule, judge.budget, judge.exact_share)
    return known


def fit_recipe_judge(judge, known: Sequence[Example], evidence: Evidence, *, detect_cfg,
                     semantic=None) -> tuple[list[dict], dict]:
    """``judge=recipe``: the model's guided completions of the known non-members, in each prompt format
    ``detect.instruction_format`` allows (``choose_format`` picks the one it follows more), then the judge's
    thresholds fitted on the chosen format's (``recipe_known`` checked them first). Returns the known non-members'
    rows in the chosen format and the choice."""
    found = {name: detect_partition(known, dataset=evidence.dataset, split=evidence.split, model=evidence.model,
                                    judge=unjudged, semantic=semantic, seed=evidence.seed,
                                    cut_low=detect_cfg.cut.low, cut_high=detect_cfg.cut.high, stop=detect_cfg.stop,
                                    instructions=("guided",), prompt_format=name, shots=elicit_shots(detect_cfg),
                                    wording=instruction_wording(detect_cfg))
             for name in instruction_formats(evidence.model, instruction_setting(detect_cfg))}
    choice = choose_format(found, follow_bar(detect_cfg))
    rows = found[choice["chosen"]]
    judge.fit_on(rows, partition_size=judge.partition_size, rule=judge.rule)
    return rows, choice


def elicit_shots(detect_cfg) -> int:
    """``detect.elicit.shots``: worked examples of the instruction on standard-library text before each prompt."""
    return int((detect_cfg.get("elicit") or {}).get("shots", 0) or 0)


def instruction_wording(detect_cfg) -> str:
    """``detect.wording``: the wording of the guided and general instructions (the paper's by default)."""
    return str(detect_cfg.get("wording") or PAPER)


def follow_bar(detect_cfg) -> float:
    """``detect.follow.min_rate``: the follow rate below which Algorithm 1 and 2's verdicts are uninformative."""
    return float((detect_cfg.get("follow") or {}).get("min_rate", FOLLOW_BAR))


def check_detection(cfg) -> list:
    """The detection config checked as a whole before any data or model is touched (sample, detect.*, the
    generation node, the judge); returns the built detectors (their settings checked against their classes)."""
    count(cfg.sample.n_detect, "sample.n_detect", hint=" (instances per partition; the paper: 10)")
    detect = cfg.detect
    count(detect.max_new_tokens, "detect.max_new_tokens", hint=" (tokens per completion; the default 256)")
    count(detect.batch_size, "detect.batch_size", hint=" (prompts per generate call)")
    low, high = detect.cut.low, detect.cut.high
    if not 0 < low <= high < 1:
        raise InputError(f"detect.cut.low={low} / detect.cut.high={high}: the cut point is a fraction of the "
                         f"instance; give 0 < low <= high < 1 (the default 0.4 / 0.7)")
    if detect.prompt_format not in ("auto", "chat", "raw"):
        raise InputError(f"detect.prompt_format={detect.prompt_format}: use auto, chat or raw")
    setting = instruction_setting(detect)
    if setting not in INSTRUCTION_FORMATS:
        raise InputError(f"detect.instruction_format={setting}: use follow (each model asked the way it follows the "
                         f"instruction more on its known non-members), model (as detect.prompt_format), chat or raw")
    shots = (detect.get("elicit") or {}).get("shots", 0)
    count(shots, "detect.elicit.shots", minimum=0, hint=" (worked examples of the instruction on standard-library "
                                                          "text before each prompt; 0: off)")
    check_wording(instruction_wording(detect))
    bar = (detect.get("follow") or {}).get("min_rate", FOLLOW_BAR)
    if isinstance(bar, bool) or not isinstance(bar, (int, float)) or not 0 <= bar <= 1:
        raise InputError(f"detect.follow.min_rate={bar}: the share of answers that must be continuations for "
                         f"Algorithm 1 and 2's verdicts to count; give a number in [0, 1] (the default 0.5)")
    if cfg.get("generation") is not None:
        check_backend(cfg.generation)  # its target and settings, before any model is opened
    if cfg.get("judge") is not None:
        from omegaconf import OmegaConf

        settings = OmegaConf.to_container(cfg.judge, resolve=True)
        check_node({k: v for k, v in settings.items() if k != "generator"}, where="judge",
                   example="detect.judges.threshold.ThresholdJudge")
        if "generator" in settings:
            check_backend(cfg.judge.generator, where="judge.generator")
    return build(detect.detectors)


# detect.reference_model's keywords in a study (python -m contaminate): the model the run started from, and the study's
# clean model (the contaminated model's own twin before the leak: an oracle no practitioner has)
STUDY_REFERENCES = {"base": "the base model the run started from", "clean": "the study's clean model, the oracle"}


def reference_setting(detect_cfg, *, study: bool = False):
    """``detect.reference_model`` checked in one line before any work: None (no reference model: the reference ratio
    is left out), a study's keyword (``base``, ``clean``), or a hub id (owner/name) or local model folder, returned
    as a ``ModelRef`` named by it (``python -m detect`` takes only these)."""
    from detect.models import hub

    value = detect_cfg.get("reference_model")
    if value is None:
        return None
    text = str(value)
    if study and text in STUDY_REFERENCES:
        return text
    if text in STUDY_REFERENCES:
        raise InputError(f"detect.reference_model={text} names a study's model (python -m contaminate); here give a "
                         f"hub id (owner/name) or a model folder, or null (no reference)")
    if isinstance(value, str) and (Path(text).is_dir() or re.fullmatch(r"[\w.-]+/[\w.-]+", text)):
        return hub(text)
    keywords = "".join(f"{key} ({meaning}), " for key, meaning in STUDY_REFERENCES.items()) if study else ""
    raise InputError(f"detect.reference_model={text} is not {'base, clean, ' if study else ''}a model folder or a hub "
                     f"id (owner/name); use {keywords}a hub id, a model folder, or null (no reference)")


def logit_requests(detectors: Sequence[Detector], evidence: Evidence) -> list[tuple[list[str], bool]]:
    """Everything the (running) detectors will read from the model, as ``LanguageModel.prefetch`` requests, so one
    batched pass serves them all (membership texts with moments, the sharded test's orders, DC-PDD's texts)."""
    return [request for detector in detectors for request in detector.logit_requests(evidence)]


def instance_scorer(detectors: Sequence[Detector],
                    evidence: Evidence) -> Callable[[Sequence[Example]], list[dict]] | None:
    """``examples -> [{score: value}]`` over the (running) instance-level detectors with scores (each instance's
    scores, kept on its guided row), or None when none runs."""
    scoring = [d for d in detectors if d.level == "instance" and d.scores]
    if not scoring:
        return None

    def score(examples: Sequence[Example]) -> list[dict]:
        merged: list[dict] = [{} for _ in examples]
        for detector in scoring:
            for row, values in zip(merged, detector.score(evidence, examples)):
                row.update(values)
        return merged

    return score


def partition_rows(detectors: Sequence[Detector], evidence: Evidence) -> list[dict]:
    """The (running) partition-level detectors' rows (each reads ``evidence.pool``: Cheat? searches it for
    replicas, the sharded test orders it)."""
    rows = []
    for detector in detectors:
        if detector.level == "partition":
            row = detector.run(evidence)
            if row is not None:
                rows.append({**row, "dataset": evidence.dataset.key, "split": evidence.split})
    return rows


def summarize(rows: Sequence[dict], detectors: Sequence[Detector], *, seed: int = 0, follow: dict | None = None,
              follow_bar: float = FOLLOW_BAR) -> dict:
    """Every detector's outcome over a set of rows (instance rows and partition rows): one block each; with them
    ``answers`` (each reading's answers by class, follow.py), ``follow`` (the model's follow rate against
    ``follow_bar``, read from ``follow``: its known non-members' guided answers, where the caller has them, else this
    partition's own) and ``skipped`` (each detector that did not run here, with its reason)."""
    guided = sorted((r for r in rows if r.get("instruction") == "guided"), key=lambda r: r["instance_id"])
    others = {reading: sorted((r for r in rows if r.get("instruction") == reading), key=lambda r: r["instance_id"])
              for reading in READINGS if reading != "guided"}
    partition = {r["detector"]: r for r in rows if r.get("level") == "partition" and "skipped" not in r}
    summary = {"n_instances": len(guided)}
    for detector in detectors:
        summary.update(detector.summarize(guided, others, partition, seed))
    answers = {reading: answer_classes(found) for reading, found in (("guided", guided), *others.items())}
    answers |= {name: answer_classes([row]) for name, row in partition.items() if row.get("answer_class")}
    if any(block["n"] for block in answers.values()):
        summary["answers"] = {reading: block for reading, block in answers.items() if block["n"]}
    if any(detector.follows_instruction and detector.name in summary for detector in detectors):
        follow = follow or follow_block(guided, on="instances of this partition", bar=follow_bar)
        if follow:
            summary["follow"] = follow
    skipped = {r["detector"]: r["skipped"] for r in rows if r.get("level") == "partition" and "skipped" in r}
    if skipped:
        summary["skipped"] = skipped
    return summary


def is_record(row: dict) -> bool:
    """A row that records how a cell was read, not a detector's output: a detector skipped and why (``summarize``
    reads it into ``skipped``), or a known cell's choice of prompt format (``instruction_format``). Kept with a cell's
    cached rows, left out of partition.jsonl."""
    return row.get("level") == "partition" and ("skipped" in row or row.get("detector") == FORMAT_CHOICE)


def uninformative(summary: dict, detector=None) -> str | None:
    """"uninformative: the instruction was not followed (follow 0.12 of 100 known non-members, below 0.50)" where a
    summary's follow rate (its model's guided answers) is below its bar: Algorithm 1 and 2's verdicts then read
    answers that mostly do not answer. For a ``detector`` whose verdict compares the guided answers with another
    instruction's (its ``completions``: Algorithm 1's general instruction), also where this partition's answers to
    that instruction mostly do not answer it, below the same bar: a general answer that copies the worked example or
    echoes the instruction is no baseline, so guided > general says nothing of the leak (the first command's clean
    model: 0.00 and 0.10 of 10, two false flags). Else None."""
    follow = summary.get("follow")
    if follow and not follow["informative"]:
        return f"{UNINFORMATIVE} ({follow_text(follow)}, below {follow['bar']:.2f})"
    bar = (follow or {}).get("bar", FOLLOW_BAR)
    for reading in getattr(detector, "completions", ()):
        block = (summary.get("answers") or {}).get(reading)
        if reading != "guided" and block and block["n"] and block["follow_rate"] < bar:
            read = {"rate": block["follow_rate"], "n": block["n"], "on": f"{reading} answers of this partition"}
            return f"uninformative: the {reading} instruction was not followed ({follow_text(read)}, below {bar:.2f})"
    return None


def verdicts(summary: dict) -> dict[str, bool]:
    """Every detector's partition verdict in a summary: contaminated (True) or not."""
    return {name: flagged for cls, block in read_back(summary) for name, flagged in cls.verdicts(block).items()}


def _cell(text: str | None, width: int = 90) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= width else text[: width - 1] + "…"


def write_report(path: Path, summary: dict, rows: Sequence[dict]) -> None:
    lines = [f"# Contamination detection: {summary['dataset']} / {summary['split']} / {summary['model']}", ""]
    lines += [f"{summary['n_instances']} instances, prompt format `{summary['prompt_format']}`, "
              f"{thresholds_line(summary['judge'])}, seed {summary['seed']}.", ""]
    if summary.get("follow"):
        line = (f"Answers: {follow_text(summary['follow'])} answered the instruction with a continuation (the bar: "
                f"{summary['follow']['bar']:.2f}).")
        if uninformative(summary):  # the model's guided answers: Algorithm 1 and 2 alike
            line += (f" **{uninformative(summary)}**: Algorithm 1 and 2's verdicts below are their rules' outcomes on "
                     f"answers that mostly do not answer, not evidence of a clean model.")
        elif uninformative(summary, Algorithm1):  # the partition's general answers: Algorithm 1 alone
            line += (f" **Algorithm 1: {uninformative(summary, Algorithm1)}**: its verdict below is its rule's outcome "
                     f"against answers that do not answer.")
        lines += [line, ""]
    if summary.get("judge", {}).get("name") == "recipe":  # the pre-check runs beside the recipe alone
        lines += [precheck_line(summary.get("precheck")), ""]
    lines += answers_table(summary)
    for cls, block in read_back(summary):  # each detector's own section, in the order they ran
        lines += cls.report_section(block)
    lines += [f"- {name}: not run: {why}" for name, why in (summary.get("skipped") or {}).items()]
    lines += [""] if summary.get("skipped") else []
    lines += ["## Instances", "", *table(["id", "instruction", "reference", "completion", "ROUGE-L", "semantic",
                                          "judge"])]
    for row in sorted(rows, key=lambda r: (r["instance_id"], READINGS.index(r["instruction"]))):
        semantic = "-" if row["semantic"] is None else f"{row['semantic']:.2f}"
        rouge = "-" if row["rouge_l"] is None else f"{row['rouge_l']:.2f}"
        lines.append(markdown_row([row["instance_id"], row["instruction"], _cell(row["reference"]),
                                   _cell(row["completion"] or "-"), rouge, semantic, row["judge"] or "-"]))
    path.write_text("\n".join(lines) + "\n")


def answers_table(summary: dict) -> list[str]:
    """Each reading's answers by class (follow.py), a row per reading, as report.md shows them."""
    from detect.detectors.time_travel.follow import CLASSES

    answers = summary.get("answers")
    if not answers:
        return []
    lines = table(["answers", "n", *(name.replace("_", " ") for name in CLASSES)],
                  ([reading, block["n"], *(block["classes"][name] for name in CLASSES)]
                   for reading, block in answers.items()))
    return lines + [""]


def write_config(path: Path, cfg, placement) -> None:
    """The run's config with interpolations resolved and ``runtime.device`` / ``runtime.dtype`` as the policy
    resolved them (Hydra's own copy, as asked, is in ``.hydra/``)."""
    from omegaconf import OmegaConf

    resolved = OmegaConf.to_container(cfg, resolve=True)
    resolved["runtime"].update(device=placement.device, dtype=placement.dtype)
    path.write_text(OmegaConf.to_yaml(resolved))


def write_jsonl(path: Path, rows: Sequence[dict]) -> None:
    with open(path, "w") as file:
        for row in rows:
            file.write(json.dumps(row, ensure_ascii=False) + "\n")


def precheck_asked(judge, known, reference_ref) -> bool:
    """Whether the A/A pre-check runs (``judge.precheck``: auto where known non-members and a reference model are
    given); one line where it is insisted on without a model that saw neither pool."""
    asked = known is not None and getattr(judge, "precheck", False) is not False
    if asked and judge.precheck is True and reference_ref is None:
        raise InputError("judge.precheck=true reads the known non-members and the judged split under a model that saw "
                         "neither; set detect.reference_model=<the base model of the fine-tune, or another model "
                         "that cannot have seen them>, or judge.precheck=auto")
    return asked


def run_precheck(reference, known, examples) -> dict | None:
    """The A/A pre-check under the reference model (None where none was opened), its line printed."""
    if reference is None:
        return None
    found = precheck(reference, [e.full_text for e in known], [e.full_text for e in examples])
    print(precheck_line(found))
    return found


def main(cfg, out_dir: Path) -> dict:
    """Everything ``python -m detect`` does, given a composed config and a run folder."""
    from detect.cli import instantiate
    from detect.detectors.time_travel.scores import SemanticScorer
    from detect.models import GenerationSettings, build_backend
    from detect.models.hf import LocalModels
    from detect.runtime import from_config as placement_from

    started = time.time()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    dataset = cfg.dataset
    split = cfg.split or dataset.default_split
    placement = placement_from(cfg.runtime)
    detectors = check_detection(cfg)  # the whole config, before any data or model is touched
    reference_ref = reference_setting(cfg.detect)
    backend = build_backend(cfg.generation)
    write_config(out_dir / "config.yaml", cfg, placement)

    # --- setup: each component once
    split_examples = load_split(dataset, split)
    examples = sample(split_examples, cfg.sample.n_detect, seed=cfg.seed, where=f"{dataset.key} {split}")
    judge = instantiate(cfg.judge)
    known = recipe_known(judge, dataset, split, examples, detectors) if hasattr(judge, "fit_on") else None
    asks_precheck = precheck_asked(judge, known, reference_ref)
    settings = GenerationSettings.of(cfg.detect)
    model = backend.open(instantiate(cfg.model) if backend.reads_model_group else None, settings, placement)
    reference = None
    if reference_ref is not None and (any("reference" in d.needs for d in detectors) or asks_precheck):
        reference = LocalModels().open(reference_ref, settings, placement)
    exchangeable = run_precheck(reference, known, examples) if asks_precheck else None
    semantic = SemanticScorer(cfg.detect.semantic_model, placement=placement) if cfg.detect.semantic_model else None
    # The partition detectors read the split, not the sample: Cheat? searches all of it for replicas, the
    # sharded test takes its first instances in the dataset's order.
    evidence = Evidence(dataset, split, examples, split_examples, model=model, reference=reference, seed=cfg.seed)
    follow = None  # the model's follow rate: on its known non-members where given, else on the partition itself
    formats = instruction_formats(model, instruction_setting(cfg.detect))
    # the format the instructions are asked in: chosen on the known non-members where given, else the model's own
    choice = {"chosen": formats[0], "by_format": {}, "why": "no known non-members to choose on (judge=recipe gives "
                                                             "them): the first the setting allows"}
    if known is not None:  # judge=recipe: fitted on this model's own completions of the known non-members
        known_rows, choice = fit_recipe_judge(judge, known, evidence, detect_cfg=cfg.detect, semantic=semantic)
        write_jsonl(out_dir / "known_non_members.jsonl", known_rows)
        follow = follow_block(known_rows, on="known non-members", bar=follow_bar(cfg.detect))
    loaded = time.time()

    # --- detect
    rows, timing = run_partition(evidence, detectors, judge=judge, detect_cfg=cfg.detect, semantic=semantic,
                                 prompt_format=choice["chosen"])
    for row in rows:
        row["model"] = model.name
    summary = summarize(rows, detectors, seed=cfg.seed, follow=follow, follow_bar=follow_bar(cfg.detect))
    placements = {"model": model.placement()}
    if reference is not None:
        placements["reference"] = reference.placement()
    if semantic is not None:
        placements["semantic"] = semantic.placement()
    summary.update(
        dataset=dataset.key, split=split, model=model.name, model_path=model.path, generation=backend.name,
        prompt_format=model.prompt_format, seed=cfg.seed, judge=judge.describe(),
        instruction_format={"setting": instruction_setting(cfg.detect), **choice},
        precheck=exchangeable,
        runtime={"resolved": placement.describe(), "models": {k: v for k, v in placements.items() if v}},
        instance_ids=[example.instance_id for example in examples],
        timings={"load_s": round(loaded - started, 2), "detect_s": round(time.time() - loaded, 2)},
    )

    # --- write
    instance_rows = [row for row in rows if row.get("level") != "partition"]
    write_jsonl(out_dir / "results.jsonl", instance_rows)
    write_jsonl(out_dir / "partition.jsonl", [row for row in rows if row.get("level") == "partition"
                                              and not is_record(row)])
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    write_report(out_dir / "report.md", summary, instance_rows)
    return summary
