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
