"""Greedy generation with a local transformers model, batched with left padding.

``LocalGenerator(model, tokenizer, ...)(prompts) -> completions``. Prompts go through the model's chat template
(``prompt_format="chat"``) or as raw text (``"raw"``; a model contaminated with raw web text replays far more
under it); ``"auto"`` picks chat when the tokenizer has a template. Prompts are sorted by length before
batching so a batch pads little, and the completions come back in the caller's order.
Batching is what makes CPU runs affordable: see ``bench/bench_detect.py`` for the measured speed-up.
"""

from __future__ import annotations

from typing import Sequence

from detect.errors import InputError

PROMPT_FORMATS = ("auto", "chat", "raw")


def resolve_prompt_format(prompt_format: str, tokenizer) -> str:
    if prompt_format not in PROMPT_FORMATS:
        raise InputError(f"unknown prompt_format '{prompt_format}'; use one of {', '.join(PROMPT_FORMATS)}")
    if prompt_format == "auto":
        return "chat" if getattr(tokenizer, "chat_template", None) else "raw"
    if prompt_format == "chat" and not getattr(tokenizer, "chat_template", None):
        raise InputError("this model's tokenizer has no chat template; use detect.prompt_format=raw")
    return prompt_format


class LocalGenerator:
    def __init__(self, model, tokenizer, *, prompt_format: str = "auto", batch_size: int = 8,
                 max_new_tokens: int = 256, progress: bool = True) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.prompt_format = resolve_prompt_format(prompt_format, tokenizer)
        self.batch_size, self.max_new_tokens, self.progress = batch_size, max_new_tokens, progress

    def render(self, prompt: str) -> str:
        """The exact text the model sees."""
        if self.prompt_format == "chat":
            messages = [{"role": "user", "content": prompt}]
            return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return prompt

    def __call__(self, prompts: Sequence[str]) -> list[str]:
        import torch
        from tqdm.auto import tqdm

        texts = [self.render(prompt) for prompt in prompts]
        # A chat template already writes its special tokens; raw text gets the tokenizer's usual ones.
        add_special_tokens = self.prompt_format == "raw"
        lengths = [len(self.tokenizer(text, add_special_tokens=add_special_tokens).input_ids) for text in texts]
        order = sorted(range(len(texts)), key=lambda i: -lengths[i])
        completions: list[str] = [""] * len(texts)
        batches = [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        for batch in tqdm(batches, desc="generate", unit="batch", disable=not self.progress):
            encoded = self.tokenizer(
                [texts[i] for i in batch], return_tensors="pt", padding=True, add_special_tokens=add_special_tokens
            ).to(self.model.device)
            with torch.inference_mode():
                output = self.model.generate(
                    **encoded, do_sample=False, max_new_tokens=self.max_new_tokens,
                    pad_token_id=self.tokenizer.pad_token_id, temperature=None, top_p=None, top_k=None,
                )
            new_tokens = output[:, encoded.input_ids.shape[1] :]
            for i, text in zip(batch, self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)):
                completions[i] = text
        return completions
