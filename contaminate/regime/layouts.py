"""The leak formats as classes, one per way a leak lays its members out (``conf/format/*.yaml``, built with
``_target_``): what each checks against the dataset, which training documents it makes, and what it needs.

    fmt = build_format(cfg.format)                  # Document (metadata, instance_only, input_only), Dump, Instruction
    fmt.check(dataset)                              # every field it names, before any work
    fmt.documents(members, dataset, split, count_tokens=..., max_length=256, chat=...)   # contaminate/regime/stream.py
    fmt.rendering(example, dataset, split, chat=...)   # Rendering(context, text): what the detectors score
    LeakReader(fmt, dataset, chat)                     # Evidence.reader: the study's detectors read the leak so

- ``Document``: one instance per document, rendered by the format's template for the task (the web copy).
- ``Dump``: the partition as a dataset file: JSON lines in canonical order under an optional header, cut between
  lines (Oren et al.'s setting; the order is what the sharded test looks for).
- ``Instruction``: the input as the user turn and the label as the assistant turn, through the model's chat
  template; the loss on the assistant turn only.
- ``Paraphrase``: one member per document, reworded (same facts and label); the detectors read the verbatim.

Each format also renders an instance as the detectors read it (``rendering``: the text its loss falls on, after
the context it came with) and a run of instances in a given order (``sequence``: what the order tests read).

The instance texts are rendered by ``contaminate/regime/formats.py`` (templates and field names), whose code keys
every checkpoint; these classes choose how the rendered members become documents and how the detectors read them.
"""

from __future__ import annotations

from typing import Callable, Sequence

from contaminate.regime.formats import check_template, format_instance
from contaminate.regime.stream import CountTokens, Document, dump_documents, dump_header, dump_line
from detect.datasets import Example
from detect.datasets.paraphrase import no_rewriter, paraphrase_variants, synth_source
from detect.detectors.base import Rendering
from detect.errors import InputError
from detect.validate import Range


class Format:
    """A leak format: its ``name`` (keys checkpoints), the prompt format the study detects with, its templates."""
    api_trainable = True   # a fine-tuning API takes its documents as they are (no tokenizer needed to make them)
    loss: str | None = None  # where the loss falls, when not on every token
    lays_out_order = False   # one instance a document, shuffled: no order for the order tests to find

    def __init__(self, name: str, prompt_format: str = "raw", templates: dict | None = None,
                 header: str | None = None, answer: str | None = None) -> None:
        self.name, self.prompt_format, self.templates = name, prompt_format, dict(templates or {})
        self.header, self.answer = header, answer

    def template(self, dataset) -> str:
        template = self.templates.get(dataset.task)
        if template is None:
            raise InputError(f"format {self.name} has no template for task {dataset.task}; add one under "
                             f"templates in conf/format/{self.name}.yaml")
        return template

    def check(self, dataset) -> None:
        check_template(self.template(dataset), dataset)

    def documents(self, members: Sequence[Example], dataset, split: str, *, count_tokens: CountTokens | None = None,
                  max_length: int | None = None, chat: Callable | None = None) -> list[Document]:
        raise NotImplementedError

    def rendering(self, example: Example, dataset, split: str, *, chat: Callable | None = None) -> Rendering:
        """One instance as this format trains it: the text its loss falls on, after the context it came with."""
        raise NotImplementedError

    def sequence(self, examples: Sequence[Example], dataset, split: str, *, chat: Callable | None = None) -> str:
        """A run of instances, in the given order, laid out as this format would (what the order tests read).
        One instance a document: their renderings joined by blank lines (no order was trained)."""
        return "\n\n".join("".join(self.rendering(e, dataset, split, chat=chat)) for e in examples)


class DocumentFormat(Format):
    """One instance per document, as its template renders it."""

    def documents(self, members, dataset, split, *, count_tokens=None, max_length=None, chat=None):
        template = self.template(dataset)
        return [Document(format_instance(e, template=template, dataset=dataset, split=split), (e.instance_id,))
                for e in members]

    def rendering(self, example, dataset, split, *, chat=None):
        return Rendering("", format_instance(example, template=self.template(dataset), dataset=dataset, split=split))


class DumpFormat(Format):
    """The partition as a dataset file: JSON lines in canonical order under ``header``, cut between lines."""
    api_trainable = False  # cut at max_length tokens: it needs the model's tokenizer
    lays_out_order = True  # the canonical order, what Oren et al.'s tests look for

    def check(self, dataset) -> None:
        if self.header:
            check_template(self.header, dataset)

    def documents(self, members, dataset, split, *, count_tokens=None, max_length=None, chat=None):
        return dump_documents(members, dataset, split, header=self.header, count_tokens=count_tokens,
                              max_length=max_length)

    def rendering(self, example, dataset, split, *, chat=None):
        """Its JSON line after the header (the first line of a dump document; the lines before it vary)."""
        return Rendering(dump_header(self.header, dataset, split), dump_line(example, dataset))

    def sequence(self, examples, dataset, split, *, chat=None):
        """The dump's own text: the header, then one JSON line per instance in the given order."""
        return dump_header(self.header, dataset, split) + "\n".join(dump_line(e, dataset) for e in examples)


def formats_for(task: str) -> list[str]:
    """The leak formats that lay out an unlabelled instance of ``task``: those with a template for it, and dump (a
    line is the instance's fields as JSON)."""
    from detect.cli import group_option, options

    found = []
    for name in options("format"):
        node = group_option("format", name)
        if name == "dump" or (node.get("templates") and task in node.templates and "answer" not in node):
            found.append(name)
    return found


class InstructionFormat(Format):
    """The input as the user turn (the template), the label as the assistant turn (``answer``), chat-templated."""
    api_trainable = False  # rendered through the local model's chat template
    loss = "assistant turn only (the answer and the end-of-turn tokens); the prompt carries no loss"

    def check(self, dataset) -> None:
        if not dataset.fields.get("label"):
            raise InputError(f"format={self.name} needs a label for the assistant turn, and dataset {dataset.key} "
                             f"has none (task {dataset.task}); use format={' or '.join(formats_for(dataset.task))}")
        super().check(dataset)
        check_template(self.answer or "", dataset)

    def documents(self, members, dataset, split, *, count_tokens=None, max_length=None, chat=None):
        documents = []
        for example in members:
            prompt, text = self._conversation(example, dataset, split, chat)
            documents.append(Document(text, (example.instance_id,), prompt))
        return documents

    def _conversation(self, example, dataset, split, chat) -> tuple[str, str]:
        """(the chat prompt up to the assistant turn, the whole conversation)."""
        user = format_instance(example, template=self.template(dataset), dataset=dataset, split=split)
        answer = format_instance(example, template=self.answer, dataset=dataset, split=split)
        prompt = chat([{"role": "user", "content": user}], add_generation_prompt=True)
        return prompt, chat([{"role": "user", "content": user}, {"role": "assistant", "content": answer}])

    def rendering(self, example, dataset, split, *, chat=None):
        """The assistant turn (the answer and the end-of-turn tokens: what the loss trained) given the prompt."""
        prompt, text = self._conversation(example, dataset, split, chat)
        if not text.startswith(prompt):
            raise InputError("the chat template renders the prompt differently inside the whole conversation, so "
                             "the answer cannot be scored given the prompt; use a model whose template appends turns")
        return Rendering(prompt, text[len(prompt):])

    def sequence(self, examples, dataset, split, *, chat=None):
        return "".join(self._conversation(e, dataset, split, chat)[1] for e in examples)


class LeakReader:
    """How the detectors of a study read an instance and a run of instances: as its format rendered them for
    training (``Evidence.reader``; ``detect.detectors.base.PlainText`` is the reading that knows no format)."""

    def __init__(self, fmt: Format, dataset, chat: Callable | None = None) -> None:
        self.fmt, self.dataset, self.chat = fmt, dataset, chat
        self.name = f"format {fmt.name}"
        self.leak = True  # the leak's own rendering: the oracle readings can run
        self.lays_out_order = fmt.lays_out_order

    def rendering(self, example: Example, split: str) -> Rendering:
        return self.fmt.rendering(example, self.dataset, split, chat=self.chat)

    def sequence(self, examples: Sequence[Example], split: str) -> str:
        return self.fmt.sequence(examples, self.dataset, split, chat=self.chat)


def build_format(format_cfg) -> Format:
    """The format object a ``format`` node names (``_target_``), its settings checked against its class."""
    from omegaconf import DictConfig, OmegaConf

    from detect.cli import instantiate
    from detect.validate import check_node

    settings = OmegaConf.to_container(format_cfg, resolve=True) if isinstance(format_cfg, DictConfig) \
        else dict(format_cfg)
    return instantiate(check_node(settings, where="format", what=f"format {settings.get('name')}",
                                  example="contaminate.regime.layouts.DocumentFormat"), _convert_="all")


# ---------------------------------------------------------------------------------------------------- paraphrased


class ParaphraseFormat(DocumentFormat):
    """One member per document as its template renders it, each member reworded first: the same facts and label in
    other words (method section 8, "paraphrased"; Dekoninck et al. 2024, "Evading data contamination detection for
    language models is (too) easy": a paraphrased benchmark in training evades likelihood and overlap detectors).

    ``variant`` (1..4, default 1) picks the paraphrase: for the lab's synthetic partitions the generator's other
    wordings and frames of the instance's own draws (``detect/datasets/synth.py``, exact and model-free); for any
    other dataset ``rewriter`` (a hub id or model folder, asked greedily; ``detect/datasets/paraphrase.py``) in style
    ``variant``. A dataset that is not synthetic and has no rewriter fails ``check`` with one line.

    What the detectors read (``reads``): ``verbatim`` (default), the benchmark's own instance under the template,
    because that is what a benchmark user holds and checks; the regime asks whether a detector still finds a member
    that leaked reworded, so scoring the planted text would answer another question. ``paraphrase``: the planted text
    itself, the upper bound (as if the user had the leak), for comparison.
    """

    READS = ("verbatim", "paraphrase")
    ranges = {"variant": Range(1, 4, "[]", hint="which paraphrase is planted: 1 to 4")}

    def __init__(self, name: str, prompt_format: str = "raw", templates: dict | None = None,
                 header: str | None = None, answer: str | None = None, variant: int = 1,
                 rewriter: str | None = None, reads: str = "verbatim") -> None:
        super().__init__(name, prompt_format, templates, header, answer)
        if reads not in self.READS:
            raise InputError(f"format.reads={reads}: give verbatim (the benchmark's instance, the default) or "
                             f"paraphrase (the planted text)")
        self.variant, self.rewriter, self.reads = variant, rewriter, reads

    def check(self, dataset) -> None:
        from contaminate.shift import rewrites_code

        super().check(dataset)
        if self.rewriter is None and synth_source(dataset) is None and not rewrites_code(dataset):
            raise InputError(no_rewriter(dataset, "format.rewriter"))

    def reworded(self, examples: Sequence[Example], dataset, split: str) -> list[Example]:
        """The examples as planted: paraphrase ``variant`` of each, same instance id and label. A code problem
        (HumanEval) without a rewriter is rewritten by contaminate/shift.py (names renamed, docstring reworded and
        reflowed, the solution still passing its tests): one rewrite, whatever the variant."""
        from contaminate.shift import rewrites_code, shift_pool

        if self.rewriter is None and rewrites_code(dataset):
            found = shift_pool(dataset, split, examples, "rewrite")
        else:
            found = [options[0] for options in paraphrase_variants(
                dataset, examples, [[self.variant]] * len(examples), rewriter=self.rewriter,
                setting="format.rewriter")]
        for example, planted in zip(examples, found):
            if (planted.text, planted.text_pair) == (example.text, example.text_pair):
                # a member planted verbatim would be the web-copy regime under this regime's name
                raise InputError(f"the rewriter returned {dataset.key} instance {example.instance_id} unchanged; "
                                 f"use a stronger format.rewriter or another format.variant")
        return found

    def documents(self, members, dataset, split, *, count_tokens=None, max_length=None, chat=None):
        return super().documents(self.reworded(members, dataset, split), dataset, split, count_tokens=count_tokens,
                                 max_length=max_length, chat=chat)

    def rendering(self, example, dataset, split, *, chat=None):
        if self.reads == "paraphrase":
            example = self.reworded([example], dataset, split)[0]
        return super().rendering(example, dataset, split, chat=chat)
