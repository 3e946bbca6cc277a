"""ReCaLL against hand computations on a scripted model's token log-probabilities, its prefix, its skip line, and
one run through the pipeline on the tiny model."""

import math

import pytest
from omegaconf import OmegaConf

from detect.datasets import Example
from detect.detectors import build
from detect.detectors.base import NO_KNOWN_NON_MEMBERS, Evidence, Rendering
from detect.detectors.recall import ReCaLL, recall_score
from detect.errors import InputError
from detect.models.base import LanguageModel

DATASET = OmegaConf.create({"key": "toy", "title": "Toy", "task": "classification",
                            "fields": {"text": "text", "label": "label"}})


class ScriptedModel(LanguageModel):
    """One character a token; the first has no context and is not scored. 'a' has log-probability -1 and 'b' -3,
    any other character -0.5; once a 'P' (a prefix shot) came earlier in the text, 'a' has -2 and 'b' -3.5."""
    name = "scripted"

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def _token_logprobs(self, texts, moments):
        self.calls += 1
        found = []
        for text in texts:
            logp = []
            for i in range(1, len(text)):
                primed = "P" in text[:i]
                logp.append({"a": -2.0 if primed else -1.0, "b": -3.5 if primed else -3.0}.get(text[i], -0.5))
            found.append({"logp": logp, "offsets": list(range(1, len(text)))})
        return found


class WithContext:
    """A reader whose renderings have a context: 'c' before each instance's text."""
    name = "with context"

    def rendering(self, example, split):
        return Rendering("c", example.text)


INSTANCES = [Example(0, "aab"), Example(1, "bba")]
HELDOUT = [Example(10 + i, "P") for i in range(5)]  # known non-members: each shot is "P"


def test_recall_by_hand_without_context():
    evidence = Evidence(DATASET, "test", INSTANCES, INSTANCES, model=ScriptedModel(), known_non_members=HELDOUT)
    detector = ReCaLL(n_shots=2)
    assert detector.prefix(evidence) == "PP"  # two shots, no separator (the official "".join)
    # "aab" alone: its first token has no context; 'a' -1, 'b' -3 -> LL = -2. After "PP": all three tokens scored,
    # -2, -2, -3.5 -> LL = -2.5. ReCaLL = -2.5 / -2 = 1.25.
    # "bba" alone: -3, -1 -> -2; after "PP": -3.5, -3.5, -2 -> -3; ReCaLL = 1.5.
    assert detector.score(evidence, INSTANCES) == [{"recall": pytest.approx(1.25)}, {"recall": pytest.approx(1.5)}]


def test_recall_by_hand_with_a_context_and_a_separator():
    evidence = Evidence(DATASET, "test", INSTANCES, INSTANCES, model=ScriptedModel(), known_non_members=HELDOUT,
                        reader=WithContext())
    detector = ReCaLL(n_shots=3, separator="\n")
    assert detector.prefix(evidence) == "cP\n" * 3  # each shot rendered as the leak would (context + text)
    # with a context every token of the text is scored in both: "aab" alone -1, -1, -3 -> -5/3; after the prefix
    # -2, -2, -3.5 -> -2.5; ReCaLL = 2.5 / (5/3) = 1.5. "bba": -7/3 alone, -9/3 primed: 9/7.
    (first,), (second,) = (detector.score(evidence, [example]) for example in INSTANCES)
    assert first["recall"] == pytest.approx(1.5)
    assert second["recall"] == pytest.approx(9 / 7)


def test_the_prefetched_requests_serve_every_score():
    model = ScriptedModel()
    evidence = Evidence(DATASET, "test", INSTANCES, INSTANCES, model=model, known_non_members=HELDOUT,
                        reader=WithContext())
    detector = ReCaLL(n_shots=2)
    model.prefetch(detector.logit_requests(evidence))
    assert model.calls == 1
    detector.score(evidence, INSTANCES)
    assert model.calls == 1  # nothing left to compute


def test_the_prefix_is_a_seeded_draw_of_known_non_members():
    heldout = [Example(i, f"P{i}") for i in range(20)]
    evidence = Evidence(DATASET, "test", INSTANCES, INSTANCES, known_non_members=heldout, seed=3)
    detector = ReCaLL(n_shots=12)
    shots = detector.shots(evidence)
    assert len({e.instance_id for e in shots}) == 12
    reversed_pool = Evidence(DATASET, "test", INSTANCES, INSTANCES, known_non_members=heldout[::-1], seed=3)
    assert detector.shots(reversed_pool) == shots
    assert detector.shots(Evidence(DATASET, "test", INSTANCES, INSTANCES, known_non_members=heldout, seed=4)) != shots
    few = Evidence(DATASET, "test", INSTANCES, INSTANCES, known_non_members=heldout[:5])
    assert sorted(e.instance_id for e in detector.shots(few)) == [0, 1, 2, 3, 4]  # all there are


def test_undefined_ratios_and_settings():
    assert math.isnan(recall_score([-1.0], [0.0, 0.0]))  # LL(x) = 0: undefined
    assert math.isnan(recall_score([-1.0], []))  # a one-token text alone has no scored token
    with pytest.raises(InputError, match="recall.n_shots=0: give a whole number >= 1"):
        build({"recall": {"_target_": "detect.detectors.recall.ReCaLL", "n_shots": 0}})


def test_skipped_without_known_non_members():
    evidence = Evidence(DATASET, "test", INSTANCES, INSTANCES, model=ScriptedModel())
    assert ReCaLL().skipped(evidence) == NO_KNOWN_NON_MEMBERS


def test_through_the_pipeline_on_the_tiny_model(compose_config):
    from detect.judges.threshold import ThresholdJudge
    from detect.models import load, tiny_random
    from detect.models.hf import HFModel
    from detect.pipeline import run_partition

    cfg = compose_config("detect", ["+dataset=synth_nli", "detect.semantic_model=null"])
    model = HFModel(*load(tiny_random()), prompt_format="raw", max_new_tokens=8, progress=False)
    instances = [Example(i, f"Ada Vell built raft {i} in Orm.", f"Ada built raft {i}.", "0 (entailment)")
                 for i in range(3)]
    heldout = [Example(100 + i, f"Bo Lund sold {i} nets.", f"Bo sold nets {i}.", "1 (not entailment)")
               for i in range(6)]
    detector = ReCaLL(n_shots=4)
    evidence = Evidence(cfg.dataset, "test", instances, instances, model=model, known_non_members=heldout, seed=1)
    rows, timing = run_partition(evidence, [detector], judge=ThresholdJudge(), detect_cfg=cfg.detect)
    guided = sorted((r for r in rows if r.get("instruction") == "guided"), key=lambda r: r["instance_id"])
    prefix = detector.prefix(evidence)
    assert prefix.count("Bo Lund") == 4
    for example, row in zip(instances, guided):
        text = example.full_text
        alone, = model.continuation_logprobs([("", text)])
        primed, = model.continuation_logprobs([(prefix, text)])
        assert len(primed["logp"]) == len(alone["logp"]) + 1  # the first token is scored only after the prefix
        expected = (sum(primed["logp"]) / len(primed["logp"])) / (sum(alone["logp"]) / len(alone["logp"]))
        assert row["recall"] == pytest.approx(expected, rel=1e-9)
        assert math.isfinite(row["recall"])
    assert "skipped" not in timing
    assert detector.summarize(guided, {}, {}, 0)["recall"]["recall"] == pytest.approx(
        sum(r["recall"] for r in guided) / 3)


def test_the_shared_prefix_gives_the_plain_pass_scores_on_the_tiny_model():
    """ReCaLL's prefix is run once a cell (its key/value cache reused for every instance): the scores are those of
    scoring every prefixed text whole, to 1e-4, at fewer tokens."""
    from omegaconf import OmegaConf

    from detect.models import load, tiny_random
    from detect.models.hf import HFModel

    weights, tokenizer = load(tiny_random())
    dataset = OmegaConf.create({"key": "synth_nli", "title": "SynthNLI", "task": "nli"})
    instances = [Example(i, f"Ada Vell built raft {i} in Orm.", f"Ada built raft {i}.", "0 (entailment)")
                 for i in range(5)]
    heldout = [Example(100 + i, f"Bo Lund sold {i} nets at the quay.", f"Bo sold nets {i}.", "1 (not entailment)")
               for i in range(12)]
    found = {}
    for share in (False, True):
        model = HFModel(weights, tokenizer, prompt_format="raw", share_prefix=share, progress=False)
        evidence = Evidence(dataset, "test", instances, instances, model=model, known_non_members=heldout, seed=1)
        model.prefetch(ReCaLL().logit_requests(evidence))
        found[share] = ([s["recall"] for s in ReCaLL().score(evidence, instances)], model.counters()["scored_tokens"])
    assert found[True][0] == pytest.approx(found[False][0], abs=1e-4)
    prefix_tokens = len(tokenizer(ReCaLL().prefix(evidence)).input_ids)
    assert found[False][1] - found[True][1] >= 4 * (prefix_tokens - 2)  # the prefix once, not five times
