import pytest
from omegaconf import OmegaConf

from contaminate.regime.layouts import LeakReader, build_format
from detect.cli import CONF_DIR
from detect.datasets import load_split
from detect.detectors import build
from detect.detectors.base import Evidence
from detect.detectors.dcq import NONE_OPTION, DataContaminationQuiz
from detect.errors import InputError
from detect.models.base import LanguageModel

SYNTH_NLI = OmegaConf.load(CONF_DIR / "dataset" / "synth_nli.yaml")
RTE = OmegaConf.load(CONF_DIR / "dataset" / "rte.yaml")
METADATA = OmegaConf.load(CONF_DIR / "format" / "metadata.yaml")


class LetterModel(LanguageModel):
    """A fake model whose log-probability of an answer letter is chosen by hand: ``verbatim`` for the letter of the
    option that is a known verbatim text, ``none`` for the "None of the provided options" letter, ``by_letter`` (or
    ``other``) for the rest. Each text is two scored tokens: the prompt (offset 0) and the letter (its offset), so
    ``continuation_logprobs`` keeps the letter's alone."""
    name = "letters"

    def __init__(self, verbatims=(), *, verbatim=-0.25, none=-1.0, other=-3.0, by_letter=None):
        super().__init__()
        self.verbatims, self.verbatim, self.none, self.other = set(verbatims), verbatim, none, other
        self.by_letter = by_letter or {}

    def _token_logprobs(self, texts, moments):
        found = []
        for text in texts:
            prompt, letter = text[:-2], text[-1]
            option = prompt.split(f"\n{letter})\n", 1)[1].split("\n\n")[0]
            if option.startswith(NONE_OPTION):
                value = self.none
            elif option in self.verbatims:
                value = self.verbatim
            else:
                value = self.by_letter.get(letter, self.other)
            found.append({"logp": [-9.0, value], "ids": [1, 2], "offsets": [0, len(prompt)]})
        return found


def evidence_for(examples, model, *, reader=None, seed=0, dataset=SYNTH_NLI):
    extra = {} if reader is None else {"reader": reader}
    return Evidence(dataset=dataset, split="test", instances=examples, pool=examples, model=model, seed=seed, **extra)


def test_a_model_that_knows_the_verbatim_picks_it_and_one_that_answers_none_does_not():
    examples = load_split(SYNTH_NLI, "test")[:6]
    verbatims = [e.full_text for e in examples]  # the plain reading: an instance's whole text
    quiz = DataContaminationQuiz()
    knows = quiz.score(evidence_for(examples, LetterModel(verbatims)), examples)
    # verbatim -0.25, then None at -1.0: picked, margin -0.25 - (-1.0) = 0.75
    assert knows == [{"dcq": 1.0, "dcq_margin": 0.75}] * 6
    refuses = DataContaminationQuiz().score(evidence_for(examples, LetterModel(verbatims, verbatim=-1.5, none=-0.5)),
                                            examples)
    assert refuses == [{"dcq": 0.0, "dcq_margin": -1.0}] * 6  # None at -0.5 beats the verbatim at -1.5


def test_the_verbatim_sits_at_a_seeded_position_and_a_letter_biased_model_scores_chance():
    examples = load_split(SYNTH_NLI, "test")[:40]
    quiz = DataContaminationQuiz()
    evidence = evidence_for(examples, LetterModel())
    quizzes = quiz.quizzes(evidence, examples)
    positions = [answer for _, answer, _ in quizzes]
    assert set(positions) == {0, 1, 2, 3} and all(count == 5 for _, _, count in quizzes)
    assert positions == [a for _, a, _ in DataContaminationQuiz().quizzes(evidence, examples)]  # deterministic
    assert positions != [a for _, a, _ in DataContaminationQuiz().quizzes(evidence_for(examples, None, seed=1),
                                                                           examples)]
    # a model that always answers A, whatever it saw: right exactly where the verbatim was put at A
    always_a = LetterModel(by_letter={"A": -0.1}, none=-5.0)
    scores = DataContaminationQuiz().score(evidence_for(examples, always_a), examples)
    assert [row["dcq"] for row in scores] == [float(p == 0) for p in positions]


def test_the_options_are_the_leak_renderings_of_the_verbatim_and_its_paraphrases():
    examples = load_split(SYNTH_NLI, "test")[:1]
    reader = LeakReader(build_format(METADATA), SYNTH_NLI)
    evidence = evidence_for(examples, None, reader=reader)
    prompt, answer, count = DataContaminationQuiz().quizzes(evidence, examples)[0]
    verbatim = reader.rendering(examples[0], "test").text
    assert verbatim.startswith("SynthNLI dataset, test split\nsentence1: ")
    block = prompt.split("---\n")[1]
    options = [part.split(")\n", 1)[1] for part in block.rstrip("\n").split("\n\n")]
    assert len(options) == count == 5 and options[answer] == verbatim and options[-1] == NONE_OPTION
    assert all(o.startswith("SynthNLI dataset, test split\nsentence1: ") and o.endswith(examples[0].label)
               for o in options[:-1])
    assert len(set(options)) == 5
    assert 'choose option "E) None of the provided options."' in prompt and prompt.endswith("Answer:")
    # no None option: four letters
    _, _, four = DataContaminationQuiz(none_option=False).quizzes(evidence, examples)[0]
    assert four == 4


def test_skipped_without_paraphrases_or_logits_and_built_from_config():
    pair = load_split(SYNTH_NLI, "test")[:1]
    quiz = DataContaminationQuiz()
    assert quiz.skipped(evidence_for(pair, LetterModel())) is None
    reason = quiz.skipped(evidence_for(pair, LetterModel(), dataset=RTE))
    assert reason == ("dataset rte is not one of the lab's synthetic partitions (synth_nli, synth_news, synth_xsum), "
                      "so its paraphrases need a rewriter model: set detect.detectors.dcq.rewriter=<hub id or model "
                      "folder>")
    assert DataContaminationQuiz(rewriter="some/model").skipped(evidence_for(pair, LetterModel(), dataset=RTE)) is None
    blind = LetterModel()
    blind.no_logprobs = "the server gives no log-probabilities"
    assert quiz.skipped(evidence_for(pair, blind)) == "the server gives no log-probabilities"
    [built] = build({"dcq": {"_target_": "detect.detectors.dcq.DataContaminationQuiz", "enabled": True,
                             "n_paraphrases": 2, "none_option": True, "rewriter": None}})
    assert isinstance(built, DataContaminationQuiz) and built.n_paraphrases == 2
    with pytest.raises(InputError, match=r"n_paraphrases=5: give a whole number in \[1, 4\]"):
        build({"dcq": {"_target_": "detect.detectors.dcq.DataContaminationQuiz", "n_paraphrases": 5}})


def test_one_pass_over_the_prompt_gives_each_letter_as_the_general_path():
    """``HFModel.choice_logprobs`` reads single-token letters from the next-token distribution after the prompt: the
    numbers ``continuation_logprobs`` gives, one pass instead of one per letter."""
    from detect.models import load, tiny_random
    from detect.models.base import LanguageModel
    from detect.models.hf import HFModel

    model = HFModel(*load(tiny_random()), progress=False)
    examples = load_split(SYNTH_NLI, "test")[:2]
    quizzes = DataContaminationQuiz().quizzes(evidence_for(examples, model), examples)
    requests = [(prompt, [f" {letter}" for letter in "ABCDE"[:count]]) for prompt, _, count in quizzes]
    fast = model.choice_logprobs(requests)
    general = LanguageModel.choice_logprobs(model, requests)
    assert [len(row) for row in fast] == [5, 5]
    assert fast == [pytest.approx(row, abs=1e-4) for row in general]


def test_the_quiz_runs_on_the_tiny_random_model():
    from detect.models import load, tiny_random
    from detect.models.hf import HFModel

    model = HFModel(*load(tiny_random()), progress=False)
    examples = load_split(SYNTH_NLI, "test")[:4]
    rows = DataContaminationQuiz().score(evidence_for(examples, model), examples)
    assert len(rows) == 4
    for row in rows:
        assert row["dcq"] in (0.0, 1.0) and row["dcq"] == float(row["dcq_margin"] > 0)
