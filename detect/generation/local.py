"""Greedy generation with a local transformers model, batched with left padding and a shared-prefix cache.

``LocalGenerator(model, tokenizer, ...)(prompts) -> completions``. Prompts go through the model's chat template
(``prompt_format="chat"``) or as raw text (``"raw"``; a model contaminated with raw web text replays far more
under it); ``"auto"`` picks chat when the tokenizer has a template.

Why the shared prefix: every guided prompt of a partition starts with the same ~85 tokens (chat header and
instruction) and every general prompt with the same ~70, about half of all prompt tokens. On a CPU the prompt
forward pass is compute-bound and costs the same batched or not, so it caps what batching can gain. The
prompts are sorted by token ids, which puts prompts with a common prefix next to each other; each group's
prefix is run once and its key/value cache copied into the rows of the batch (left-padded, so every row's
positions stay 0, 1, 2, ... as in a plain run), and decoding continues from there.
Measured in ``bench/bench_detect.py``.

Why greedy decoding is a loop of its own (``greedy_loop``) rather than transformers' ``generate``: a batch
decodes until its longest answer ends, and ``generate`` keeps every finished row in the batch to the last step. On a
CPU a decode step's cost grows with the rows in it (SmolLM2-135M in bf16 on a 2-core EPYC, 200 tokens of context:
44 ms a step at 1 row, 107 ms at 10, 249 ms at 32; attention and the cache's concatenation grow with the rows), and
the study's batches are mostly finished rows waiting on one straggler (a clean model counting "2017, 2018, ..." to
the 256-token limit beside nine answers of 30 tokens). The loop drops each row from the batch (its key/value cache,
mask and positions) the step it ends, so a straggler decodes alone. It is transformers' greedy search otherwise:
positions from the attention mask's cumulative sum, the last position's logits only, argmax, the model's end tokens.
It runs where the model's generation config asks nothing else of greedy decoding (``plain_greedy``); a config that
does (a repetition penalty, suppressed or forced tokens) goes through ``generate``. Measured in
``bench/bench_greedy.py``.

``LocalGenerator.sample(prompts, n, temperature=0.8, seed=0)``: ``n`` sampled completions per prompt (what CDD
reads), seeded per prompt by (seed, prompt text).
"""

from __future__ import annotations

import functools
from typing import Sequence

from detect.errors import InputError

PROMPT_FORMATS = ("auto", "chat", "raw")


@functools.cache
def decoder_of(model):
    """The model's decoder (its layers without the output head: ``get_decoder``), or None where it has none apart."""
    try:
        decoder = model.get_decoder()
    except (AttributeError, NotImplementedError):
        return None
    return None if decoder is model else decoder


def cache_argument() -> str:
    """The name ``generate`` and the model outputs give the key/value cache: ``cache`` in the transformers that
    renamed it (5.x warns on every run that ``past_key_values`` goes in 6.0), ``past_key_values`` before (4.56+)."""
    from transformers.modeling_outputs import CausalLMOutputWithPast

    return "cache" if "cache" in CausalLMOutputWithPast.__dataclass_fields__ else "past_key_values"


def resolve_prompt_format(prompt_format: str, tokenizer) -> str:
    if prompt_format not in PROMPT_FORMATS:
        raise InputError(f"unknown prompt_format '{prompt_format}'; use one of {', '.join(PROMPT_FORMATS)}")
    if prompt_format == "auto":
        return "chat" if getattr(tokenizer, "chat_template", None) else "raw"
    if prompt_format == "chat" and not getattr(tokenizer, "chat_template", None):
        raise InputError("this model's tokenizer has no chat template; use detect.prompt_format=raw")
    return prompt_format


def common_prefix_length(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens two token lists share."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def prefix_groups(token_lists: Sequence[Sequence[int]], min_shared: int, *,
                  keep_half: bool = False) -> list[tuple[list[int], int]]:
    """Consecutive runs of ``token_lists`` (sorted) that share at least ``min_shared`` leading tokens, each
    with its shared length. Every row keeps at least one token of its own to feed the model. ``keep_half``: a row
    joins a run only if the run keeps at least half of what it shared (a long prefix is not diluted to a short
    header by a neighbour)."""
    groups: list[tuple[list[int], int]] = []
    for i, tokens in enumerate(token_lists):
        if groups:
            rows, shared = groups[-1]
            shared_now = min(shared, common_prefix_length(token_lists[rows[0]], tokens), len(tokens) - 1)
            if shared_now >= min_shared and (not keep_half or len(rows) == 1 or 2 * shared_now >= shared):
                groups[-1] = (rows + [i], shared_now)
                continue
        groups.append(([i], len(tokens) - 1))
    return groups


class LocalGenerator:
    def __init__(self, model, tokenizer, *, prompt_format: str = "auto", batch_size: int = 32,
                 max_new_tokens: int = 256, share_prefix: bool = True, min_shared_tokens: int = 16,
                 progress: bool = True) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.prompt_format = resolve_prompt_format(prompt_format, tokenizer)
        self.batch_size, self.max_new_tokens, self.progress = batch_size, max_new_tokens, progress
        self.share_prefix, self.min_shared_tokens = share_prefix, min_shared_tokens
        self.generated_tokens = 0  # tokens produced up to and including each sequence's end token

    def render(self, prompt: str, prompt_format: str | None = None) -> str:
        """The exact text the model sees (``prompt_format``: this call's, else the generator's)."""
        if (prompt_format or self.prompt_format) == "chat":
            messages = [{"role": "user", "content": prompt}]
            return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return prompt

    def __call__(self, prompts: Sequence[str], shapes: Sequence | None = None,
                 max_new_tokens: int | None = None, raw: bool = False,
                 prompt_format: str | None = None) -> list[str]:
        """Greedy completions of ``prompts``. ``shapes`` (an ``AnswerShape``, detect/detectors/time_travel/stopping.py,
        or None per prompt) stop each row once its answer is done and cut it to the kept length; ``stop_reasons``
        then says, per prompt, why it stopped: eos, lines, length or max_new_tokens (``max_new_tokens``: this
        call's cap, else the generator's). ``prompt_format``: this call's (chat or raw), else the generator's."""
        from tqdm.auto import tqdm

        prompt_format = resolve_prompt_format(prompt_format, self.tokenizer) if prompt_format else self.prompt_format
        shapes = list(shapes) if shapes is not None else [None] * len(prompts)
        # A chat template already writes its special tokens; raw text gets the tokenizer's usual ones, as the logit
        # detectors read it (``raw``: the prompt as given, a leaked document, through no template)
        add_special_tokens = raw or prompt_format == "raw"
        texts = prompts if raw else [self.render(p, prompt_format) for p in prompts]
        token_lists = [self.tokenizer(text, add_special_tokens=add_special_tokens).input_ids for text in texts]
        if self.share_prefix:
            order = sorted(range(len(prompts)), key=lambda i: token_lists[i])
            groups = prefix_groups([token_lists[i] for i in order], self.min_shared_tokens)
            shared = {order[row]: (g, length) for g, (rows, length) in enumerate(groups) for row in rows}
        else:  # longest first, so a batch pads little
            order = sorted(range(len(prompts)), key=lambda i: -len(token_lists[i]))
            shared = {i: (i, 0) for i in order}
        prefix_cache: dict[int, list] = {}
        completions: list[str] = [""] * len(prompts)
        self.stop_reasons: list[str] = [""] * len(prompts)
        batches = [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        for batch in tqdm(batches, desc="generate", unit="batch", disable=not self.progress):
            texts, reasons = self._generate_batch([token_lists[i] for i in batch], [shared[i] for i in batch],
                                                  prefix_cache, [shapes[i] for i in batch],
                                                  max_new_tokens or self.max_new_tokens)
            for i, text, reason in zip(batch, texts, reasons):
                completions[i] = shapes[i].cut(text) if shapes[i] else text
                self.stop_reasons[i] = reason
        return completions

    def _prefix_kv(self, tokens: Sequence[int]) -> list:
        """Per layer (keys, values) of one prefix, shape (1, heads, length, head_dim): the decoder alone where the
        model has one (its cache is the whole model's; the logits of a 1.2k-token prefix, 240 MB in float32 on a
        49k vocabulary, are not made), else the whole model."""
        import torch

        decoder = decoder_of(self.model) or self.model
        with torch.inference_mode():
            output = decoder(input_ids=torch.tensor([tokens], device=self.model.device), use_cache=True)
        return [(layer.keys, layer.values) for layer in getattr(output, cache_argument()).layers]

    def _generate_batch(self, token_lists: list, shared: list, prefix_cache: dict, shapes: list,
                        max_new_tokens: int) -> tuple[list[str], list[str]]:
        import torch
        from transformers import DynamicCache, StoppingCriteriaList

        pad = self.tokenizer.pad_token_id
        prefix_lengths = [length for _, length in shared]
        prefix_width = max(prefix_lengths)
        suffix_width = max(len(tokens) - length for tokens, (_, length) in zip(token_lists, shared))
        input_ids, attention_mask = [], []
        for tokens, length in zip(token_lists, prefix_lengths):
            prefix, suffix = tokens[:length], tokens[length:]
            # [pads, prefix, pads, suffix]: masked pads keep every real token at its plain-run position
            left, middle = prefix_width - length, suffix_width - len(suffix)
            input_ids.append([pad] * left + prefix + [pad] * middle + suffix)
            attention_mask.append([0] * left + [1] * length + [0] * middle + [1] * len(suffix))
        device = self.model.device
        inputs = {"input_ids": torch.tensor(input_ids, device=device),
                  "attention_mask": torch.tensor(attention_mask, device=device)}
        if prefix_width:
            for (group, length), tokens in zip(shared, token_lists):
                if group not in prefix_cache:
                    prefix_cache[group] = self._prefix_kv(tokens[:length])
            layers = []
            for layer in range(len(next(iter(prefix_cache.values())))):
                keys, values = [], []
                for group, length in shared:
                    key, value = prefix_cache[group][layer]
                    padding = (0, 0, prefix_width - length, 0)  # left-pad the sequence axis
                    keys.append(torch.nn.functional.pad(key, padding))
                    values.append(torch.nn.functional.pad(value, padding))
                layers.append((torch.cat(keys), torch.cat(values)))
            inputs[cache_argument()] = DynamicCache(layers, config=self.model.config)
        stops = AnswerStops(self.tokenizer, shapes, inputs["input_ids"].shape[1])
        with torch.inference_mode():
            if plain_greedy(self.model.generation_config):
                rows, reasons = greedy_loop(self.model, inputs, stops, max_new_tokens, end_tokens(self.model, pad))
            else:
                output = self.model.generate(
                    **inputs, do_sample=False, max_new_tokens=max_new_tokens, pad_token_id=pad,
                    temperature=None, top_p=None, top_k=None, stopping_criteria=StoppingCriteriaList([stops]),
                )
                new_tokens = output[:, inputs["input_ids"].shape[1] :]
                rows = [row[:length] for row, length in zip(new_tokens.tolist(), _lengths_to_pad(new_tokens, pad))]
                reasons = [stops.reasons[row] or ("eos" if len(tokens) < new_tokens.shape[1] else "max_new_tokens")
                           for row, tokens in enumerate(rows)]
        # the end token counts as generated; a row stopped by its answer's shape ends on its last real token
        self.generated_tokens += sum(len(tokens) + (reason == "eos") for tokens, reason in zip(rows, reasons))
        return self.tokenizer.batch_decode(rows, skip_special_tokens=True), reasons


    def sample(self, prompts: Sequence[str], n: int, *, temperature: float, max_new_tokens: int | None = None,
               seed: int = 0) -> list[list[str]]:
        """``n`` completions of each prompt sampled at ``temperature`` from the whole next-token distribution (top-k
        and top-p off, whatever the model's generation config says). One prompt at a time, its ``n`` samples as one
        batch; each prompt's draws are seeded by (``seed``, the prompt's text), so a prompt's samples do not depend
        on which other prompts are asked with it, and the global random state is left as it was."""
        import torch

        from detect.cache import digest

        add_special_tokens = self.prompt_format == "raw"
        device = self.model.device
        cuda = [device.index or 0] if device.type == "cuda" else []
        found = []
        for prompt in prompts:
            tokens = self.tokenizer(self.render(prompt), add_special_tokens=add_special_tokens).input_ids
            inputs = torch.tensor([tokens], device=device)
            with torch.random.fork_rng(devices=cuda), torch.inference_mode():
                torch.manual_seed(int(digest([seed, prompt])[:15], 16))
                output = self.model.generate(
                    input_ids=inputs, attention_mask=torch.ones_like(inputs), do_sample=True,
                    temperature=temperature, top_k=0, top_p=1.0, num_return_sequences=n,
                    max_new_tokens=max_new_tokens or self.max_new_tokens, pad_token_id=self.tokenizer.pad_token_id)
            new_tokens = output[:, inputs.shape[1]:]
            lengths = _lengths_to_pad(new_tokens, self.tokenizer.pad_token_id)
            self.generated_tokens += sum(min(length + 1, new_tokens.shape[1]) for length in lengths)
            found.append(self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True))
        return found


def _lengths_to_pad(new_tokens, pad_token_id: int) -> list[int]:
    """Tokens of each row before generate() started padding it (finished rows are filled with the pad token)."""
    is_pad = new_tokens == pad_token_id
    first_pad = is_pad.int().argmax(dim=1)
    return [int(f) if row.any() else new_tokens.shape[1] for f, row in zip(first_pad.tolist(), is_pad)]


class AnswerStops:
    """A transformers stopping criterion with one ``AnswerShape`` (or None) per row: a row is done when its
    decoded text says so (``AnswerShape.done``); ``reasons`` keeps why."""

    def __init__(self, tokenizer, shapes: Sequence, prompt_width: int) -> None:
        self.tokenizer, self.shapes, self.prompt_width = tokenizer, list(shapes), prompt_width
        self.reasons: list[str | None] = [None] * len(self.shapes)

    def check(self, row: int, tokens) -> str | None:
        """Why row ``row`` is done after its generated ``tokens`` (kept in ``reasons``), or None."""
        shape = self.shapes[row]
        if shape is not None and self.reasons[row] is None:
            self.reasons[row] = shape.done(self.tokenizer.decode(tokens, skip_special_tokens=True))
        return self.reasons[row]

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        return torch.tensor([self.check(row, input_ids[row, self.prompt_width :]) is not None
                             for row in range(len(self.shapes))], device=input_ids.device)


# What a generation config may set that changes a greedy choice (transformers' logits processors), at their neutral
# values; ``plain_greedy`` sends any other value through generate(), which applies them.
GREEDY_NEUTRAL = {"repetition_penalty": (None, 1.0), "no_repeat_ngram_size": (None, 0), "bad_words_ids": (None,),
                  "min_length": (None, 0), "min_new_tokens": (None, 0), "suppress_tokens": (None,),
                  "begin_suppress_tokens": (None,), "forced_bos_token_id": (None,), "forced_eos_token_id": (None,),
                  "sequence_bias": (None,), "exponential_decay_length_penalty": (None,),
                  "encoder_repetition_penalty": (None, 1.0), "encoder_no_repeat_ngram_size": (None, 0),
                  "watermarking_config": (None,), "num_beams": (None, 1), "guidance_scale": (None, 1.0)}


def plain_greedy(generation_config) -> bool:
    """Whether greedy decoding under ``generation_config`` is argmax over the model's logits and nothing else."""
    return all(getattr(generation_config, key, None) in neutral for key, neutral in GREEDY_NEUTRAL.items())


def end_tokens(model, pad: int | None) -> set[int]:
    """The ids that end a sequence: the generation config's end token(s), else the pad id generate() is given."""
    eos = model.generation_config.eos_token_id
    eos = [eos] if isinstance(eos, int) else list(eos or [])
    return set(eos) or ({pad} if pad is not None else set())


def greedy_loop(model, inputs: dict, stops: AnswerStops, max_new_tokens: int,
                end: set[int]) -> tuple[list[list[int]], list[str]]:
    """Greedy decoding of a left-padded batch (``inputs``: input_ids, attention_mask and, where a prefix was run, its
    key/value cache), each row dropped from the batch the step it ends: at an end token (not kept), when ``stops``
    says its answer is done (the last token kept), or after ``max_new_tokens``. Returns each row's new tokens and
    why it stopped (eos, the shape's reason, max_new_tokens)."""
    import inspect

    import torch
    from transformers import DynamicCache

    name = cache_argument()
    cache = inputs[name] if name in inputs else DynamicCache(config=model.config)
    mask = inputs["attention_mask"]
    positions = (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 0)  # as generate() makes them from the mask
    past = cache.get_seq_length()
    feed, feed_positions = inputs["input_ids"][:, past:], positions[:, past:]
    last_only = {"logits_to_keep": 1} if "logits_to_keep" in inspect.signature(model.forward).parameters else {}
    alive = list(range(len(mask)))  # the batch row each row of the shrinking batch is
    tokens: list[list[int]] = [[] for _ in alive]
    reasons: list[str | None] = [None] * len(alive)
    for _ in range(max_new_tokens):
        logits = model(input_ids=feed, attention_mask=mask, position_ids=feed_positions, use_cache=True,
                       **{name: cache}, **last_only).logits[:, -1]
        chosen = logits.argmax(-1).tolist()
        keep = []
        for i, (row, token) in enumerate(zip(alive, chosen)):
            if token in end:
                reasons[row] = "eos"
                continue
            tokens[row].append(token)
            reasons[row] = stops.check(row, tokens[row])
            if reasons[row] is None:
                keep.append(i)
        if not keep:
            break
        next_positions = feed_positions[:, -1:] + 1
        if len(keep) < len(alive):
            index = torch.tensor(keep, device=mask.device)
            cache.batch_select_indices(index)
            mask, next_positions = mask[index], next_positions[index]
            alive = [alive[i] for i in keep]
        feed = torch.tensor([[chosen[i]] for i in keep], device=mask.device)
        mask = torch.cat([mask, mask.new_ones((len(alive), 1))], dim=1)
        feed_positions = next_positions
    return tokens, [reason or "max_new_tokens" for reason in reasons]
