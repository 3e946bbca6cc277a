"""What a detector is: a spec the study, the summary, the report and calibration read without naming it.

A detector declares

- ``name``: its key in ``summary.json`` (one block per detector) and in ``detect.detectors``;
- ``level``: ``instance`` (a score or label per instance, read over a cell) or ``partition`` (one row per pool);
- ``completions``: the Time Travel instructions (guided, general, and the oracle ``leak`` reading) whose completions
  it reads: the pipeline generates those only, and only where a running detector reads them;
- ``needs``: what it reads: ``generations`` (the model generates), ``judge`` (the guided completions' labels),
  ``logits`` (the model's token log-probabilities), ``moments`` (the next-token distribution's mean and
  spread), ``token_ids`` (the scored tokens' ids and the model's tokenizer), ``reference`` (a reference model's
  log-probabilities, used where there is one), ``pool`` (every instance of the partition), ``known_non_members`` (known
  non-members of the same distribution);
- ``scores``: the instance scores it writes on each guided row, every one oriented **higher = more likely a
  member**, as calibration's ROC and thresholds expect;
- ``describes``: what each name it writes (score, verdict or statistic, by prefix) needs, for the reports;
- ``summary_fields`` (partition level: the fields of its row its summary keeps) or ``title`` (instance scores:
  their report heading);

and implements, at run time (an instance built from its config entry),

- ``skipped(evidence)``: why it cannot run on this model (None: it runs), from its needs and the model's answers;
- ``logit_requests(evidence)`` / ``reference_requests(evidence)``: the texts it will read from the model and from
  the reference model, so one batched pass serves every detector;
- ``score(evidence, examples)`` (instance level, with scores) or ``run(evidence)`` (partition level: its row);
- ``summarize(guided, others, partition, seed)``: its block(s) of a summary (``others``: the general and leak
  completions by instruction),

and, reading a summary back (class methods: a finished study folder is enough),

- ``verdicts(block)``: flagged or not per verdict; ``statistics(block, n_instances)``: larger = more contaminated,
  for a partition-level ROC; ``report_columns(block, correct)``, ``report_section(block)`` and
  ``study_section(cells, manifest)``: its report text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple, Sequence

from detect.datasets import Example
from detect.markdown import table

LEVELS = ("instance", "partition")
NEEDS = ("generations", "judge", "logits", "moments", "token_ids", "reference", "pool", "known_non_members")
NO_KNOWN_NON_MEMBERS = ("it needs known non-members of the partition's distribution (Evidence.known_non_members): a "
                        "study draws sample.n_heldout of them from the split, disjoint from members and non-members")


class Rendering(NamedTuple):
    """An instance as a leak rendered it: ``text`` is what the logit detectors score, given ``context`` (the
    tokens the leak put before it and trained no loss on: an instruction's prompt, a dump's header)."""
    context: str
    text: str


class PlainText:
    """How the detectors read instances when nothing says how they leaked (``python -m detect``): each instance's
    whole text, no context; a run of instances joined by blank lines. A study reads them as its format rendered them
    (``contaminate/regime/layouts.py``: ``LeakReader``)."""
    name = "plain text"
    leak = False  # not the leak's own rendering: the oracle readings (Algorithm 2's leak reading) are skipped
    lays_out_order = True  # the benchmark as published, in its canonical order: what the order tests look for

    def rendering(self, example: Example, split: str) -> Rendering:
        return Rendering("", example.full_text)

    def sequence(self, examples: Sequence[Example], split: str) -> str:
        return "\n\n".join(example.full_text for example in examples)


@dataclass
class Evidence:
    """What the detectors of one partition x one model may read."""
    dataset: Any                      # the dataset config: key, title, task
    split: str
    instances: Sequence[Example]      # the sample the instance-level detectors score
    pool: Sequence[Example]           # every instance the partition-level detectors may read, in dataset order or not
    model: Any = None                 # the detect.models.LanguageModel under test
    reference: Any = None             # a reference LanguageModel, if any (the reference ratio reads it)
    seed: int = 0
    reader: Any = field(default_factory=PlainText)  # how the leak rendered an instance and a run of instances
    known_non_members: Sequence[Example] = ()   # known non-members of the same split, disjoint from instances and pool
    # (what ReCaLL conditions on and a performance test compares with); empty where none is known

    @property
    def scoring_reference(self):
        """The reference model where it gives log-probabilities, else None (the reference ratio is then left out)."""
        return self.reference if self.reference is not None and not self.reference.no_logprobs else None

    def renderings(self, examples: Sequence[Example] | None = None) -> list[Rendering]:
        """The instances (default: the sample) as the leak rendered them, what the logit detectors score."""
        return [self.reader.rendering(example, self.split) for example in
                (self.instances if examples is None else examples)]

    def sequence(self, examples: Sequence[Example]) -> str:
        """A run of instances in the given order as the leak would lay them out (a dump's lines under its header)."""
        return self.reader.sequence(examples, self.split)


def verdict(flagged: bool, correct: bool) -> str:
    """A verdict in a report cell: contaminated / clean, marked right or wrong against the ground truth."""
    return f"{'contaminated' if flagged else 'clean'} {'✓' if correct else '✗'}"


class Detector:
    name: ClassVar[str]
    level: ClassVar[str]
    needs: ClassVar[tuple[str, ...]]
    # The Time Travel instructions whose completions it reads (detect.pipeline.detect_partition generates a
    # partition's guided / general completions only where a running detector reads them): Algorithm 1 both,
    # Algorithm 2 the guided ones, its leak reading the "leak" ones, every other detector none (those that generate do
    # it themselves).
    completions: ClassVar[tuple[str, ...]] = ()
    scores: ClassVar[tuple[str, ...]] = ()
    describes: ClassVar[dict[str, str]] = {}
    verdict_labels: ClassVar[dict[str, str]] = {}   # verdict -> how it reads a partition (calibration report)
    summary_fields: ClassVar[tuple[str, ...]] = ()  # partition level: the fields of its row its summary block keeps
    title: ClassVar[str] = ""                       # instance scores: the report section's heading (default: name)
    # instance scores: how the text scored was read, where a study could read it two ways (the leak's own rendering,
    # which a practitioner does not know: an oracle reading; or the bare instance text)
    reading: ClassVar[str] = ""
    # its verdict reads answers to an instruction (Time Travel's guided / general prompts): where the model mostly does
    # not answer it (follow.py: its follow rate below detect.follow.min_rate), the verdict is "uninformative"
    follows_instruction: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs) -> None:
        """A need outside ``NEEDS`` would be silently unmet (a detector that declared "heldout", the known
        non-members' name before issue 70): one line when the class is defined."""
        super().__init_subclass__(**kwargs)
        unknown = [need for need in getattr(cls, "needs", ()) if need not in NEEDS]
        if unknown:
            raise TypeError(f"detector {cls.__name__} needs {', '.join(unknown)}, which no detector is given; use "
                            f"some of {', '.join(NEEDS)} (known non-members: known_non_members, was heldout)")

    # ------------------------------------------------------------------------------------------- run time
    def skipped(self, evidence: Evidence) -> str | None:
        """Why it cannot run on this model, in one line (None: it runs): what it needs that the model cannot give."""
        model = evidence.model
        for need, reason in (("logits", "no_logprobs"), ("moments", "no_moments"), ("token_ids", "no_token_ids")):
            if need in self.needs and getattr(model, reason, None):
                return getattr(model, reason)
        if "known_non_members" in self.needs and not evidence.known_non_members:
            return NO_KNOWN_NON_MEMBERS
        return None

    def runnable(self, evidence: Evidence) -> bool:
        """False where what it needs is missing (logits from a server that gives none): skipped, not failed."""
        return self.skipped(evidence) is None

    def data_key(self) -> str | None:
        """A digest of data the detector reads beyond its settings (a corpus), for cache keys; None if none."""
        return None

    def logit_requests(self, evidence: Evidence) -> list[tuple[list[str], bool]]:
        """``LanguageModel.prefetch`` requests: (texts, with moments)."""
        return []

    def reference_requests(self, evidence: Evidence) -> list[tuple[list[str], bool]]:
        """What it reads from ``evidence.scoring_reference``, as ``prefetch`` requests."""
        return []

    def score(self, evidence: Evidence, examples: Sequence[Example]) -> list[dict[str, float]]:
        """Instance level: the scores of each instance (higher = more likely a member)."""
        raise NotImplementedError

    def run(self, evidence: Evidence) -> dict | None:
        """Partition level: one row (``level``, ``detector`` and the detector's own fields), or None."""
        raise NotImplementedError

    def summarize(self, guided: Sequence[dict], others: dict[str, Sequence[dict]], partition: dict[str, dict],
                  seed: int) -> dict:
        """The summary entries this detector contributes (usually ``{name: block}``); {} when it did not run.
        ``guided``: the instance rows (each instance's guided row, which carries its scores); ``others``: the rows of
        the other instructions (general, leak) by instruction. Partition level: its row's ``summary_fields``;
        instance scores: the mean of each over the guided rows."""
        if self.level == "partition":
            row = partition.get(self.name)
            return {} if row is None else {self.name: {key: row[key] for key in self.summary_fields}}
        if not self.scores or not guided or guided[0].get(self.scores[0]) is None:
            return {}
        return {self.name: {score: float(sum(row[score] for row in guided) / len(guided))
                            for score in self.scores if guided[0].get(score) is not None}}

    # ------------------------------------------------------------------------------------------- reading back
    @classmethod
    def verdicts(cls, block: dict) -> dict[str, bool]:
        return {}

    @classmethod
    def statistics(cls, block: dict, n_instances: int) -> dict[str, float]:
        return {}

    @classmethod
    def report_columns(cls, block: dict, correct: dict[str, bool]) -> list[tuple[str, str]]:
        """(header, cell) pairs for the study report's verdict table."""
        return []

    @classmethod
    def report_section(cls, block: dict) -> list[str]:
        """Markdown lines for ``python -m detect``'s report (instance scores: their means)."""
        if not cls.scores:
            return []
        return [f"## {cls.title or cls.name} (mean over the instances; higher = more likely seen in training)", "",
                *table(list(block), [[f"{value:.3f}" for value in block.values()]]), ""]

    @classmethod
    def study_section(cls, cells: dict[str, dict], manifest: dict) -> list[str]:
        """Markdown lines of its own for a study's report, before the verdict table, from every cell's summary."""
        return []


class PValueTest(Detector):
    """A partition-level test whose block holds ``p_value`` and ``significant`` (p <= alpha): its verdict, the
    statistic calibration ranks (1 - p: a smaller p is more evidence), and a report column "<column> (p)". The
    order tests (sharded.py) and the performance test share it; each writes its own ``report_section``."""
    level = "partition"
    column: ClassVar[str] = ""  # the report column's name, before " (p)"

    @classmethod
    def verdicts(cls, block: dict) -> dict[str, bool]:
        return {cls.name: block["significant"]}

    @classmethod
    def statistics(cls, block: dict, n_instances: int) -> dict[str, float]:
        return {cls.name: 1 - block["p_value"]}

    @classmethod
    def report_columns(cls, block: dict, correct: dict[str, bool]) -> list[tuple[str, str]]:
        return [(f"{cls.column} (p)", f"{verdict(block['significant'], correct[cls.name])} ({block['p_value']:.3f})")]
