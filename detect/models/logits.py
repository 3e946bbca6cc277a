"""Per-token statistics of texts under a local transformers model: what every logit detector reads from
``HFModel.token_logprobs`` (``detect/models/hf.py``, which keeps the memo: each text is computed once per model).

    TokenScorer(model, tokenizer)(texts, moments=[True, False, ...]) -> [{"logp", "ids", ["mu", "sigma"]}, ...]

Per text: the log-probability of each token given its prefix (``logp``; the first token has no context and is not
scored), the ids of those tokens (``ids``), the character where each starts in the text (``offsets``: what
``LanguageModel.continuation_logprobs`` cuts a context off by) and, with ``moments``, the mean and standard
deviation of log p under the model's next-token distribution at that position (``mu``, ``sigma``: what Min-K%++
standardises by).
Without moments only a log-sum-exp over the vocabulary is taken, about 3x less work on a 49k vocabulary.

Batches are length-sorted and right-padded, at most ``max_batch_tokens`` padded tokens each (the logits of a
batch take 4 bytes x tokens x vocabulary: 2,048 tokens x 49,152 = 400 MB), so padding is small and every text's
positions start at 0 as when it is scored alone (tests/test_membership.py checks batched against one at a time).
"""

from __future__ import annotations

from typing import Sequence


class TokenScorer:
    """The per-token statistics of texts under one local model, in length-sorted batches (no memo: the
    ``LanguageModel`` that owns it keeps one)."""

    def __init__(self, model, tokenizer, *, max_batch_tokens: int = 2048) -> None:
        self.model, self.tokenizer, self.max_batch_tokens = model, tokenizer, max_batch_tokens
        self.scored_tokens = 0  # tokens run through the model so far (padding excluded)

    def __call__(self, texts: list[str], moments: list[bool]) -> list[dict]:
        return self._compute(texts, moments)

    def _compute(self, texts: list[str], moments: list[bool]) -> list[dict]:
        import torch

        # Right padding, so that every text's positions start at 0 as when it is scored alone; the tokenizer is
        # shared with the generator (left padding), so it is set back afterwards.
        tokenizer = self.tokenizer
        padding_side, pad_token = tokenizer.padding_side, tokenizer.pad_token
        tokenizer.padding_side = "right"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        try:
            encoded_texts = [tokenizer(text, return_offsets_mapping=True) for text in texts]
            ids = [row.input_ids for row in encoded_texts]
            starts = [[start for start, _ in row.offset_mapping] for row in encoded_texts]
            results: list[dict | None] = [None] * len(texts)
            for batch in _length_batches([len(row) for row in ids], self.max_batch_tokens):
                encoded = tokenizer.pad({"input_ids": [ids[i] for i in batch]}, return_tensors="pt")
                found = self._batch(encoded, [moments[i] for i in batch], torch)
                for i, stats in zip(batch, found):
                    stats["offsets"] = starts[i][1:]  # where each scored token starts in the text (characters)
                    results[i] = stats
                self.scored_tokens += sum(len(ids[i]) for i in batch)
            return results
        finally:
            tokenizer.padding_side, tokenizer.pad_token = padding_side, pad_token

    def _batch(self, encoded, moments: list[bool], torch) -> list[dict]:
        device = self.model.device
        with torch.inference_mode():
            logits = self.model(input_ids=encoded.input_ids.to(device),
                                attention_mask=encoded.attention_mask.to(device)).logits[:, :-1].float()
        targets = encoded.input_ids[:, 1:].to(device).unsqueeze(-1)
        mask = encoded.attention_mask[:, 1:].bool()
        scored_ids = encoded.input_ids[:, 1:]
        token_logp = (logits.gather(-1, targets).squeeze(-1) - torch.logsumexp(logits, dim=-1)).cpu()
        rows = [i for i, wanted in enumerate(moments) if wanted]
        mu = sigma = None
        if rows:  # the next-token distribution's moments, only for the texts that need them
            log_probs = torch.log_softmax(logits[rows], dim=-1)
            probs = log_probs.exp()
            mu = (probs * log_probs).sum(-1)
            sigma = ((probs * log_probs.pow(2)).sum(-1) - mu.pow(2)).clamp_min(1e-12).sqrt()
            mu, sigma = mu.cpu(), sigma.cpu()
        found = []
        for row in range(len(moments)):
            keep = mask[row]
            stats = {"logp": token_logp[row][keep].tolist(), "ids": scored_ids[row][keep].tolist()}
            if moments[row]:
                at = rows.index(row)
                stats.update(mu=mu[at][keep].tolist(), sigma=sigma[at][keep].tolist())
            found.append(stats)
        return found


def _length_batches(lengths: Sequence[int], max_batch_tokens: int) -> list[list[int]]:
    """Indices grouped longest first into batches of at most ``max_batch_tokens`` padded tokens (a text longer
    than that is a batch of its own)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    for i in order:
        if batches and lengths[batches[-1][0]] * (len(batches[-1]) + 1) <= max_batch_tokens:
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


def token_statistics(model, tokenizer, texts: Sequence[str], *, moments: bool = True,
                     max_batch_tokens: int = 2048) -> list[dict]:
    """The statistics of ``texts`` in one call: see ``TokenScorer``."""
    return TokenScorer(model, tokenizer, max_batch_tokens=max_batch_tokens)(list(texts), [moments] * len(texts))
