"""The performance test against hand computations on a scripted model's token log-probabilities, its skip lines
(no held-out instances, no label, a format without the label), and one run through the pipeline on the tiny model."""

from math import comb

import pytest
from omegaconf import OmegaConf

from detect.datasets import Example
from detect.detectors import build
from detect.detectors.base import NO_KNOWN_NON_MEMBERS, Evidence, Rendering
from detect.detectors.performance import PerformanceTest, performance_test
from detect.errors import InputError
from detect.models.base import LanguageModel

DATASET = OmegaConf.create({"key": "toy", "title": "Toy", "task": "nli",
                            "fields": {"first": "sentence1", "second": "sentence2", "label": "label"}})
YES, NO = "entailment", "not entailment"


class ScriptedModel(LanguageModel):
    """One word a token (with its leading space); the first has no context and is not scored. A token's
    log-probability is ``table[(previous word, word)]``, -1 where the table has none."""
    name = "scripted"

    def __init__(self, table: dict) -> None:
        super().__init__()
        self.table, self.calls = table, 0

    def _token_logprobs(self, texts, moments):
        self.calls += 1
        found = []
        for text in texts:
            words, starts, position = text.split(" "), [], 0
            for word in words:
                starts.append(position)
                position += len(word) + 1
            found.append({"logp": [self.table.get((words[i - 1], words[i]), -1.0) for i in range(1, len(words))],
                          "offsets": starts[1:]})
        return found


class QuestionAnswer:
    """The leak's reading: the question as the context, the label as the text (an instruction's answer turn)."""
    name = "question and answer"

    def rendering(self, example, split):
        return Rendering(example.text, " " + example.label)


POOL = [Example(1, "q1", None, YES), Example(2, "q2", None, NO), Example(3, "q3", None, YES),
        Example(4, "q4", None, NO)]
HELDOUT = [Example(11, "h1", None, YES), Example(12, "h2", None, NO), Example(13, "h3", None, NO),
           Example(14, "h4", None, NO), Example(15, "h5", None, YES)]
# The answer's log-probability summed over its tokens: "entailment" is one token (-1 unless the table says), "not
# entailment" two (log p(not | question) - 0.1). By default -1 against -1.1: the model answers "entailment".
TABLE = {("not", "entailment"): -0.1,
         ("q2", "not"): -0.5,   # "not entailment" -0.6 > -1: right
         ("q4", "not"): -0.5,   # right
         ("h2", "not"): -1.0,   # -1.1 < -1: "entailment", wrong
         ("h3", "not"): -2.0,   # wrong
         ("h4", "not"): -1.5,   # wrong
         ("h5", "entailment"): -3.0, ("h5", "not"): -0.5,  # "not entailment", wrong
         # q1: the sum picks "entailment" (-1.5 against -2.1) where the mean per token would not (-1.05)
         ("q1", "entailment"): -1.5, ("q1", "not"): -2.0}


def _evidence(model, **changes) -> Evidence:
    settings = dict(dataset=DATASET, split="test", instances=POOL[:2], pool=POOL, model=model,
                    known_non_members=HELDOUT, reader=QuestionAnswer())
    return Evidence(**{**settings, **changes})


def test_accuracy_and_the_test_by_hand():
    model = ScriptedModel(TABLE)
    evidence = _evidence(model)
    detector = PerformanceTest(max_instances=40, alpha=0.05)
    assert detector.candidates(evidence) == [YES, NO]
    assert detector.correct(evidence, POOL) == [True, True, True, True]
    assert detector.correct(evidence, HELDOUT) == [True, False, False, False, False]
    row = detector.run(evidence)
    # 4/4 against 1/5. Fisher, one-sided: 9 instances of which 5 right, the pool draws 4; P(all 4 right) =
    # C(5,4) C(4,0) / C(9,4) = 5/126.
    assert row["accuracy"] == 1.0 and row["accuracy_heldout"] == pytest.approx(0.2)
    assert row["statistic"] == pytest.approx(0.8)
    assert row["p_value"] == pytest.approx(comb(5, 4) * comb(4, 0) / comb(9, 4))
    assert row["significant"] is True
    assert (row["n_instances"], row["n_heldout"], row["candidates"]) == (4, 5, [YES, NO])
    assert PerformanceTest.verdicts(row) == {"performance": True}
    assert PerformanceTest.statistics(row, 10) == {"performance": pytest.approx(1 - 5 / 126)}
    assert "gain +0.800" in "".join(PerformanceTest.report_section(row))


def test_the_first_instances_of_the_pool_and_the_other_tail():
    model = ScriptedModel(TABLE)
    detector = PerformanceTest(max_instances=2, alpha=0.05)
    evidence = _evidence(model, pool=POOL[::-1])
    assert [e.instance_id for e in detector.instances(evidence)] == [1, 2]  # by instance id, whatever the order
    row = detector.run(evidence)
    # 2/2 against 1/5: 7 instances of which 3 right, the pool draws 2; P(both right) = C(3,2) C(4,0) / C(7,2) = 1/7
    assert row["p_value"] == pytest.approx(comb(3, 2) * comb(4, 0) / comb(7, 2)) and row["significant"] is False
    # lower accuracy on the pool than held out: p near 1, statistic negative
    worse = performance_test([False, False, True], [True] * 4 + [False], alpha=0.05)
    assert worse["statistic"] == pytest.approx(1 / 3 - 0.8) and worse["p_value"] > 0.9


def test_one_pass_serves_the_test():
    model = ScriptedModel(TABLE)
    evidence = _evidence(model)
    detector = PerformanceTest()
    model.prefetch(detector.logit_requests(evidence))
    detector.run(evidence)
    assert model.calls == 1


def test_skip_lines():
    model = ScriptedModel(TABLE)
    detector = PerformanceTest()
    assert detector.skipped(_evidence(model, known_non_members=())) == NO_KNOWN_NON_MEMBERS
    unlabelled = OmegaConf.create({"key": "toy_sum", "title": "Toy", "task": "summary", "fields": {"text": "text"}})
    assert detector.skipped(_evidence(model, dataset=unlabelled)) == (
        "it measures accuracy on a labelled task, and dataset toy_sum has no label (task summary)")
    one_label = [Example(i, f"h{i}", None, YES) for i in range(3)]
    assert "at least 2 distinct labels" in detector.skipped(_evidence(model, pool=one_label[:1],
                                                                      known_non_members=one_label))
    # PlainText (python -m detect, no leak format) reads the bare text: the label is not there to answer
    assert detector.skipped(Evidence(DATASET, "test", POOL, POOL, model=model, known_non_members=HELDOUT)) == (
        "the leak's format (plain text) does not render the label, so there is no answer to score")
    assert detector.skipped(_evidence(model)) is None
    with pytest.raises(InputError, match="performance.alpha=1.5: give a number in \\(0, 1\\)"):
        build({"performance": {"_target_": "detect.detectors.performance.PerformanceTest", "alpha": 1.5}})


def test_through_the_pipeline_on_the_tiny_model(compose_config):
    from contaminate.regime.layouts import LeakReader, build_format
    from detect.cli import CONF_DIR
    from detect.judges.threshold import ThresholdJudge
    from detect.models import load, tiny_random
    from detect.models.hf import HFModel
    from detect.pipeline import run_partition, summarize

    cfg = compose_config("detect", ["+dataset=synth_nli", "detect.semantic_model=null"])
    model = HFModel(*load(tiny_random()), prompt_format="raw", max_new_tokens=8, progress=False)
    labels = ["0 (entailment)", "1 (not entailment)"]
    pool = [Example(i, f"Ada Vell built raft {i} in Orm.", f"Ada built raft {i}.", labels[i % 2]) for i in range(6)]
    heldout = [Example(100 + i, f"Bo Lund sold {i} nets.", f"Bo sold nets {i}.", labels[i % 2]) for i in range(8)]
    reader = LeakReader(build_format(OmegaConf.load(CONF_DIR / "format" / "metadata.yaml")), cfg.dataset)
    detector = PerformanceTest(max_instances=5)
    evidence = Evidence(cfg.dataset, "test", pool[:2], pool, model=model, known_non_members=heldout, reader=reader)
    rows, timing = run_partition(evidence, [detector], judge=ThresholdJudge(), detect_cfg=cfg.detect)
    (row,) = [r for r in rows if r.get("detector") == "performance"]
    # the model's answers by hand: each instance's document with each label, summed over the tokens it scores
    right = []
    for examples in (pool[:5], heldout):
        for example in examples:
            totals = {}
            for label in labels:
                context, text = reader.rendering(Example(example.instance_id, example.text, example.text_pair,
                                                         label), "test")
                (stats,) = model.continuation_logprobs([(context, text)])
                totals[label] = sum(stats["logp"])
            right.append(max(labels, key=lambda label: totals[label]) == example.label)
    assert row["accuracy"] == pytest.approx(sum(right[:5]) / 5)
    assert row["accuracy_heldout"] == pytest.approx(sum(right[5:]) / 8)
    assert 0 <= row["p_value"] <= 1 and row["significant"] == (row["p_value"] <= 0.05)
    assert summarize(rows, [detector])["performance"]["candidates"] == labels
    assert "skipped" not in timing


def test_each_context_runs_once_for_all_its_labels_on_the_tiny_model():
    """The label options share their context's tokens: the context runs once for all of them, and each option's
    log-probabilities are those of the plain pass (to 1e-4), so every answer is the same."""
    from detect.models import load, tiny_random
    from detect.models.hf import HFModel

    weights, tokenizer = load(tiny_random())
    pool = [Example(i, f"SynthNLI, test split. sentence1: Ada Vell built raft {i} in Orm, by the river. "
                       f"sentence2: Ada built a raft. label:", None, YES if i % 2 else NO) for i in range(6)]
    found = {}
    for share in (False, True):
        model = HFModel(weights, tokenizer, prompt_format="raw", share_prefix=share, progress=False)
        evidence = _evidence(model, instances=pool[:2], pool=pool, known_non_members=pool[:3])
        detector = PerformanceTest()
        requests = [r for rows in detector.choices(evidence, pool) for r in rows]
        model.prefetch(detector.logit_requests(evidence))
        found[share] = ([s["logp"] for s in model.continuation_logprobs(requests)], detector.correct(evidence, pool),
                        model.counters()["scored_tokens"])
    for plain, shared in zip(found[False][0], found[True][0]):
        assert shared == pytest.approx(plain, abs=1e-4)
    assert found[True][1] == found[False][1] and found[True][2] < found[False][2] / 1.5
