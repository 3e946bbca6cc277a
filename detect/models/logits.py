"""Per-token statistics of texts under a local transformers model: what every logit detector reads from
``HFModel.token_logprobs`` (``detect/models/hf.py``, which keeps the memo: each text is computed once per model).

    TokenScorer(model, tokenizer)(texts, moments=[True, False, ...]) -> [{"logp", "ids", ["mu", "sigma"]}, ...]

Per text: the log-probability of each token given its prefix (``logp``; the first token has no context and is not
scored), the ids of those tokens (``ids``), the character where each starts in the text (``offsets``: what
``LanguageModel.continuation_logprobs`` cuts a context off by) and, with ``moments``, the mean and standard
deviation of log p under the model's next-token distribution at that position (``mu``, ``sigma``: what Min-K%++
standardises by).
Without moments only a log-sum-exp over the vocabulary is taken, about 3x less work on a 49k vocabulary.

Batches are length-sorted and right-padded, at most ``max_batch_tokens`` padded tokens each, so padding is small
and every text's positions start at 0 as when it is scored alone (tests/test_membership.py checks batched against
one at a time). The decoder runs on the whole batch and the head (``split_head``) on 256 positions at a time: a
batch's logits whole would take 4 bytes x tokens x vocabulary, 2,048 x 49,152 = 400 MB in float32 (peak over the
loaded model scoring HumanEval with moments: 2.40 -> 1.45 GB, 1.07x the time; ``python bench/scorer_memory.py``).

Texts that begin with the same tokens are scored with that prefix run once (``share_prefix``): ReCaLL puts one
12-shot prefix (~1.2k tokens) before every instance of a cell, the performance test one context before each label.
The prefix's key/value cache is computed once and every text's own tokens run after it at the positions they have
in the whole text, so the numbers are the plain pass's (tests/test_membership.py: to 1e-4) and ``scored_tokens``
counts the prefix once. A run of sorted texts is one group while they share at least ``min_shared_tokens`` leading
tokens and at least half of what the group shared so far (a 1.2k-token prefix is not diluted to a 20-token
header by a neighbour); each text keeps at least one token of its own. Short prefixes run together, right-padded,
their padding masked in the suffixes' pass: the performance test's 90 contexts of ~90 tokens take a few passes,
not 90 (one short context a pass: 7.9 s a cell in bf16; together: 5.2 s; ``bench/detector_costs.py --dtype bf16``).
"""

from __future__ import annotations

from typing import Sequence

from detect.generation.local import cache_argument, decoder_of, prefix_groups

MAX_STATISTICS_TOKENS = 256  # positions whose vocabulary-wide float32 statistics are alive at once (_statistics)


class TokenScorer:
    """The per-token statistics of texts under one local model, in length-sorted batches (no memo: the
    ``LanguageModel`` that owns it keeps one)."""

    def __init__(self, model, tokenizer, *, max_batch_tokens: int = 2048, share_prefix: bool = True,
                 min_shared_tokens: int = 16, max_statistics_tokens: int = MAX_STATISTICS_TOKENS) -> None:
        self.model, self.tokenizer, self.max_batch_tokens = model, tokenizer, max_batch_tokens
        self.max_statistics_tokens = max_statistics_tokens
        self.share_prefix, self.min_shared_tokens = share_prefix, min_shared_tokens
        self.scored_tokens = 0  # tokens run through the model so far (padding excluded; a shared prefix once)
        self._split: tuple | None | bool = False  # (decoder, head) once checked (``split_head``); None: whole model

    def _forward(self, torch, **inputs):
        """The model's last hidden states and cache, and the head that makes them logits: run apart where the model
        is a decoder and a head (``split_head``: the logits are then made 256 positions at a time), so that a
        batch's vocabulary-wide logits (2,048 tokens x 49,152 x 4 bytes = 400 MB) never exist whole; else the
        whole model's logits and no head."""
        if self._split is False:
            self._split = split_head(self.model, torch)
        with torch.inference_mode():
            if self._split is None:
                output = self.model(**inputs)
                return output.logits, getattr(output, cache_argument(), None), None
            decoder, head = self._split
            output = decoder(**inputs)
            return output.last_hidden_state, getattr(output, cache_argument(), None), head

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
            groups = self._groups(ids)
            alone = [rows[0] for rows, _ in groups if len(rows) == 1]
            groups = [group for group in groups if len(group[0]) > 1]
            # many short shared prefixes (the performance test: one context a held-out instance) run together
            for batch in _length_batches([shared for _, shared in groups], self.max_batch_tokens):
                chosen = [groups[g] for g in batch]
                found = self._shared([ids[rows[0]][:shared] for rows, shared in chosen],
                                     [[ids[i][shared:] for i in rows] for rows, shared in chosen],
                                     [[moments[i] for i in rows] for rows, _ in chosen], torch)
                for (rows, _), group_stats in zip(chosen, found):
                    for i, stats in zip(rows, group_stats):
                        results[i] = stats
            for batch in _length_batches([len(ids[i]) for i in alone], self.max_batch_tokens):
                batch = [alone[i] for i in batch]
                encoded = tokenizer.pad({"input_ids": [ids[i] for i in batch]}, return_tensors="pt")
                states, _, head = self._forward(torch, input_ids=encoded.input_ids.to(self.model.device),
                                                attention_mask=encoded.attention_mask.to(self.model.device))
                for i, stats in zip(batch, _statistics(states[:, :-1], encoded.input_ids[:, 1:],
                                                       encoded.attention_mask[:, 1:].bool(),
                                                       [moments[i] for i in batch], torch,
                                                       self.max_statistics_tokens, head=head)):
                    results[i] = stats
                self.scored_tokens += sum(len(ids[i]) for i in batch)
            for i, stats in enumerate(results):
                stats["offsets"] = starts[i][1:]  # where each scored token starts in the text (characters)
            return results
        finally:
            tokenizer.padding_side, tokenizer.pad_token = padding_side, pad_token

    def next_token_logprobs(self, contexts: list[list[int]]) -> list:
        """Per context (its token ids), the float32 log-probabilities of the token after it, over the vocabulary:
        what a multiple-choice question's one-token answers are read from (``HFModel.choice_logprobs``). Contexts
        run in length-sorted right-padded batches, as ``__call__``'s texts do, and the head only on each context's
        last position: DCQ's quizzes (~520 tokens each) one at a time, the head on every position, took 7.5 s a
        study cell in bf16 (``python bench/detector_costs.py --detectors membership,dcq --dtype bf16``)."""
        import torch

        found: list = [None] * len(contexts)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        device = self.model.device
        for batch in _length_batches([len(context) for context in contexts], self.max_batch_tokens):
            width = max(len(contexts[i]) for i in batch)
            ids = torch.tensor([contexts[i] + [pad] * (width - len(contexts[i])) for i in batch])
            mask = torch.tensor([[1] * len(contexts[i]) + [0] * (width - len(contexts[i])) for i in batch])
            states, _, head = self._forward(torch, input_ids=ids.to(device), attention_mask=mask.to(device))
            last = states[torch.arange(len(batch)), torch.tensor([len(contexts[i]) - 1 for i in batch])]
            with torch.inference_mode():  # right padding: a context's last position sees no padding
                logits = head(last) if head is not None else last
            for i, row in zip(batch, torch.log_softmax(logits.float(), dim=-1).cpu()):
                found[i] = row
            self.scored_tokens += sum(len(contexts[i]) for i in batch)
        return found

    def _groups(self, ids: list[list[int]]) -> list[tuple[list[int], int]]:
        """Runs of the texts, in token order, that share a prefix worth running once: (indices, shared length)."""
        order = sorted(range(len(ids)), key=lambda i: ids[i])
        if not self.share_prefix:
            return [([i], len(ids[i]) - 1) for i in order]
        return [([order[r] for r in rows], shared) for rows, shared in
                prefix_groups([ids[i] for i in order], self.min_shared_tokens, keep_half=True)]

    def _shared(self, prefixes: list[list[int]], suffixes: list[list[list[int]]], moments: list[list[bool]],
                torch) -> list[list[dict]]:
        """The statistics of ``prefix + suffix`` for each suffix of each prefix, every prefix run once: the prefixes
        in one right-padded pass, whose key/value cache is gathered for each suffix (row by row); the suffixes run
        at the positions after their own prefix, the prefix's padding masked out. Per prefix, its suffixes'."""
        from transformers import DynamicCache

        device, pad = self.model.device, self.tokenizer.pad_token_id
        lengths = torch.tensor([len(prefix) for prefix in prefixes])
        width = int(lengths.max())
        prefix_ids = torch.tensor([prefix + [pad] * (width - len(prefix)) for prefix in prefixes])
        prefix_mask = torch.arange(width).unsqueeze(0) < lengths.unsqueeze(1)
        states, prefix_cache, head = self._forward(torch, input_ids=prefix_ids.to(device),
                                                   attention_mask=prefix_mask.long().to(device), use_cache=True)
        layers = [(layer.keys, layer.values) for layer in prefix_cache.layers]
        heads = _statistics(states[:, :-1], prefix_ids[:, 1:], prefix_mask[:, 1:], [any(m) for m in moments],
                            torch, self.max_statistics_tokens, head=head)
        last = states[torch.arange(len(prefixes)), lengths - 1]  # what predicts each suffix's first token
        self.scored_tokens += int(lengths.sum())
        rows = [(g, s) for g, group in enumerate(suffixes) for s in range(len(group))]
        found: list[list[dict | None]] = [[None] * len(group) for group in suffixes]
        # a batch's logits are rows x suffix positions: bounded as a plain batch's tokens are (with 8,192 a short
        # shared header made 800 MB of bf16 logits and as much again for their concatenation); the gathered cache
        # holds rows x (prefix + suffix) positions: bounded at four times that
        cache_budget = 4 * self.max_batch_tokens
        batches = []
        for batch in _length_batches([len(suffixes[g][s]) for g, s in rows], self.max_batch_tokens):
            per_row = width + max(len(suffixes[rows[r][0]][rows[r][1]]) for r in batch)
            at_once = max(1, cache_budget // per_row)
            batches += [batch[start:start + at_once] for start in range(0, len(batch), at_once)]
        for batch in batches:
            texts = [suffixes[g][s] for g, s in (rows[r] for r in batch)]
            index = torch.tensor([rows[r][0] for r in batch])
            tail = max(len(text) for text in texts)
            input_ids = torch.tensor([text + [pad] * (tail - len(text)) for text in texts])
            mask = torch.tensor([[1] * len(text) + [0] * (tail - len(text)) for text in texts])
            cache = DynamicCache([(k.index_select(0, index.to(k.device)), v.index_select(0, index.to(v.device)))
                                  for k, v in layers], config=self.model.config)
            states, _, head = self._forward(
                torch, input_ids=input_ids.to(device), use_cache=True, **{cache_argument(): cache},
                position_ids=(lengths[index].unsqueeze(1) + torch.arange(tail)).to(device),
                attention_mask=torch.cat([prefix_mask[index].long(), mask], dim=1).to(device))
            states = torch.cat([last[index.to(last.device)].unsqueeze(1), states[:, :-1]], dim=1)
            for r, stats in zip(batch, _statistics(states, input_ids, mask.bool(),
                                                   [moments[rows[r][0]][rows[r][1]] for r in batch], torch,
                                                   self.max_statistics_tokens, head=head)):
                g, s = rows[r]
                found[g][s] = {key: heads[g][key] + stats[key] for key in stats}
            self.scored_tokens += sum(len(text) for text in texts)
        return found


def _statistics(logits, targets, mask, moments: list[bool], torch,
                max_tokens: int = MAX_STATISTICS_TOKENS, *, head=None) -> list[dict]:
    """Per row: the log-probability of each target under the logits before it (``logp``), the targets (``ids``)
    and, where ``moments``, the next-token distribution's mean and standard deviation of log p; masked positions
    dropped. ``logits`` (rows, positions, vocabulary) already aligned with ``targets`` (rows, positions); with
    ``head``, the last hidden states (rows, positions, hidden) that ``head`` makes logits, a chunk at a time.

    Rows at most ``max_tokens`` positions at a time: each float32 copy of the vocabulary-wide tensors (the logits,
    the log-probabilities, the probabilities weighted in place: at most four alive with moments) is then 256 x 49,152 x
    4 bytes = 50 MB. Whole, a shared-prefix batch of 8,192 positions took ~8 GB (164 HumanEval renderings with
    moments: peak resident 9.1 GB, from 1.2 GB loaded), which OOM-killed a 24 GB machine after training in the same
    process (``python bench/scorer_memory.py``: growth over the loaded model 2.29 GB at 1,024 positions and six
    tensors, 1.39 GB now). Every operation is per row, so the chunks give the same numbers."""
    rows_at_once = max(1, max_tokens // max(1, logits.shape[1]))
    found = []
    for start in range(0, len(moments), rows_at_once):
        end = start + rows_at_once
        chunk = logits[start:end]
        if head is not None:
            with torch.inference_mode():
                chunk = head(chunk)
        found += _chunk_statistics(chunk, targets[start:end], mask[start:end], moments[start:end], torch)
    return found


def split_head(model, torch) -> tuple | None:
    """(decoder, head) where ``model``'s logits are ``head(decoder(...).last_hidden_state)``: a transformers causal
    LM with ``get_decoder`` and ``get_output_embeddings``, checked on eight tokens against the whole model (a model
    that scales or caps its logits after the head, as Gemma 2 does, fails the check and is run whole); else None."""
    decoder = decoder_of(model)
    try:
        head = model.get_output_embeddings() if decoder is not None else None
    except (AttributeError, NotImplementedError):
        return None
    if head is None:
        return None
    ids = torch.arange(8, device=model.device).unsqueeze(0) % max(1, int(getattr(model.config, "vocab_size", 8)))
    with torch.inference_mode():
        whole = model(input_ids=ids).logits.float()
        try:
            split = head(decoder(input_ids=ids).last_hidden_state).float()
        except (TypeError, AttributeError):
            return None
    if split.shape != whole.shape or not torch.allclose(split, whole, rtol=1e-3, atol=1e-3):
        return None
    return decoder, head


def _chunk_statistics(logits, targets, mask, moments: list[bool], torch) -> list[dict]:
    logits = logits.float()
    targets = targets.to(logits.device)
    log_norm = torch.logsumexp(logits, dim=-1)
    token_logp = (logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - log_norm).cpu()
    rows = [i for i, wanted in enumerate(moments) if wanted]
    mu = sigma = None
    if rows:  # the next-token distribution's moments, only for the texts that need them
        # two vocabulary-wide tensors, products taken in place: E[log p] and E[(log p)^2] under p
        wanted = logits if len(rows) == len(moments) else logits[rows]
        log_probs = wanted - log_norm[rows].unsqueeze(-1)
        weighted = log_probs.exp().mul_(log_probs)
        mu = weighted.sum(-1)
        second = weighted.mul_(log_probs).sum(-1)
        sigma = (second - mu.pow(2)).clamp_min(1e-12).sqrt()
        mu, sigma = mu.cpu(), sigma.cpu()
    targets, found = targets.cpu(), []
    for row in range(len(moments)):
        keep = mask[row].cpu()
        stats = {"logp": token_logp[row][keep].tolist(), "ids": targets[row][keep].tolist()}
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
                     max_batch_tokens: int = 2048, share_prefix: bool = True) -> list[dict]:
    """The statistics of ``texts`` in one call: see ``TokenScorer``."""
    return TokenScorer(model, tokenizer, max_batch_tokens=max_batch_tokens,
                       share_prefix=share_prefix)(list(texts), [moments] * len(texts))
