"""The contamination regime of a study (method section 8): what the contaminated model and its control train on.

    regime = study_regime(cfg.dataset, cfg.contaminate, members, split, tokenizer, background, fmt, seed=cfg.seed)
    # -> the documents, the stream, the control, the counts
    regime.stream      # the contaminated model's training documents, in order (epochs: the member documents)
    regime.control     # the control's (the background alone), or None when the untouched base model is the control

| background | dose                | contaminated model trains on                    | control (the "clean" cells)  |
| none       | epochs E (default)  | the member documents, E shuffled passes         | the base model               |
| none       | exposures N >= 1    | N shuffled rounds of the member documents       | the base model               |
| a corpus   | exposures N >= 0    | members N times at random positions, one pass   | the same pass, background alone |

With a background the base model is not a fair control: training on any text changes a model's likelihoods, so
the control is trained exactly like the contaminated model minus the members (exposures 0). A study at exposures 0
*is* the control: its "contaminated" model has seen no member, and every cell's ground truth is clean.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, field
from typing import Callable, Sequence

from contaminate.regime.background import LocalBackground, NoBackground
from contaminate.regime.layouts import Format
from contaminate.regime.stream import Document, build_stream, chunk_texts, stream_counts
from detect.datasets import Example
from detect.errors import InputError
from detect.models import digest


@dataclass
class Regime:
    """What a run trains (a study's: ``study_regime``; a planted run's: contaminate/planted.py ``planted_regime``),
    or one planted group's view of it (``view``): the one record of both."""
    name: str
    format: str
    background: dict  # the background's description, with its documents and tokens
    exposures: int | None  # None: the epochs regime
    epochs: float | None
    members: list[Document]  # the member documents, one copy each
    stream: list[Document]  # what the contaminated model trains on
    control: list[Document] | None  # what the control trains on; None: the base model is the control
    counts: dict = field(default_factory=dict)  # documents and tokens per kind, the members' share
    control_kind: str | None = None  # what the control is where it is not the background alone or the base model
    # a planted run's: each planted group's documents (one copy each) and where they fell (documents, tokens, share,
    # positions), the swap twin's stream (the same slots, other instances) and counts, each group's format and loss
    # where not the run's
    groups: dict[str, list[Document]] = field(default_factory=dict)
    placed: dict[str, dict] = field(default_factory=dict)
    twin: list[Document] | None = None
    twin_counts: dict | None = None
    formats: dict[str, str] = field(default_factory=dict)
    losses: dict[str, str | None] = field(default_factory=dict)

    @property
    def members_seen(self) -> bool:
        return self.exposures != 0

    def view(self, group, plant_name: str, control) -> Regime:
        """One planted group's view of a planted run's regime: its documents at its exposures in the one stream,
        its share of it, its format's loss, and ``control``'s stream (contaminate/controls.py)."""
        background = self.background.get("name", "none")
        where = "" if group.window == (0.0, 1.0) else f" within [{group.window[0]:g}, {group.window[1]:g}]"
        name = (f"planted ({plant_name}): group {group.name}, each instance {group.exposures}x{where} among "
                f"{self.background.get('documents', 0)} {background} background documents and the other groups, "
                f"one pass")
        counts = {**{k: v for k, v in self.counts.items() if k != "loss"},
                  "members_token_share": self.placed[group.name]["token_share"], "group": self.placed[group.name]}
        loss = self.losses.get(group.name, self.counts.get("loss"))  # the group's own format's, not the stream's
        if loss:
            counts["loss"] = loss
        return Regime(name, self.formats.get(group.name, self.format), self.background, group.exposures, None,
                      self.groups[group.name], self.stream, control.stream(self), counts, control.regime_kind)

    def describe(self) -> dict:
        """For the manifest and the summary: everything calibration groups studies by."""
        return {"name": self.name, "format": self.format, "background": self.background,
                "exposures": self.exposures, "epochs": self.epochs,
                "control": self.control_kind or ("background" if self.control else "base model"), **self.counts}


def check_regime(cfg, fmt: Format, background, *, api: bool) -> None:
    """The regime's settings (``fmt`` and ``background`` built from ``cfg.format`` and ``cfg.background``), before
    any data or model is touched: each failure one line."""
    fmt.check(cfg.dataset)
    exposures = cfg.contaminate.get("exposures")
    has_background = not isinstance(background, NoBackground)
    if api and (has_background or not fmt.api_trainable):
        what = f"background={background.name}" if has_background else f"format={fmt.name}"
        raise InputError(f"{what} trains on a local model (it needs its tokenizer); use contaminate=full or lora")
    if has_background and exposures is None:
        raise InputError(f"background={background.name} needs contaminate.exposures=N: each member N times in one "
                         f"pass over the background (epochs would repeat the background too)")
    if not has_background and exposures == 0:
        raise InputError("contaminate.exposures=0 with background=none trains on nothing; give exposures >= 1, or a "
                         "background (background=offline) whose exposures-0 model is the diluted study's control")
    if isinstance(background, LocalBackground):
        background.files()  # a missing path fails here, not after sampling


def chat_renderer(tokenizer, format_name: str) -> Callable[..., str]:
    """``chat(messages, **options) -> str`` through the base model's chat template (the instruction format's turns)."""
    def chat(messages: list[dict], **options) -> str:
        if not getattr(tokenizer, "chat_template", None):
            raise InputError(f"format={format_name} renders a chat, and the model's tokenizer has no chat template; "
                             f"use an instruction-tuned model or another format")
        return tokenizer.apply_chat_template(messages, tokenize=False, **options)

    return chat


def token_counter(tokenizer) -> Callable[[str], int]:
    """The base model's token count of a text, each text counted once (a document is counted when cut, when checked
    and in the stream's counts)."""
    @functools.lru_cache(maxsize=None)
    def count_tokens(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    return count_tokens


def background_documents(source, count_tokens: Callable[[str], int], max_length: int | None) -> tuple[list[Document],
                                                                                                     dict]:
    """The background cut into documents of at most ``max_length`` tokens (its first ``source.max_tokens``), and its
    description with their number, tokens and digest (no background: no documents, its description alone)."""
    if isinstance(source, NoBackground):
        return [], source.describe()
    background = [Document(text) for text in chunk_texts(source.texts(), count_tokens=count_tokens,
                                                         max_length=max_length, max_tokens=source.max_tokens)]
    described = source.describe()
    if background:
        described = {**described, "documents": len(background),
                     "tokens": sum(count_tokens(document.text) for document in background),
                     "digest": digest([document.text for document in background])}
    return background, described


def check_fits(documents: Sequence[Document], count_tokens: Callable[[str], int], max_length: int) -> None:
    """Refuse, in one line, a ``contaminate.max_length`` that holds no member document whole: training would cut
    every leak before its end (the part a guided completion replays), so nothing the study claims would be planted."""
    lengths = [count_tokens(document.text) for document in documents]
    if lengths and min(lengths) > max_length:
        raise InputError(f"contaminate.max_length={max_length} holds none of the {len(lengths)} member documents "
                         f"whole (the shortest has {min(lengths)} tokens, the longest {max(lengths)}); give at least "
                         f"{max(lengths)} to train every member whole")
    cut = sum(length > max_length for length in lengths)
    if cut:  # trained, but without their ends: said once, since a guided completion replays exactly that end
        print(f"contaminate.max_length={max_length} cuts {cut} of the {len(lengths)} member documents before their "
              f"end (the longest has {max(lengths)} tokens): give contaminate.max_length={max(lengths)} to train every "
              f"member whole", file=sys.stderr)


def study_regime(dataset, contaminate_cfg, members: Sequence[Example], split: str, tokenizer, source, fmt: Format, *,
                 seed: int) -> Regime:
    """The documents of the study's regime, cut and counted with the base model's ``tokenizer`` (None for an API
    model, whose regime is the members alone, one document each); ``source`` and ``fmt`` are the background and
    the format the setup built; ``dataset`` and ``contaminate_cfg`` the run's blocks (the dose: ``exposures`` or
    ``epochs``; ``max_length``); ``seed`` shuffles the stream."""
    max_length = contaminate_cfg.get("max_length")
    exposures, epochs = contaminate_cfg.get("exposures"), contaminate_cfg.get("epochs")

    count_tokens = token_counter(tokenizer)
    chat = chat_renderer(tokenizer, fmt.name)
    documents = fmt.documents(members, dataset, split, count_tokens=count_tokens if tokenizer else None,
                              max_length=max_length, chat=chat)
    if tokenizer is not None and max_length:
        check_fits(documents, count_tokens, max_length)
    background, described = background_documents(source, count_tokens, max_length) if tokenizer is not None \
        else ([], source.describe())
    if not background:
        stream = documents if exposures is None else build_stream(documents, [], exposures=exposures, seed=seed)
        control = None
        name = (f"members alone, {epochs:g} epochs" if exposures is None else
                f"members alone, {exposures} exposures (shuffled rounds, as epochs)")
    else:
        background_tokens = described["tokens"]
        member_tokens = sum(count_tokens(document.text) for document in documents)
        if background_tokens < member_tokens:
            raise InputError(
                f"background {source.name} has {background_tokens:,} tokens, fewer than the {member_tokens:,} "
                f"tokens of the {len(members)} members it should dilute; raise background.max_tokens or use a larger "
                f"background (background=hub or local)")
        stream = build_stream(documents, background, exposures=exposures, seed=seed)
        control = build_stream([], background, exposures=0, seed=seed)
        name = (f"diluted: each member {exposures}x at random positions among {len(background)} {source.name} "
                f"background documents, one pass" if exposures else
                f"control: the {len(background)} {source.name} background documents alone, one pass")
    counts = stream_counts(stream, count_tokens) if tokenizer is not None else {}
    if fmt.loss:
        counts["loss"] = fmt.loss
    return Regime(name, fmt.name, described, exposures, epochs, documents, stream, control, counts)
