"""The detector registry and the detector added through it (DC-PDD), against hand-computed values."""

import json
import math
from collections import Counter

import pytest
from omegaconf import OmegaConf

from detect.detectors import build, describe, read_back, registry
from detect.detectors.dc_pdd import DCPDD, dc_pdd_score, token_frequencies
from detect.errors import InputError
from detect.pipeline import verdicts


def test_every_detector_module_is_registered_by_its_summary_name():
    assert set(registry()) == {"alg1", "alg2", "alg2_leak", "membership", "membership_raw", "dc_pdd", "cheat",
                               "sharded_likelihood", "permutation", "recall", "performance", "dcq", "ts_guessing",
                               "cdd"}
    assert {cls.level for cls in registry().values()} == {"instance", "partition"}


def test_the_default_config_builds_every_registered_detector_in_order():
    cfg = OmegaConf.load("conf/detect/default.yaml")
    assert [d.name for d in build(cfg.detectors)] == ["alg1", "alg2", "alg2_leak", "membership", "membership_raw",
                                                      "dc_pdd", "cheat", "sharded_likelihood", "permutation", "recall",
                                                      "performance", "dcq", "ts_guessing"]  # cdd: off
    cfg.detectors.cheat.enabled = False
    cfg.detectors.dc_pdd = None
    cfg.detectors.cdd.enabled = True
    assert [d.name for d in build(cfg.detectors)] == ["alg1", "alg2", "alg2_leak", "membership", "membership_raw",
                                                      "sharded_likelihood", "permutation", "recall", "performance",
                                                      "dcq", "ts_guessing", "cdd"]


def test_a_misnamed_or_untargeted_entry_is_one_line():
    with pytest.raises(InputError, match="no _target_"):
        build({"cheat": {"enabled": True}})
    with pytest.raises(InputError, match="not the detector named loss"):
        build({"loss": {"_target_": "detect.detectors.cheat.ChatGPTCheat"}})


def test_a_detector_needing_what_no_detector_is_given_is_one_line_when_defined():
    """The known non-members were "heldout" before issue 70: a detector still declaring it would never be checked for
    them, so defining it fails in one line naming the new need; every registered detector's needs are known."""
    from detect.detectors.base import NEEDS, Detector

    assert all(set(cls.needs) <= set(NEEDS) for cls in registry().values())
    with pytest.raises(TypeError, match="needs heldout, which no detector is given; .* known_non_members, was heldout"):
        type("Old", (Detector,), {"name": "old", "level": "instance", "needs": ("logits", "heldout")})


def test_verdicts_and_needs_are_read_back_from_a_summary_without_naming_a_detector():
    cell = {"n_instances": 10, "alg1": {"rouge_l": {"guided_mean": 0.8, "general_mean": 0.3, "p_value": 0.01,
                                                    "significant": True}},
            "alg2": {"exact": 2, "near_exact": 1, "contaminated": True}, "membership": {"loss": -1.0},
            "cheat": {"strict": False, "lenient": True, "best_score": 0.5}}
    assert verdicts(cell) == {"alg1_rouge_l": True, "alg2": True, "cheat_strict": False, "cheat_lenient": True}
    statistics = {name: value for cls, block in read_back(cell) for name, value in cls.statistics(block, 10).items()}
    assert statistics == {"alg1_rouge_l": pytest.approx(0.99), "alg2": 2 * 11 + 1, "cheat": 0.5}
    assert describe("rouge_l_gain") == "generations" and describe("min_k_plus") == "logits (full distribution)"
    assert describe("dc_pdd") == "logits + token frequencies" and describe("nothing") == "-"


def test_dc_pdd_by_hand():
    # Counted corpus: token 5 three times, token 7 once; vocabulary of 10. Laplace: (count + 1) / (4 + 10).
    frequencies, unseen = token_frequencies(Counter({5: 3, 7: 1}), 10)
    assert frequencies == {5: 4 / 14, 7: 2 / 14} and unseen == 1 / 14
    # Text tokens 5, 7, 5, 9 with probabilities 0.5, 0.25, 0.9, 0.1; the second 5 is not its first occurrence.
    ids, logp = [5, 7, 5, 9], [math.log(p) for p in (0.5, 0.25, 0.9, 0.1)]
    # alpha: 0.5 ln(14/4) = 0.62638, 0.25 ln(7) = 0.48648, 0.1 ln(14) = 0.26391
    assert dc_pdd_score(ids, logp, frequencies, unseen, a=10.0) == pytest.approx((0.62638 + 0.48648 + 0.26391) / 3,
                                                                                 abs=1e-5)
    # capped at a = 0.5: 0.5, 0.48648, 0.26391
    assert dc_pdd_score(ids, logp, frequencies, unseen, a=0.5) == pytest.approx(0.41680, abs=1e-5)
    assert dc_pdd_score(ids, logp, frequencies, unseen, a=0.01) == pytest.approx(0.01)  # the paper's cap


def test_dc_pdd_reads_the_offline_corpus_and_refuses_a_missing_one(tmp_path):
    class Tokenizer:  # one id per distinct word, as a tokenizer would give
        name_or_path, vocabulary = "words", {}

        def __len__(self):
            return 50_000

        def get_vocab(self):  # what DC-PDD keys its counts by
            return dict(self.vocabulary)

        def __call__(self, texts):
            ids = [[self.vocabulary.setdefault(w, len(self.vocabulary)) for w in t.split()] for t in texts]
            return type("Encoded", (), {"input_ids": ids})

    frequencies, unseen = DCPDD().frequencies(Tokenizer())
    assert len(frequencies) > 5_000 and unseen < 1e-5  # the standard library's docstrings
    (tmp_path / "corpus.txt").write_text("the the cat")
    frequencies, _ = DCPDD(corpus=str(tmp_path / "corpus.txt")).frequencies(Tokenizer())
    assert sorted(frequencies.values()) == [2 / 50_003, 3 / 50_003]
    with pytest.raises(InputError, match="corpus=pydoc"):
        DCPDD(corpus=str(tmp_path / "missing")).frequencies(Tokenizer())
    with pytest.raises(InputError, match="detect.detectors.dc_pdd.a=0: give a number > 0"):
        build({"dc_pdd": {"_target_": "detect.detectors.dc_pdd.DCPDD", "a": 0}})


def test_dc_pdd_default_corpus_shares_no_paragraph_with_the_offline_background():
    from detect.datasets.corpus import pydoc_texts, read_corpus

    corpus = read_corpus("stdlib_docstrings")
    assert len(corpus) > 1_000 and sum(map(len, corpus)) > 1_000_000
    background = {p.strip() for text in pydoc_texts() for p in text.split("\n\n") if p.strip()}
    assert not background & {p.strip() for text in corpus for p in text.split("\n\n")}


def test_a_study_refuses_a_dc_pdd_corpus_that_is_its_background(tmp_path):
    from contaminate.regime.background import LocalBackground, OfflineBackground
    from contaminate.stages import check_reference_corpus

    with pytest.raises(InputError, match="^detect.detectors.dc_pdd.corpus=pydoc is the study's background "
                                         "\\(offline\\): .* use corpus=stdlib_docstrings"):
        check_reference_corpus([DCPDD(corpus="pydoc")], OfflineBackground())
    (tmp_path / "bg.txt").write_text("some text")
    with pytest.raises(InputError, match="is the study's background \\(local\\)"):
        check_reference_corpus([DCPDD(corpus=str(tmp_path / "bg.txt"))], LocalBackground(str(tmp_path / "bg.txt")))
    check_reference_corpus([DCPDD()], OfflineBackground())  # the default: disjoint
    check_reference_corpus([DCPDD(corpus="pydoc")], LocalBackground(str(tmp_path / "bg.txt")))


def test_time_travel_can_be_switched_off_like_any_detector():
    cfg = OmegaConf.load("conf/detect/default.yaml")
    cfg.detectors.alg2.enabled = False
    cfg.detectors.alg2_leak.enabled = False
    cfg.detectors.alg1 = None
    detectors = build(cfg.detectors)
    assert [d.name for d in detectors][:1] == ["membership"]
    from detect.pipeline import summarize

    rows = [{"instruction": "guided", "instance_id": 0, "judge": "exact", "rouge_l": 1.0, "semantic": None}]
    assert "alg2" not in summarize(rows, detectors) and verdicts(summarize(rows, detectors)) == {}


class RecordingModel:
    """Generates a fixed answer and records every prompt it was asked (the pipeline's LanguageModel surface)."""
    stop_reasons = None

    def __init__(self):
        self.prompts = []

    def generate(self, prompts, stop=None):
        self.prompts += prompts
        return ["an answer"] * len(prompts)


def test_time_travel_completions_are_generated_only_where_a_running_detector_reads_them():
    """Algorithm 1 reads the guided and general completions, Algorithm 2 the guided ones, its leak reading the leak
    ones, no other detector any: the pipeline generates what the running detectors read, and every instance keeps its
    guided row (its scores)."""
    from detect.datasets import Example
    from detect.pipeline import completions_read, detect_partition

    cfg = OmegaConf.load("conf/detect/default.yaml")
    every = build(cfg.detectors)
    by_name = {d.name: d for d in every}
    logits_only = [d for d in every if d.name not in ("alg1", "alg2", "alg2_leak")]
    assert completions_read(every) == ("guided", "general", "leak")
    assert completions_read([by_name["alg2_leak"]]) == ("leak",)
    assert completions_read([by_name["alg2"], *logits_only]) == ("guided",)
    assert completions_read(logits_only) == ()
    assert completions_read(every, ("guided",)) == ("guided",)  # a study's known non-members: guided at most
    dataset = OmegaConf.create({"key": "synth_nli", "title": "SynthNLI", "task": "nli"})
    examples = [Example(i, f"Ada Vell built raft {i} in the town of Orm by the sea.", f"Ada built raft {i}.",
                        "0 (entailment)") for i in range(3)]
    judged = []
    for read, generated in [(("guided", "general"), 6), (("guided",), 3), ((), 0)]:
        model = RecordingModel()
        rows = detect_partition(examples, dataset=dataset, split="test", model=model, instructions=read,
                                judge=lambda guided: judged.append(len(guided)) or ["none"] * len(guided),
                                membership=lambda batch: [{"loss": -1.0}] * len(batch))
        assert len(model.prompts) == generated
        assert [r["instruction"] for r in rows].count("guided") == 3 and all(r["loss"] == -1.0 for r in rows
                                                                               if r["instruction"] == "guided")
        assert [r["instruction"] for r in rows].count("general") == (3 if "general" in read else 0)
        if not read:
            assert all(r["completion"] is None and r["rouge_l"] is None and r["judge"] is None for r in rows)
    assert judged == [3, 3]  # the judge sees generated guided completions only


def test_dc_pdd_cells_change_with_the_corpus_content(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat")
    before = DCPDD(corpus=str(corpus)).data_key()
    corpus.write_text("the dog")
    assert DCPDD(corpus=str(corpus)).data_key() != before and DCPDD().data_key() != before


def test_the_config_states_each_detector_default_its_class_has(compose_config):
    """conf/detect/default.yaml lists every detector's settings so that a command line can override them; each
    value is the class's own default, so the two cannot drift apart (Cheat?'s prompt and thresholds once lived in
    three files)."""
    import inspect

    from omegaconf import OmegaConf

    from detect.validate import resolve_target

    detectors = OmegaConf.to_container(compose_config("detect", ["+dataset=synth_nli"]).detect.detectors)
    for key, settings in detectors.items():
        parameters = inspect.signature(resolve_target(settings["_target_"], key)).parameters
        for name, value in settings.items():
            if name not in ("_target_", "enabled"):
                assert value == parameters[name].default, (key, name)


def test_derived_data_is_computed_once_per_key_and_read_back_the_same(tmp_path, monkeypatch):
    """detect.cache.stored: the stdlib's docstrings and DC-PDD's corpus counts are kept between processes."""
    from detect.cache import digest, stored
    from detect.detectors.dc_pdd import DCPDD

    monkeypatch.setenv("CONTAMINATION_LAB_CACHE", str(tmp_path / "lab"))
    calls = []

    def compute():
        calls.append(1)
        return {"counts": [[3, 2], [7, 1]]}

    assert stored("kind", {"k": 1}, compute) == stored("kind", {"k": 1}, compute) == {"counts": [[3, 2], [7, 1]]}
    assert len(calls) == 1
    stored("kind", {"k": 2}, compute)
    assert len(calls) == 2
    path = tmp_path / "lab" / "kind" / f"{digest({'k': 1})}.json"
    path.write_text("{not json")  # damaged: computed and written again
    assert stored("kind", {"k": 1}, compute) == {"counts": [[3, 2], [7, 1]]} and len(calls) == 3
    assert json.loads(path.read_text()) == {"counts": [[3, 2], [7, 1]]}

    class Tokenizer:
        def __init__(self):
            self.vocabulary = {"the": 0, "cat": 1, "sat": 2}

        def __len__(self):
            return 3

        def get_vocab(self):
            return dict(self.vocabulary)

        def __call__(self, texts):
            return type("Encoded", (), {"input_ids": [[self.vocabulary[w] for w in t.split()] for t in texts]})

    (tmp_path / "corpus.txt").write_text("the cat sat the the")
    computed = DCPDD(corpus=str(tmp_path / "corpus.txt")).frequencies(Tokenizer())
    assert len(list((tmp_path / "lab" / "token_counts").iterdir())) == 1
    read_back = DCPDD(corpus=str(tmp_path / "corpus.txt")).frequencies(Tokenizer())  # a new detector: from disk
    assert computed == read_back == ({0: 4 / 8, 1: 2 / 8, 2: 2 / 8}, 1 / 8)
