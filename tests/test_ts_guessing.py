"""TS-Guessing (Deng et al. 2024), question-based: the masking rule, the prompt and the exact match by hand on a
fixed model, and one greedy run on the tiny model."""

import pytest
from omegaconf import OmegaConf

from detect.datasets import Example
from detect.detectors import build
from detect.detectors.base import Evidence, Rendering
from detect.detectors.ts_guessing import TSGuessing, exact_match, keyword, mask_rendering, normalise
from detect.errors import InputError
from detect.models.base import LanguageModel

TOY = OmegaConf.create({"key": "toy", "title": "Toy", "task": "classification",
                        "fields": {"text": "text", "label": "label"}})
NLI = OmegaConf.create({"key": "synth_nli", "title": "SynthNLI", "task": "nli",
                        "fields": {"first": "sentence1", "second": "sentence2", "label": "label"}})


def test_the_keyword_is_the_longest_non_stop_word_first_on_ties():
    assert keyword("Mara Quell repaired looms in Dunhollow.") == "Dunhollow"  # 9 letters beats repaired's 8
    assert keyword("alpha beta gamma") == "alpha"  # alpha and gamma both 5 letters: the first
    # "nevertheless" (12) and "everything" (10) are stop words; digits are not letters
    assert keyword("Nevertheless everything 123456789 went to Kettle.") == "Kettle"
    assert keyword("Mara's saw-mill") == "Mara"  # runs of letters: Mara, s, saw, mill
    assert keyword("the and of") == "the"  # only stop words: the longest run of letters
    assert keyword("42 1234") == "1234"  # no letters: the longest token
    # a pair: sentence 2 counts too
    assert keyword(Example(0, "A cat sat.", "The Fenwickshire mill.").full_text) == "Fenwickshire"


def test_the_mask_falls_in_the_instance_as_its_leak_rendered_it():
    example = Example(0, "The Dunhollow guild met.", label="1 (World)")
    # the title names the word too: the mask goes on its first occurrence inside the instance
    web = Rendering("", "Dunhollow Reports dataset, test split\ntext: The Dunhollow guild met.\nlabel: 1 (World)")
    assert mask_rendering(web, example) == (
        "Dunhollow Reports dataset, test split\ntext: The [MASK] guild met.\nlabel: 1 (World)", "Dunhollow")
    # the context is shown too (an instruction's prompt); the instance sits in it
    chat = Rendering("<user>The Dunhollow guild met.</user>", "1 (World)")
    assert mask_rendering(chat, example) == ("<user>The [MASK] guild met.</user>1 (World)", "Dunhollow")
    # a whole word only: "Dunhollows" is not "Dunhollow"; where the rendering lacks the word, the bare instance
    assert mask_rendering(Rendering("", "Dunhollows"), example) == ("The [MASK] guild met.", "Dunhollow")


def test_exact_match_by_hand():
    assert normalise('  "Dunhollow", I think.') == "dunhollow"
    assert exact_match(" Dunhollow.\nThe rest", "Dunhollow") == 1.0
    assert exact_match("dunhollow", "Dunhollow") == 1.0  # case ignored
    assert exact_match("Dunhollowshire", "Dunhollow") == 0.0
    assert exact_match("The Dunhollow", "Dunhollow") == 0.0  # the first word only
    assert exact_match("", "Dunhollow") == 0.0


class FixedModel(LanguageModel):
    """Answers each prompt from a table; records what it was asked."""
    name = "fixed"

    def __init__(self, answers: dict[str, str]) -> None:
        super().__init__()
        self.answers, self.asked = answers, []

    def _generate(self, prompts, stop, max_new_tokens):
        self.asked += [(p, max_new_tokens) for p in prompts]
        return [next((a for key, a in self.answers.items() if key in p), "no idea") for p in prompts], \
            [None] * len(prompts)


def test_scores_of_a_fixed_model_by_hand():
    instances = [Example(0, "Mara Quell repaired looms in Dunhollow.", "She repairs looms.", "0 (entailment)"),
                 Example(1, "Ines Drurud trained apprentices.", "Ines is a pilot.", "1 (not entailment)")]
    model = FixedModel({"Mara": "Dunhollow.", "Ines": "pilots"})
    evidence = Evidence(NLI, "test", instances, instances, model=model)
    detector = TSGuessing(max_new_tokens=5)
    # plain text: the pair's two sentences on two lines; Ines's keyword is "apprentices" (11 letters)
    assert model.asked == []
    assert detector.score(evidence, instances) == [{"ts_guessing": 1.0}, {"ts_guessing": 0.0}]
    assert model.asked[0] == ("Complete the sentence in one word:\n\nMara Quell repaired looms in [MASK].\n"
                              "She repairs looms.\nReply the answer only.", 5)
    assert "Ines Drurud trained [MASK].\nInes is a pilot." in model.asked[1][0]
    assert detector.summarize([{"ts_guessing": 1.0}, {"ts_guessing": 0.0}], {}, {}, seed=0) == {
        "ts_guessing": {"ts_guessing": 0.5}}  # the exact-match rate
    with pytest.raises(InputError, match="ts_guessing.max_new_tokens=0: give"):
        build({"ts_guessing": {"_target_": "detect.detectors.ts_guessing.TSGuessing", "max_new_tokens": 0}})


def test_one_greedy_run_on_the_tiny_model():
    from detect.models import load, tiny_random
    from detect.models.hf import HFModel

    model, tokenizer = load(tiny_random())
    instances = [Example(0, "Mara Quell repaired looms in Dunhollow.", label="1 (World)"),
                 Example(1, "Ines Drurud trained apprentices in Efkilmouth.", label="2 (Sports)")]
    detector = TSGuessing(max_new_tokens=4)
    scores = [detector.score(Evidence(TOY, "test", instances, instances,
                                      model=HFModel(model, tokenizer, progress=False)), instances) for _ in range(2)]
    assert scores[0] == scores[1]  # greedy: the same answers every time
    assert all(row["ts_guessing"] in (0.0, 1.0) for row in scores[0])
