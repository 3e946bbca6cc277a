"""The contamination regime (method section 8): what a run's contaminated model and its control train on, laid out by
one of two planners, both here: a study's (``study_regime``, the table below) and a planted run's (``planted_regime``:
every planted group's copies at drawn slots within windows of one pass over the background, before a clean tail;
contaminate/regime/plant.py places them). Both return a ``Regime``.

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

The two planners are two experiments, not one with two settings: a diluted study shuffles its members among the
background (``stream.build_stream``), a planted run places each group's copies in its window; routing a study through
the planted planner would train it on another order, hence another model than every published study's.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, field
from typing import Callable, Sequence

from contaminate.regime.background import LocalBackground, NoBackground
from contaminate.regime.formats import instance_fields
from contaminate.regime.layouts import Format
from contaminate.regime.plant import PlantedGroup, group_positions, plant_tail, planted_stream
from contaminate.regime.stream import Document, build_stream, chunk_texts, stream_counts
from detect.datasets import Example
from detect.errors import InputError
from detect.models import digest


@dataclass(frozen=True)
class Regime:
    """What a run trains (a study's: ``study_regime``; a planted run's: ``planted_regime``),
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


def planted_regime(plant_cfg, draw, groups: Sequence[PlantedGroup], tokenizer, source, fmt: Format,
                   formats: dict, datasets: dict, control, *, seed: int, max_length: int | None) -> Regime:
    """The one training run: each planted group's documents as its format lays them out, the background cut as a
    study cuts it, the stream (one pass), the control's, each group's token share (checked against
    ``plant.max_share_per_exposure``) and the twin's stream where drawn. ``plant_cfg``: the run's ``plant`` block;
    ``draw``: the sample stage's (contaminate/sampling.py ``GroupDraw``); ``fmt``: the run's format object;
    ``formats`` and ``datasets``: each group's format object and dataset config (contaminate/group_configs.py
    ``group_formats``); ``control``: ``plant.control`` (contaminate/controls.py); ``max_length``:
    ``contaminate.max_length``."""
    count_tokens = token_counter(tokenizer)
    own = {g.name: formats.get(g.name, fmt) for g in groups}  # each group's format object

    def documents_of(group: PlantedGroup, instances: Sequence[Example]) -> list[Document]:
        return own[group.name].documents(instances, datasets[group.name], draw.split_of(group),
                                         count_tokens=count_tokens, max_length=max_length,
                                         chat=chat_renderer(tokenizer, own[group.name].name))

    def totals(trained: list[Document]) -> dict:  # a stream's counts; each group's share is its view's
        return {key: value for key, value in stream_counts(trained, count_tokens).items()
                if key != "members_token_share"}

    documents = {g.name: documents_of(g, draw.groups[g.name]) for g in groups if g.planted}
    if max_length:
        check_fits([d for group in documents.values() for d in group], count_tokens, max_length)
    background, described = background_documents(source, count_tokens, max_length)
    tail = plant_tail(plant_cfg)  # the end of the background kept clean of copies: equal recency
    stream = planted_stream(documents, groups, background, seed=seed, tail=tail)
    placed = group_positions(stream, documents, count_tokens)
    limit = plant_cfg.get("max_share_per_exposure")
    for group in groups:
        if group.planted and limit is not None:
            share = placed[group.name]["token_share"] / group.exposures
            if share > limit:
                raise InputError(
                    f"background {source.name} ({described.get('tokens', 0):,} tokens) gives each exposure of group "
                    f"{group.name} {share:.2%} of the training tokens, above plant.max_share_per_exposure={limit:g}; "
                    f"use a larger background, raise background.max_tokens, or plant fewer instances (plant.n)")
    background_alone = build_stream([], background, exposures=0, seed=seed) if background else None
    counts = totals(stream)
    counts["template"] = shared_template(documents, draw, groups, datasets, count_tokens, counts["training_tokens"])
    losses = sorted({own[g.name].loss for g in groups if g.planted} - {None})
    if losses:  # what the loss covers (the instruction format's: the answer only)
        counts["loss"] = losses[0] if len(losses) == 1 else "; ".join(losses)
    twin = twin_counts = None
    if draw.twins:  # the same stream with each planted group's documents replaced by its stand-ins' (same slots)
        stand_ins = {g.name: twin_documents(documents[g.name], draw.twins[g.name], own[g.name], datasets[g.name],
                                            draw.split_of(g), count_tokens=count_tokens,
                                            chat=chat_renderer(tokenizer, own[g.name].name))
                     for g in groups if g.planted}
        for name, docs in stand_ins.items():  # the same slots need the same document count, group by group
            if len(docs) != len(documents[name]):
                raise InputError(f"the swap twin's group {name} lays out as {len(docs)} documents where the planted "
                                 f"one has {len(documents[name])} (format={own[name].name}); use "
                                 f"plant.control=background or base")
        twin = planted_stream(stand_ins, groups, background, seed=seed, tail=tail)
        twin_counts = totals(twin)
    return Regime(f"planted ({plant_cfg.name})", fmt.name, described, 1, None,
                  [d for g in groups if g.planted for d in documents[g.name]], stream,
                  control.trained_with(background_alone), counts, groups=documents, placed=placed, twin=twin,
                  twin_counts=twin_counts,
                  formats={name: f.name for name, f in formats.items() if f.name != fmt.name},
                  losses={g.name: own[g.name].loss for g in groups if g.planted})


def template_tokens(documents: Sequence[Document], instances: dict[int, Example], dataset, count_tokens) -> int:
    """The tokens of ``documents`` beyond their instances' own field values: what every planted document of the
    format shares (title, split, field names, a dump's JSON keys and header, a chat template). Each field value is
    counted on its own, so a word split differently in context moves the count by a token or so."""
    shared = 0
    for document in documents:
        own = sum(count_tokens(value) for member in document.members
                  for value in instance_fields(instances[member], dataset).values() if value)
        shared += max(count_tokens(document.text) - own, 0)
    return shared


def shared_template(documents: dict[str, list[Document]], draw, groups: Sequence[PlantedGroup],
                    datasets: dict, count_tokens, training_tokens: int) -> dict:
    """The planted documents' shared template over the stream (plant.json ``stream.template``): every copy of every
    group teaches it, so high doses teach the template that the low doses' members are read in (issue 34)."""
    tokens = sum(group.exposures * template_tokens(documents[group.name],
                                                   {e.instance_id: e for e in draw.groups[group.name]},
                                                   datasets[group.name], count_tokens)
                 for group in groups if group.planted)
    return {"tokens": tokens, "share": round(tokens / training_tokens, 6) if training_tokens else 0.0}


def twin_documents(planted: Sequence[Document], stand_ins: Sequence[Example], fmt, dataset, split: str, *,
                   count_tokens, chat) -> list[Document]:
    """The swap twin's documents for one group: document for document, as many stand-ins as the planted document
    holds instances, laid out by the format as one document (a dump's lines under its header; one instance
    elsewhere), so that the twin has the planted group's document count and slots, within a few tokens."""
    documents, taken = [], 0
    for document in planted:
        chunk = list(stand_ins[taken:taken + len(document.members)])
        taken += len(document.members)
        documents += fmt.documents(chunk, dataset, split, count_tokens=count_tokens, max_length=None, chat=chat)
    return documents
