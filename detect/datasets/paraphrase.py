"""Paraphrases of benchmark instances: the same facts and label in other words.

Two users: the Data Contamination Quiz (Golchin & Surdeanu 2024, ``detect/detectors/dcq.py``), whose options are an
instance and paraphrases of it, and the paraphrased-leak regime (Dekoninck et al. 2024, "Evading data contamination
detection for language models is (too) easy": members planted reworded; ``contaminate/regime/layouts.py``,
``ParaphraseFormat``).

    from detect.datasets.paraphrase import paraphrases
    paraphrases(synth_nli_cfg, examples, n=3, seed=0)           # [[3 Examples] per example]: re-rendered draws
    paraphrases(rte_cfg, examples, n=3, seed=0, rewriter=model)  # a hub dataset: a LanguageModel rewrites

- The lab's synthetic partitions (``SynthSource``) are paraphrased exactly: each instance's recorded draws are
  rendered again in other wordings and frames (``detect/datasets/synth.py``: ``paraphrase``), so every drawn name and
  number and the label stay, and nothing else is added. No model is needed and the result is the same on every run.
- Any other dataset (the hub, a local file, a synthetic partition loaded from ``dataset.path``) needs a rewriter: a
  ``LanguageModel`` asked greedily, with the fixed prompt ``REWRITE_PROMPT``, to reword each text field in one of
  the ``STYLES`` (variant v: style v). The label is the instance's own (a rewriter never sees it). Without a
  rewriter the call is a one-line ``InputError`` naming the setting to give.

Each instance gets ``n`` distinct paraphrases, all different from it, in a seeded order of variants per instance
(seed and instance id): which variant a paraphrase is varies over a partition, as the option positions of a quiz do.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from detect.datasets import Example
from detect.errors import InputError
from detect.models.hf import HFModel

# Defaults: the rewriter's prompt and its styles (variant v asks for style v), and its answer length in tokens.
REWRITE_PROMPT = ("Rewrite the text below in other words: {style}. Keep every fact, name and number, and the "
                  "meaning, exactly. Answer with the rewritten text only.\n\nText: {text}\nRewritten text:")
STYLES = ("replace the words with synonyms", "change the sentence structure", "reorder the clauses",
          "use another register")
REWRITE_TOKENS = 256


def synth_source(dataset):
    """The dataset's ``SynthSource`` when its instances come from the lab's generator, else None (``dataset.path``
    points at a file: a copy whose draws the generator cannot vouch for)."""
    from detect.datasets.sources import SynthSource, source_of

    if dataset.get("path"):
        return None
    source = source_of(dataset)
    return source if isinstance(source, SynthSource) else None


def no_rewriter(dataset, setting: str) -> str:
    """The one line a dataset with no rewriter gets: which setting to give."""
    return (f"dataset {dataset.key} is not one of the lab's synthetic partitions (synth_nli, synth_news, "
            f"synth_xsum), so its paraphrases need a rewriter model: set {setting}=<hub id or model folder>")


class Rewriter:
    """A ``LanguageModel`` that paraphrases text greedily with a fixed prompt (``REWRITE_PROMPT``, ``STYLES``)."""

    def __init__(self, model, *, prompt: str = REWRITE_PROMPT, styles: Sequence[str] = STYLES,
                 max_new_tokens: int = REWRITE_TOKENS) -> None:
        self.model, self.prompt, self.styles, self.max_new_tokens = model, prompt, tuple(styles), max_new_tokens
        self.name = getattr(model, "name", "") or "rewriter"

    @property
    def variants(self) -> int:
        return len(self.styles)

    def rewrite(self, texts: Sequence[str], variant: int) -> list[str]:
        """Each text reworded in style ``variant`` (1-based): the answer up to its first blank line (a chat model
        may add a note after the rewrite)."""
        prompts = [self.prompt.format(style=self.styles[variant - 1], text=text) for text in texts]
        answers = self.model.generate(prompts, max_new_tokens=self.max_new_tokens)
        return [answer.strip().split("\n\n")[0].strip() for answer in answers]


_LOADED: dict[str, Rewriter] = {}


def rewriter_of(spec) -> Rewriter | None:
    """A ``Rewriter`` from a setting: None (none), a ``Rewriter``, a ``LanguageModel``, or a hub id or model folder
    (loaded once per process on the run's default placement, prompted as its chat template says)."""
    if spec is None or isinstance(spec, Rewriter):
        return spec
    if not isinstance(spec, str):
        return Rewriter(spec)
    if spec not in _LOADED:
        from detect.models.loading import hub, load

        model, tokenizer = load(hub(spec))
        _LOADED[spec] = Rewriter(HFModel(model, tokenizer, name=spec, path=spec, progress=False))
    return _LOADED[spec]


def _fields(example: Example, shape: str) -> dict:
    """The example as the row the generator wrote (its text fields)."""
    from detect.datasets.synth import TEXT_FIELDS

    names = TEXT_FIELDS[shape]
    return dict(zip(names, (example.text, example.text_pair)[:len(names)]))


def paraphrase_variants(dataset, examples: Sequence[Example], variants: Sequence[Sequence[int]], *, rewriter=None,
                        setting: str = "rewriter") -> list[list[Example]]:
    """For each example, its paraphrases ``variants[i]`` (1-based variant numbers), as Examples with the same
    instance_id and label. ``setting`` is what the error names when a rewriter is needed and none is given."""
    source = synth_source(dataset)
    if source is not None:
        from detect.datasets import synth

        found = []
        for example, wanted in zip(examples, variants):
            draws = synth.draws_of(_fields(example, source.shape), source.shape, size=source.size,
                                   seed=source.synth_seed)
            if draws is None:
                raise InputError(f"instance {example.instance_id} is not in the {dataset.key} partition the "
                                 f"generator makes (size {source.size}, synth_seed {source.synth_seed}); it cannot "
                                 f"be paraphrased")
            rows = [synth.render(source.shape, draws, variant) for variant in wanted]
            found.append([_replaced(example, [row[name] for name in synth.TEXT_FIELDS[source.shape]])
                          for row in rows])
        return found
    chosen = rewriter_of(rewriter)
    if chosen is None:
        raise InputError(no_rewriter(dataset, setting))
    made: dict[int, list[Example]] = {}
    for variant in sorted({v for wanted in variants for v in wanted}):  # one batched generate per variant and field
        if not 1 <= variant <= chosen.variants:
            raise InputError(f"paraphrase variant {variant}: the rewriter has styles 1..{chosen.variants}")
        texts = chosen.rewrite([e.text for e in examples], variant)
        paired = [i for i, e in enumerate(examples) if e.text_pair is not None]
        pairs = dict(zip(paired, chosen.rewrite([examples[i].text_pair for i in paired], variant)))
        made[variant] = [_replaced(e, [text] if i not in pairs else [text, pairs[i]])
                         for i, (e, text) in enumerate(zip(examples, texts))]
        for example, item in zip(examples, made[variant]):
            if not item.text or (item.text_pair is not None and not item.text_pair):
                raise InputError(f"rewriter {chosen.name} wrote nothing for {dataset.key} instance "
                                 f"{example.instance_id}; use a rewriter model that follows instructions")
    return [[made[v][i] for v in wanted] for i, wanted in enumerate(variants)]


def _replaced(example: Example, texts: list[str]) -> Example:
    return dataclasses.replace(example, text=texts[0], text_pair=texts[1] if len(texts) > 1 else None)


def paraphrases(dataset, examples: Sequence[Example], n: int, seed: int, *, rewriter=None,
                setting: str = "rewriter") -> list[list[Example]]:
    """``n`` distinct paraphrases of each example (same instance_id and label, each unlike the example), their
    variants in a seeded order per instance. Synthetic partitions need no rewriter; any other dataset needs one
    (a ``LanguageModel``, or a hub id or folder), else a one-line ``InputError`` naming ``setting``."""
    source = synth_source(dataset)
    if source is not None:
        from detect.datasets.synth import VARIANTS as available
    elif rewriter is None:
        raise InputError(no_rewriter(dataset, setting))
    else:
        available = rewriter_of(rewriter).variants
    if not 1 <= n <= available:
        raise InputError(f"{n} paraphrases asked of {dataset.key}: there are {available} variants; ask for 1 to "
                         f"{available}")
    orders = [[int(v) + 1 for v in np.random.default_rng([seed, example.instance_id]).permutation(available)]
              for example in examples]
    everything = paraphrase_variants(dataset, examples, orders, rewriter=rewriter, setting=setting)
    chosen = []
    for example, options in zip(examples, everything):
        seen, kept = {(example.text, example.text_pair)}, []
        for option in options:  # a rewriter may repeat itself or the original: such a paraphrase is no option
            if (option.text, option.text_pair) not in seen:
                seen.add((option.text, option.text_pair))
                kept.append(option)
        if len(kept) < n:
            raise InputError(f"only {len(kept)} distinct paraphrases of {dataset.key} instance {example.instance_id} "
                             f"(of {n} asked): the rewriter repeats the text; use a stronger rewriter model")
        chosen.append(kept[:n])
    return chosen
