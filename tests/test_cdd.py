"""CDD (Dong et al. 2024) against hand computations on fixed outputs, its prompt, its skip line, the server's
sampling request, and seeded sampling on the tiny model."""

from types import SimpleNamespace

import pytest
from omegaconf import OmegaConf

from detect.datasets import Example
from detect.detectors import build
from detect.detectors.base import Evidence, Rendering
from detect.detectors.cdd import CDD, cdd_prompt, edit_distance, peakedness
from detect.errors import InputError
from detect.generation.openai import OpenAIGenerator
from detect.models.base import LanguageModel

NLI = OmegaConf.create({"key": "synth_nli", "title": "SynthNLI", "task": "nli",
                        "fields": {"first": "sentence1", "second": "sentence2", "label": "label"}})
PAIR = Example(0, "Mara Quell repaired looms.", "She works with looms.", "0 (entailment)")


class FixedModel(LanguageModel):
    """Greedy output 'a b c d e f g h i j' for every prompt and four fixed samples; no tokenizer, so CDD compares
    words. Records the prompts and the sampling settings it was asked for."""
    name = "fixed"
    no_sampling = None
    GREEDY = "a b c d e f g h i j"
    SAMPLES = ["a b c d e f g h i j",        # distance 0
               "a b c d e f g h i X",        # 1 substitution
               "a b c d e X Y Z i j",        # 3 substitutions
               "a b c d e f g h i j k l"]    # 2 insertions: 12 words, the longest output

    def __init__(self) -> None:
        super().__init__()
        self.asked: list = []

    def _generate(self, prompts, stop, max_new_tokens):
        self.asked += [("greedy", p, max_new_tokens) for p in prompts]
        return [self.GREEDY] * len(prompts), [None] * len(prompts)

    def _sample(self, prompts, n, temperature, max_new_tokens, seed):
        self.asked += [("sample", p, n, temperature, max_new_tokens, seed) for p in prompts]
        return [self.SAMPLES[:n] for _ in prompts]


def test_edit_distance_by_hand():
    assert edit_distance(list("kitten"), list("sitting")) == 3  # k->s, e->i, + g
    assert edit_distance(["a", "b", "c"], ["a", "x", "c", "d"]) == 2  # b->x, + d
    assert edit_distance(["a", "x", "c", "d"], ["a", "b", "c"]) == 2  # symmetric
    assert edit_distance([], [1, 2]) == 2 and edit_distance([7], [7]) == 0
    assert edit_distance([101, 102, 103], [102, 103, 101]) == 2  # token ids: drop the first, append it


def test_peakedness_by_hand():
    greedy = FixedModel.GREEDY.split()
    samples = [s.split() for s in FixedModel.SAMPLES]  # distances 0, 1, 3, 2; l = 12 (the last sample)
    assert peakedness(greedy, samples, alpha=0.1) == 0.5      # d <= 1.2: the first two
    assert peakedness(greedy, samples, alpha=0.2) == 0.75     # d <= 2.4: and the 12-word one
    assert peakedness(greedy, samples, alpha=0.25) == 1.0     # d <= 3 (inclusive, as the paper's sum over d)
    assert peakedness(greedy, samples, alpha=0.0) == 0.25     # exact copies only
    assert peakedness(greedy, [], alpha=0.05) == 0.0


def test_the_prompt_is_the_rendering_cut_after_the_first_piece():
    web = Rendering("", "SynthNLI dataset, test split\nsentence1: Mara Quell repaired looms.\nsentence2: She works.")
    assert cdd_prompt(web, "Mara Quell repaired looms.") == \
        "SynthNLI dataset, test split\nsentence1: Mara Quell repaired looms."
    # the first piece is not in the text (an instruction's answer): the first half of its words, after the context
    assert cdd_prompt(Rendering("PROMPT ", "one two three four five"), "absent") == "PROMPT one two"
    assert cdd_prompt(Rendering("", "single"), "absent") == "single"


def test_scores_of_a_fixed_model_by_hand():
    model = FixedModel()
    evidence = Evidence(NLI, "test", [PAIR], [PAIR], model=model, seed=5)
    detector = CDD(n_samples=4, temperature=0.8, alpha=0.1, max_new_tokens=7)
    assert detector.skipped(evidence) is None
    assert detector.score(evidence, [PAIR]) == [{"cdd": 0.5}]
    # plain text: the pair is "sentence 1\nsentence 2", cut after sentence 1 (Time Travel's first piece)
    assert model.asked == [("greedy", PAIR.text, 7), ("sample", PAIR.text, 4, 0.8, 7, 5)]
    rows = [{"cdd": 0.5}, {"cdd": 0.0}, {"cdd": 0.25}]
    block = detector.summarize(rows, {}, {}, seed=0)["cdd"]
    assert block["cdd"] == pytest.approx(0.25)
    assert block["flagged_share"] == pytest.approx(2 / 3)  # Peak > xi = 0.01: two of three


def test_the_official_truncation_to_the_first_tokens():
    # max_tokens 3: every output is its first three words, so all four samples equal the greedy output
    evidence = Evidence(NLI, "test", [PAIR], [PAIR], model=FixedModel())
    assert CDD(n_samples=4, alpha=0.0, max_tokens=3).score(evidence, [PAIR]) == [{"cdd": 1.0}]
    assert CDD(n_samples=4, alpha=0.0, max_tokens=None).score(evidence, [PAIR]) == [{"cdd": 0.25}]


def test_skipped_where_the_model_cannot_sample_and_settings_checked():
    class GreedyOnly(LanguageModel):
        name = "greedy only"

    reason = CDD().skipped(SimpleNamespace(model=GreedyOnly()))
    assert reason == LanguageModel.no_sampling and "does not sample" in reason
    with pytest.raises(RuntimeError, match="does not sample"):
        GreedyOnly().sample(["x"], 2)
    with pytest.raises(InputError, match="cdd.n_samples=0: give"):
        build({"cdd": {"_target_": "detect.detectors.cdd.CDD", "n_samples": 0}})
    with pytest.raises(InputError, match="cdd.alpha=1.5: give"):
        build({"cdd": {"_target_": "detect.detectors.cdd.CDD", "alpha": 1.5}})


class FakeClient:
    """An OpenAI-compatible client whose server answers at most 2 choices a request, whatever ``n`` asks."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.completions = SimpleNamespace(create=self.create)

    def create(self, **request):
        self.requests.append(request)
        k = len(self.requests)
        return SimpleNamespace(choices=[SimpleNamespace(text=f"r{k}c{i}") for i in range(min(2, request["n"]))])


def test_the_server_samples_with_n_and_asks_again_for_the_rest(tmp_path):
    client = FakeClient()
    generator = OpenAIGenerator(model="m", prompt_format="raw", client=client, cache_path=tmp_path / "c.jsonl")
    assert generator.sample(["p"], 5, temperature=0.8, max_new_tokens=9, seed=3) == [
        ["r1c0", "r1c1", "r2c0", "r2c1", "r3c0"]]
    assert [(r["n"], r["seed"], r["temperature"], r["max_tokens"]) for r in client.requests] == [
        (5, 3, 0.8, 9), (3, 4, 0.8, 9), (1, 5, 0.8, 9)]
    # cached: a new generator on the same file asks nothing
    again = OpenAIGenerator(model="m", prompt_format="raw", client=FakeClient(), cache_path=tmp_path / "c.jsonl")
    assert again.sample(["p"], 5, temperature=0.8, max_new_tokens=9, seed=3)[0][4] == "r3c0"
    assert again.client.requests == []


@pytest.fixture(scope="module")
def tiny():
    from detect.models import load, tiny_random

    return load(tiny_random())


def test_sampling_on_the_tiny_model_is_seeded(tiny):
    from detect.models.hf import HFModel

    def fresh():
        return HFModel(*tiny, progress=False, prompt_format="raw")

    instances = [PAIR, Example(1, "Ines Drurud, a pilot from Efkilmouth, trained 40 apprentices.", "She flew.",
                               "0 (entailment)")]
    evidence = Evidence(NLI, "test", instances, instances, model=fresh(), seed=0)
    detector = CDD(n_samples=4, max_new_tokens=6)
    scores = detector.score(evidence, instances)
    assert all(0.0 <= row["cdd"] <= 1.0 for row in scores)
    prompts = detector.prompts(evidence, instances)
    first = evidence.model.sample(prompts, 4, temperature=0.8, max_new_tokens=6, seed=0)
    assert len(first) == 2 and all(len(samples) == 4 for samples in first)
    # the same seed gives the same samples on a fresh model, each prompt alone or with others
    assert fresh().sample(prompts[1:], 4, temperature=0.8, max_new_tokens=6, seed=0) == first[1:]
    assert detector.score(Evidence(NLI, "test", instances, instances, model=fresh()), instances) == scores
    # another seed, other samples (a random model's samples at 0.8 differ)
    assert fresh().sample(prompts, 4, temperature=0.8, max_new_tokens=6, seed=1) != first
    assert len(set(first[0])) > 1  # sampled, not greedy
