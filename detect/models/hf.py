"""A local transformers model behind the one interface (``generation=local``, the default).

    model = LocalModels().open(ModelRef(...), settings, placement)     # conf/generation/local.yaml
    model.generate(prompts, stop=shapes); model.token_logprobs(texts, moments=True)

Generation is ``detect/generation/local.py`` (batched greedy decoding with a shared-prefix cache), the
log-probabilities ``detect/models/logits.py`` (length-sorted batches, the next-token moments where asked): both
read the same loaded weights, so a study loads each checkpoint once.
"""

from __future__ import annotations

from detect.models.base import LanguageModel
from detect.models.loading import ModelRef, load
from detect.runtime import Placement, placement_of


class HFModel(LanguageModel):
    no_sampling = None  # transformers' do_sample, seeded per prompt (detect/generation/local.py)

    def __init__(self, model, tokenizer, *, name: str = "local", path: str = "", prompt_format: str = "auto",
                 batch_size: int = 32, max_new_tokens: int = 256, share_prefix: bool = True,
                 progress: bool = True) -> None:
        from detect.generation.local import LocalGenerator
        from detect.models.logits import TokenScorer

        super().__init__()
        self.model, self.tokenizer, self.name, self.path = model, tokenizer, name, path
        self.generator = LocalGenerator(model, tokenizer, prompt_format=prompt_format, batch_size=batch_size,
                                        max_new_tokens=max_new_tokens, share_prefix=share_prefix, progress=progress)
        self.prompt_format = self.generator.prompt_format
        self.scorer = TokenScorer(model, tokenizer, share_prefix=share_prefix)  # one setting: generated and scored

    @property
    def prompt_formats(self) -> tuple[str, ...]:
        """Its own format first; with a chat template both chat and raw (the chat reading and the raw one)."""
        if not getattr(self.tokenizer, "chat_template", None):
            return (self.prompt_format,)
        return (self.prompt_format, *(f for f in ("chat", "raw") if f != self.prompt_format))

    def _generate(self, prompts: list[str], stop: list, max_new_tokens: int | None,
                  raw: bool = False, prompt_format: str | None = None) -> tuple[list[str], list]:
        texts = self.generator(prompts, stop if any(stop) else None, max_new_tokens=max_new_tokens, raw=raw,
                               prompt_format=prompt_format)
        return texts, list(self.generator.stop_reasons)

    def _sample(self, prompts: list[str], n: int, temperature: float, max_new_tokens: int | None,
                seed: int) -> list[list[str]]:
        return self.generator.sample(prompts, n, temperature=temperature, max_new_tokens=max_new_tokens, seed=seed)

    def _token_logprobs(self, texts: list[str], moments: list[bool]) -> list[dict]:
        return self.scorer(texts, moments)

    def choice_logprobs(self, requests):
        """Where every choice is one token after its context (an option letter), one forward pass over each
        context gives them all, from the next-token distribution at its last position (the same numbers as
        ``continuation_logprobs``, at 1/len(choices) of the work; the contexts batched, the head on their last
        positions: ``TokenScorer.next_token_logprobs``); otherwise the general path."""
        tokenizer = self.tokenizer
        found: list = [None] * len(requests)
        single = []  # (request, context ids, each choice's token id)
        for r, (context, choices) in enumerate(requests):
            context_ids = tokenizer(context).input_ids
            ids = []
            for choice in choices:
                full = tokenizer(context + choice).input_ids
                ids.append(full[-1] if len(full) == len(context_ids) + 1 and full[:-1] == context_ids else None)
            if None in ids or not context_ids:
                found[r] = super().choice_logprobs([(context, choices)])[0]
            else:
                single.append((r, context_ids, ids))
        for (r, _, ids), log_probs in zip(single, self.scorer.next_token_logprobs([c for _, c, _ in single])):
            found[r] = [float(log_probs[i]) for i in ids]
        return found

    def counters(self) -> dict[str, int]:
        return {"generated_tokens": self.generator.generated_tokens, "scored_tokens": self.scorer.scored_tokens}

    def placement(self) -> dict:
        return placement_of(self.model)


class LocalModels:
    """The ``generation=local`` backend: opens a ``ModelRef`` (the ``model`` group's, or a study's checkpoint;
    else ``model``, a hub id or folder, as a local LLM judge names it) with transformers on the run's placement."""

    reads_model_group = True  # it loads weights: the `model` group's, or a study's checkpoint

    def __init__(self, name: str = "local", model: str | None = None) -> None:
        self.name, self.model = name, model

    def open(self, ref: ModelRef | None, settings, placement: Placement | None = None) -> HFModel:
        if ref is None and self.model:
            from detect.models.loading import hub

            ref = hub(str(self.model))
        if ref is None:
            from detect.errors import InputError

            raise InputError("generation=local needs a model: choose one with model=<key, hub id or folder>")
        model, tokenizer = load(ref, placement)
        return HFModel(model, tokenizer, name=ref.name, path=ref.path, prompt_format=settings.prompt_format,
                       batch_size=settings.batch_size, max_new_tokens=settings.max_new_tokens,
                       share_prefix=settings.share_prefix, progress=settings.progress)
