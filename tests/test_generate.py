import pytest

from detect.detectors.time_travel.prompts import build_prompt
from detect.errors import InputError
from detect.generation.local import LocalGenerator, prefix_groups, resolve_prompt_format
from detect.models import load, tiny_random


@pytest.fixture(scope="module")
def tiny():
    return load(tiny_random())


def _prompts():
    firsts = ["A short one.", "A much longer first piece, with several clauses, names like Velkora and numbers "
              "like 4512, so that it pads the others.", "Medium length first piece here.", "x"]
    return [build_prompt(instruction, "classification", first_piece=first, label="1 (Sports)",
                         dataset_name="AG News", split_name="test")
            for instruction in ("guided", "general") for first in firsts]


@pytest.mark.parametrize("prompt_format", ["chat", "raw"])
def test_batched_shared_prefix_generation_equals_one_at_a_time(tiny, prompt_format):
    model, tokenizer = tiny
    prompts = _prompts()
    one_by_one = LocalGenerator(model, tokenizer, prompt_format=prompt_format, batch_size=1, max_new_tokens=12,
                                share_prefix=False, progress=False)(prompts)
    for batch_size in (3, 32):
        batched = LocalGenerator(model, tokenizer, prompt_format=prompt_format, batch_size=batch_size,
                                 max_new_tokens=12, share_prefix=True, progress=False)
        assert batched(prompts) == one_by_one
        assert batched.generated_tokens > 0
    assert len(set(one_by_one)) > 1  # the prompts really lead to different completions


def test_prefix_groups():
    rows = [[1, 2, 3, 4, 5], [1, 2, 3, 9, 9], [1, 2, 7], [8, 8, 8, 8]]
    assert prefix_groups(rows, min_shared=2) == [([0, 1, 2], 2), ([3], 3)]
    assert prefix_groups(rows, min_shared=3) == [([0, 1], 3), ([2], 2), ([3], 3)]


def test_prompt_format_resolution(tiny):
    _, tokenizer = tiny
    assert resolve_prompt_format("auto", tokenizer) == "chat"
    assert resolve_prompt_format("raw", tokenizer) == "raw"
    with pytest.raises(InputError, match="unknown prompt_format 'html'"):
        resolve_prompt_format("html", tokenizer)


def test_a_call_may_ask_the_other_prompt_format_and_chat_puts_the_template_in_the_prompt(tiny, monkeypatch):
    """A model opened raw answers a call asked as chat through its chat template (the template's tokens in the prompt
    it reads), and the same as a generator opened chat; each format is memoised apart."""
    from detect.models.hf import HFModel

    model, tokenizer = tiny
    opened_raw = HFModel(model, tokenizer, prompt_format="raw", max_new_tokens=8, progress=False)
    assert opened_raw.prompt_formats == ("raw", "chat")
    prompts = _prompts()[:3]
    seen = []
    batch = LocalGenerator._generate_batch

    def record(self, token_lists, *args, **kwargs):
        seen.extend(tokenizer.decode(tokens) for tokens in token_lists)
        return batch(self, token_lists, *args, **kwargs)

    monkeypatch.setattr(LocalGenerator, "_generate_batch", record)
    as_chat = opened_raw.generate(prompts, prompt_format="chat")
    assert all("<|im_start|>user" in text and text.rstrip().endswith("<|im_start|>assistant") for text in seen)
    seen.clear()
    as_raw = opened_raw.generate(prompts)
    assert seen and not any("<|im_start|>" in text for text in seen)
    chat = LocalGenerator(model, tokenizer, prompt_format="chat", max_new_tokens=8, progress=False)
    assert as_chat == chat(prompts) and as_chat != as_raw
    assert opened_raw.generate(prompts, prompt_format="chat") == as_chat  # memoised under its format
    with pytest.raises(RuntimeError, match="asked in prompt format bogus; it takes raw, chat"):
        opened_raw.generate(prompts, prompt_format="bogus")


def test_the_greedy_loop_drops_finished_rows_and_decodes_as_transformers_generate(tiny, monkeypatch):
    """Rows that end at different steps (an end token, a length cap, the token limit) in one batch with a shared
    prefix: each row's tokens and stop reason are what transformers' generate() gives the prompt alone, and the batch
    really shrinks (a row ended is no longer computed)."""
    import copy

    import torch
    from transformers import StoppingCriteriaList

    from detect.detectors.time_travel.stopping import AnswerShape
    from detect.generation import local

    model, tokenizer = tiny
    prompts = _prompts()
    # end tokens the random model writes at different steps of different prompts (found by a plain run first)
    plain = LocalGenerator(model, tokenizer, prompt_format="raw", max_new_tokens=20, progress=False)
    written = [tokenizer(text, add_special_tokens=False).input_ids for text in plain(prompts)]
    end = {written[0][13], written[3][2], written[4][15]}
    config = copy.deepcopy(model.generation_config)
    config.eos_token_id = [tokenizer.eos_token_id, *sorted(end)]
    monkeypatch.setattr(model, "generation_config", config)
    shapes = [AnswerShape("x" * n, max_chars=n, lines=False) for n in (5, 400, 40, 400, 400, 12, 400, 400)]

    widths = []
    hook = model.register_forward_pre_hook(lambda module, args, kwargs: widths.append(kwargs["input_ids"].shape[0]),
                                           with_kwargs=True)
    generator = LocalGenerator(model, tokenizer, prompt_format="raw", batch_size=32, max_new_tokens=20,
                               progress=False)
    try:
        completions = generator(prompts, shapes)
    finally:
        hook.remove()
    assert widths[0] == len(prompts) and widths[-1] < widths[0]  # the batch shrank as rows ended
    assert sorted(set(generator.stop_reasons)) == ["eos", "length", "max_new_tokens"]

    for prompt, shape, completion, reason in zip(prompts, shapes, completions, generator.stop_reasons):
        ids = torch.tensor([tokenizer(prompt).input_ids])
        stops = local.AnswerStops(tokenizer, [shape], ids.shape[1])
        with torch.inference_mode():
            out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                 max_new_tokens=20, pad_token_id=tokenizer.pad_token_id,
                                 stopping_criteria=StoppingCriteriaList([stops]))[0, ids.shape[1]:].tolist()
        ended = next((i for i, token in enumerate(out) if token in end | {tokenizer.eos_token_id}), None)
        alone = out[:ended]
        assert completion == shape.cut(tokenizer.decode(alone, skip_special_tokens=True))
        assert reason == (stops.reasons[0] or ("eos" if ended is not None else "max_new_tokens"))


def test_a_generation_config_that_changes_greedy_choices_goes_through_generate(tiny, monkeypatch):
    import copy

    from detect.generation import local

    model, tokenizer = tiny
    assert local.plain_greedy(model.generation_config)
    config = copy.deepcopy(model.generation_config)
    config.repetition_penalty = 1.3
    assert not local.plain_greedy(config)
    monkeypatch.setattr(model, "generation_config", config)
    monkeypatch.setattr(local, "greedy_loop", lambda *a, **k: pytest.fail("the loop ignores a repetition penalty"))
    penalised = LocalGenerator(model, tokenizer, prompt_format="raw", max_new_tokens=12, progress=False)(_prompts())
    assert all(isinstance(text, str) for text in penalised) and len(set(penalised)) > 1
