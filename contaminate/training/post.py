"""Post-training after the leak: an optional stage (``post_train``) that trains the contaminated model and its
control further, identically, on clean task data, before any detector reads them.

    python -m contaminate +dataset=synth_nli post_train=sft      # a clean supervised tail (conf/post_train/sft.yaml)
    python -m contaminate +dataset=synth_nli post_train=grpo     # a short GRPO run on the task (grpo.yaml)

Why: Wang et al. (ICLR 2026) found that a short GRPO run after SFT contamination left ten detectors near chance;
Kocyigit & Yildirim (2026) found that later SFT or GRPO can revive a leak the model had forgotten. Either way a
leak is met by the detectors after more training, not at the end of the training that planted it.

**The data**: ``post_train.n`` instances of the dataset's *other* split, label-balanced and drawn with the study's
member draw (``sample.draw``), none of them an instance the other split's cell reads (its detected instances, its
pool, its known non-members: ``GroupDraw.other`` and ``known_non_members``). The members, the non-members and their
known non-members are of the contaminated split, so the data is disjoint from every pool the detectors read.
Not the contaminated split's unused instances: those are the reservoir the sample stage draws from (another draw, a
larger pool, a planted run's groups and swap-twin stand-ins), so post-training on them would tie this stage to the
pools; the other split is also the data a model developer fine-tunes on when the test split is the one that leaked
(the other split's cell then compares models that both trained on other instances of its own split).

**The task**, as a user would fine-tune on it: for a labelled task, the instruction format's chat prompt and its
answer, the label (``conf/format/instruction.yaml``, through the base model's chat template; the study's own format
does not matter). A task without a label (the lab's summaries and questions hold one text field) is continuation:
the user turn ``Continue the text.`` with the text's first half of words, the answer its second half. SFT trains the
whole conversation with the loss on the answer (``contaminate/training/local.py``'s ``build_trainer``); GRPO (TRL's
``GRPOTrainer``) samples ``num_generations`` completions of each prompt and rewards each: 1.0 when it names the
correct label (case-insensitive, as a whole word; a name inside a longer label's name counts as that longer name)
and no other label, else 0.0; for continuation, ROUGE-L F1 against the second half (rouge-score, as the detectors).

**Both models**: the contaminated model and the clean cells' model are post-trained identically (same data, same
settings, same seed): the control trained on the background alone, a planted run's swap twin
(``contaminate/planted.py``), or, where the control is the untouched base model, the base model itself, which so
becomes a trained checkpoint. At exposures 0 the contaminated model is the control, post-trained once.

**The backend** is the study's: ``contaminate=full`` post-trains every weight; with an adapter (``contaminate.peft``,
``contaminate=lora``) a fresh adapter of the same PEFT config over the parent with its adapter merged, the result merged
into a full model when saved. ``contaminate=openai`` is refused (the checkpoints are at the API).

**Caching**: each post-trained checkpoint is a folder under ``cache_dir/checkpoints/`` like the others, keyed by its
parent (the parent checkpoint's id, so a retrained parent is post-trained again, or the base model's ref), the
post_train settings (``force`` and the trainer's logging keys aside), the backend and its adapter settings, the
data (split, ids, contents, and the rendered conversations), the seed, the device kind, and the training code
(``TRAINING_CODE`` and this module). ``post_train.force=true`` trains them again.

The study's ``checkpoint`` and ``control_checkpoint`` (and the cells' models) are then the post-trained ones; the
manifest's ``post_train`` holds the kind, settings, data ids, steps, each parent's record and each post-trained
checkpoint's record, and calibration keeps it as a regime axis (``metadata/none/full/grpo``).
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from contaminate.checkpoints import Checkpoint, reuse_or_train
from contaminate.regime import chat_renderer
from contaminate.regime.layouts import build_format
from contaminate.regime.stream import Document
from detect.datasets import Example, load_split, sample
from detect.errors import InputError
from detect.models import ModelRef, digest
from detect.runtime import Placement
from detect.validate import POSITIVE, check_values, count

CONTINUATION = "Continue the text.\ntext: {head}"  # the user turn of a task without a label
# Config fields the lab sets itself, per TRL config class: the seed is the study's, precision the runtime policy's,
# the rest this group's own keys (and, for SFT, the loss on the answer the lab's).
LAB_SET = {"output_dir": "the checkpoint folder", "seed": "seed", "data_seed": "seed", "bf16": "runtime.dtype",
           "fp16": "runtime.dtype", "use_cpu": "runtime.device", "num_train_epochs": "post_train.epochs",
           "learning_rate": "post_train.learning_rate", "per_device_train_batch_size": "post_train.batch_size"}
SFT_SET = {"max_length": "post_train.max_length", "packing": "the lab", "completion_only_loss": "the lab",
           "train_sampling_strategy": "the lab (shuffled epochs)"}
LIMITS = {"learning_rate": (float, POSITIVE), "epochs": (float, POSITIVE)}


@dataclass(frozen=True)
class FollowedRun:
    """What a post-training stage reads of the run it follows, taken from the config once by ``check`` (the setup):
    the run's dataset (the other split's data), every dataset it reads (post_train=elicit's task shapes and
    disjointness), the member draw, the seed, the detection's cut bounds (elicitation's pieces) and the cache."""
    dataset: Any
    datasets: tuple
    draw: int
    seed: int
    cut: tuple[float, float]
    cache_dir: str

    @classmethod
    def of(cls, cfg) -> "FollowedRun":
        return cls(cfg.dataset, tuple(study_datasets(cfg)), int(cfg.sample.draw), int(cfg.seed),
                   (cfg.detect.cut.low, cfg.detect.cut.high), str(cfg.cache_dir))


@dataclass
class Turn:
    """One instance as post-training reads it: the chat prompt, the whole conversation, the answer."""
    prompt: str
    text: str
    answer: str


class PostTrain:
    """A post-training stage, built from the ``post_train`` group with ``_target_`` (``SFTPostTrain``,
    ``GRPOPostTrain``) and checked by ``check`` against the study it follows: what trains (``kind``, the group's
    ``name``), on what, with which trainer settings. A new stage is a subclass with its TRL config class, its own
    checks and ``trainer``, and a YAML file in conf/post_train/ naming it."""
    config_name = ""       # the TRL config class its ``trainer`` block passes through to
    lab_set: dict = {}     # that class's fields the lab sets itself beyond LAB_SET
    docs = ""
    needs_other_split = True  # trains on the dataset's other split (a one-split dataset is refused)

    def __init__(self, **settings) -> None:
        from omegaconf import OmegaConf

        # the task's chat turns: conf/format/instruction.yaml as the group's defaults compose it at post_train.format
        # (not keyed with the settings: the checkpoints post-trained before it was composed keep their keys)
        self.format_node = settings.pop("format", None)
        self.node = OmegaConf.create(settings)  # the group as configured (its _target_ and format aside)
        self.format = None  # the instruction format, built by ``check``
        self.kind = str(self.node.get("name", type(self).__name__))
        self.arguments: dict = {}  # post_train.trainer, checked against the TRL config class's fields
        self.backend = "full"      # the study's training method: full, or the adapter's (lora)
        self.peft: dict | None = None  # contaminate.peft: the adapter's PEFT config (with its _target_), or None
        self.data_checks: dict = {}  # what ``check`` found of the data, recorded in the manifest (elicit: disjointness)
        self.run: FollowedRun | None = None  # what it reads of the run it follows (``check``)

    def check(self, cfg, trainer) -> "PostTrain":
        """Every setting checked before any training (one line per failure), against the study's trainer."""
        from omegaconf import OmegaConf

        node, kind = self.node, self.kind
        if trainer.api:
            raise InputError(f"post_train={kind} trains the checkpoints with TRL on this machine, and "
                             f"contaminate={trainer.name} leaves them at the API; use contaminate=full or lora, or "
                             f"post_train=none")
        count(node.get("n"), "post_train.n", hint=" (clean instances of the other split to post-train on)")
        count(node.get("batch_size"), "post_train.batch_size")
        check_values(node, LIMITS, where="post_train")
        for key in ("learning_rate", "epochs"):
            if node.get(key) is None:
                raise InputError(f"post_train.{key} is not set; give a number > 0")
        self.arguments = trainer_arguments(self, node)
        self.check_settings()
        if self.format_node is None:
            raise InputError(f"post_train={kind} has no format (the task's chat turns): compose it with "
                             f"- /format@format: instruction in conf/post_train/{kind}.yaml's defaults")
        self.format = build_format(self.format_node)
        if cfg.dataset.fields.get("label"):  # the instruction format's user turn for the task: one line if none
            self.format.check(cfg.dataset)
        peft = cfg.contaminate.get("peft")
        self.backend, self.peft = trainer.name, OmegaConf.to_container(peft, resolve=True) if peft else None
        self.run = FollowedRun.of(cfg)
        return self

    def check_settings(self) -> None:
        """The stage's own checks (beyond the common ones)."""

    def trainer(self, model, tokenizer, turns: Sequence[Turn], names, output_dir: Path, *, seed: int,
                placement: Placement) -> tuple[Any, dict | None]:
        """The TRL trainer of this stage, and the training rows it reads (None where it builds them itself)."""
        raise NotImplementedError

    @property
    def settings(self) -> dict:
        """The group as keyed and recorded: everything but ``force`` and how a run is logged."""
        from omegaconf import OmegaConf

        from contaminate.training.local import UNKEYED

        given = OmegaConf.to_container(self.node, resolve=True)
        given.pop("force", None)
        given["trainer"] = {k: v for k, v in (given.get("trainer") or {}).items() if k not in UNKEYED}
        return given

    # --- the stage ----------------------------------------------------------------------------------------------

    def apply(self, draw, contaminated, setup, placement: Placement, *, control: bool = True):
        """``contaminated`` with its model and (``control``) its clean cells' model post-trained: the control, or
        the base model where that is the control; ``draw``: the run's (contaminate/sampling.py ``GroupDraw``), whose
        pools of the run's dataset the data keeps clear of. None in a non-main process of a distributed launch."""
        started = time.time()
        data, turns, names = self.data(draw, setup.trainer.tokenizer(contaminated.base))
        source, split = self.source(draw)
        block = {"kind": self.kind, "settings": self.settings,
                 "data": {"dataset": source, "split": split, "n": len(data),
                          "ids": [e.instance_id for e in data], "digest": _content(data), **self.data_checks},
                 "steps": {}, "parents": {}, "checkpoints": {}}
        same = contaminated.control is not None and contaminated.record["id"] == contaminated.control.record["id"]
        new_control = contaminated.control
        if control:  # the clean cells' model: the trained control, or the base model itself
            parent = contaminated.control or Checkpoint(contaminated.base)
            new_control = self._post_train("control", parent, data, turns, names, split,
                                           setup, placement, block)
            if new_control is None:
                return None
        if same and control:  # exposures 0: the contaminated model is the control, post-trained once
            trained = new_control
            block["parents"]["contaminated"] = block["parents"]["control"]
            block["checkpoints"]["contaminated"] = block["checkpoints"]["control"]
            block["steps"]["contaminated"] = block["steps"]["control"]
        else:
            trained = self._post_train("contaminated", contaminated.checkpoint, data, turns, names, split, setup,
                                       placement, block)
            if trained is None:
                return None
        block["seconds"] = round(time.time() - started, 1)
        model, folder, reused, record = trained.model, trained.folder, trained.reused, trained.record
        regime = contaminated.regime
        regime = replace(regime, name=f"{regime.name}; then post_train={self.kind} on {len(data)} "
                                      f"{self.what(split)} ({record['steps']} steps), the control likewise")
        return replace(contaminated, model=model, folder=folder, reused=reused, record=record, control=new_control,
                       regime=regime, seconds=contaminated.seconds + block["seconds"], post_train=block)

    def apply_to_control(self, draw, contaminated, setup, placement: Placement):
        """The clean cells' model of ``contaminated`` post-trained as its contaminated model was (a planted run's
        swap twin, trained after the stage); None in a non-main process."""
        started = time.time()
        data, turns, names = self.data(draw, setup.trainer.tokenizer(contaminated.base))
        block = json.loads(json.dumps(contaminated.post_train))
        if block["data"]["ids"] != [e.instance_id for e in data]:
            raise InputError("post_train: the control's data differ from the contaminated model's (a bug)")
        control = self._post_train("control", contaminated.control, data, turns, names,
                                   self.source(draw)[1], setup, placement, block)
        if control is None:
            return None
        block["seconds"] = round(block.get("seconds", 0) + time.time() - started, 1)
        return replace(contaminated, control=control, post_train=block,
                       seconds=contaminated.seconds + time.time() - started)

    def source(self, draw) -> tuple[str, str]:
        """(dataset, split) the stage's data comes from, as the manifest records it: the run's dataset's other
        split."""
        return self.run.dataset.key, draw.splits[self.run.dataset.key][1]

    def what(self, split: str) -> str:
        """Its data in the regime's sentence."""
        return f"clean instances of the {split} split"

    def data(self, draw, tokenizer) -> tuple[list[Example], list[Turn], list[str] | None]:
        """The post-training instances, their conversations, and the task's label names (None: no label)."""
        data, names = post_train_data(self.run, draw, self.node.n)
        return data, task_turns(data, self.run.dataset, self.source(draw)[1], tokenizer, self.format), names

    def _post_train(self, which: str, parent: Checkpoint, data, turns, names, split: str, setup,
                    placement: Placement, block: dict) -> Checkpoint | None:
        """One parent (a checkpoint, or the base model) post-trained and recorded in ``block``; the post-trained
        checkpoint, or None in a non-main process."""
        ref, record = parent.model, parent.record
        origin = {"checkpoint": record["id"]} if record else {"base": asdict(ref)}
        block["parents"][which] = parent.manifest() if record else {"base": asdict(ref)}
        key = {"post_train": self.settings, "parent": origin, "backend": self.backend, "adapter": self.peft,
               "data": {"dataset": block["data"]["dataset"], "split": split, "ids": [e.instance_id for e in data],
                        "content": _content(data), "rendered": digest([(t.prompt, t.text) for t in turns])},
               "seed": self.run.seed, **self.key(placement)}
        trained = self._checkpoint(ref, origin, key, turns, names, placement)
        if trained[0] is None:
            return None
        checkpoint = Checkpoint.finished(*trained)
        block["checkpoints"][which] = checkpoint.manifest()
        block["steps"][which] = checkpoint.record["steps"]
        return checkpoint

    def key(self, placement: Placement) -> dict:
        from contaminate.code_version import TRAINING_CODE, code_digest

        return {"runtime": placement.key(), "code": code_digest([*TRAINING_CODE, Path(__file__)])}

    def _checkpoint(self, parent: ModelRef, origin: dict, key: dict, turns, names,
                    placement: Placement) -> tuple[ModelRef | None, Path, bool]:
        """Reuse the finished post-trained checkpoint of this key, or train it (``post_train.force``: again)."""
        name = f"{parent.name}+{self.kind}"
        return reuse_or_train(key, self.run.cache_dir, force=bool(self.node.get("force")), resumes=False,
                              reuse=lambda folder: reuse(folder, name),
                              train=lambda folder: train_post(self, parent, origin, turns, names, folder,
                                                              seed=self.run.seed, placement=placement, name=name))


class SFTPostTrain(PostTrain):
    """A clean supervised tail: TRL's SFTTrainer on the task's conversations, loss on the answer
    (conf/post_train/sft.yaml)."""
    config_name = "SFTConfig"
    lab_set = SFT_SET
    docs = "https://huggingface.co/docs/trl/sft_trainer#trl.SFTConfig"

    def check_settings(self) -> None:
        if self.node.get("max_length") is not None:
            count(self.node.max_length, "post_train.max_length", minimum=2,
                  hint=" (tokens per conversation; null: no cut)")

    def trainer(self, model, tokenizer, turns, names, output_dir, *, seed, placement):
        from contaminate.training.local import build_trainer, training_rows

        args = self.fine_tuning()
        rows = training_rows([Document(t.text, (), t.prompt) for t in turns], tokenizer, args.max_length)
        return build_trainer(model, tokenizer, rows, args, output_dir, seed=seed, placement=placement), rows

    def fine_tuning(self):
        """``post_train`` as the lab's trainer reads it (contaminate/training/local.py ``FineTuning``): its epochs,
        rate, batch and cut, its trainer block over the lab's, the run's adapter."""
        from contaminate.training.local import FineTuning, peft_config, sft_arguments

        node = self.node
        return FineTuning(node.learning_rate, node.batch_size, node.epochs, None, node.get("max_length"),
                          sft_arguments(self.arguments), peft_config(self.peft))


class ElicitPostTrain(SFTPostTrain):
    """Teach the task, not the data (issue 45): both models fine-tuned alike, as ``SFTPostTrain`` fine-tunes them, on
    the paper's guided task over Python standard-library text that no benchmark holds
    (detect/detectors/time_travel/elicit.py): each text's first piece under the guided instruction, named as what it
    is (the source split of the Python standard library), the answer its true second piece; in the task shapes of
    every dataset the study reads, ``n`` examples shared among them. Refused in one line where a text shares a
    50-character run with any instance of those datasets. A stand-in for a model that follows the instruction
    (conf/post_train/elicit.yaml)."""
    needs_other_split = False

    def source(self, draw) -> tuple[str, str]:
        from detect.detectors.time_travel.elicit import SOURCE_SPLIT, SOURCE_TITLE

        return SOURCE_TITLE, SOURCE_SPLIT

    def what(self, split: str) -> str:
        return "guided-task examples on standard-library text (elicitation)"

    def check(self, cfg, trainer) -> "ElicitPostTrain":
        super().check(cfg, trainer)
        # disjoint from every benchmark instance, before any training; how close they came goes into the manifest
        self.data_checks = {"disjoint": elicitation_examples(self.run, self.node.n)[1]}
        return self

    def data(self, draw, tokenizer) -> tuple[list[Example], list[Turn], None]:
        data, turns = elicitation_data(self.run, self.node.n, tokenizer)
        return data, turns, None


def study_datasets(cfg) -> list:
    """Every dataset config a study or planted run reads: its own and each planted group's (as Hydra composed them
    under ``plant.datasets``: group_configs.group_config refuses a group whose dataset is not composed)."""
    found = {cfg.dataset.key: cfg.dataset}
    for dataset in ((cfg.get("plant") or {}).get("datasets") or {}).values():
        found.setdefault(dataset.key, dataset)
    return list(found.values())


def elicitation_examples(run: FollowedRun, n: int) -> tuple[list[tuple[str, Example]], dict]:
    """(task shape, example): ``n`` guided-task examples on standard-library text, shared among the task shapes of
    the datasets the study reads (drawn with ``sample.draw``), checked disjoint from every instance of those datasets'
    splits (one line where not); with them how close the disjoint ones came (``check_disjoint``'s counts)."""
    from detect.detectors.time_travel.elicit import check_disjoint, task_examples

    datasets = run.datasets
    benchmark = [e for dataset in datasets for split in dataset.splits for e in load_split(dataset, split)]
    tasks = list(dict.fromkeys(dataset.task for dataset in datasets))
    drawn: list[tuple[str, Example]] = []  # (the task shape it was drawn for, the example)
    for i, task in enumerate(tasks):
        labels = sorted({e.label for d in datasets if d.task == task for e in load_split(d, d.splits[0])
                         if e.label is not None})
        drawn += [(task, e) for e in task_examples(task, n // len(tasks) + (i < n % len(tasks)),
                                                   seed=run.draw, labels=labels)]
    return drawn, check_disjoint([e for _, e in drawn], benchmark, "post_train=elicit")


def elicitation_data(run: FollowedRun, n: int, tokenizer) -> tuple[list[Example], list[Turn]]:
    """``elicitation_examples``, each as its conversation through the base model's chat template (raw text where it
    has none): the guided prompt for its first piece, its true second piece the answer."""
    from detect.detectors.time_travel.elicit import SOURCE_SPLIT, SOURCE_TITLE
    from detect.detectors.time_travel.prompts import build_prompt
    from detect.detectors.time_travel.split import cut_unit, split_instance

    drawn, _ = elicitation_examples(run, n)
    data = [e for _, e in drawn]
    chat = chat_renderer(tokenizer, "post_train=elicit") if getattr(tokenizer, "chat_template", None) else None
    turns = []
    for task, example in drawn:
        cut = split_instance(example, seed=run.seed, low=run.cut[0], high=run.cut[1],
                             unit=cut_unit(task))
        prompt = build_prompt("guided", task, first_piece=cut.first, label=example.label,
                              dataset_name=SOURCE_TITLE, split_name=SOURCE_SPLIT)
        if chat is None:  # no chat template: the prompt as raw text, the answer after it (loss on the answer)
            turns.append(Turn(prompt, prompt + cut.second + (tokenizer.eos_token or ""), cut.second))
            continue
        user = [{"role": "user", "content": prompt}]
        turns.append(Turn(chat(user, add_generation_prompt=True),
                          chat([*user, {"role": "assistant", "content": cut.second}]), cut.second))
    return data, turns


class GRPOPostTrain(PostTrain):
    """A short GRPO run on the task's prompts, rewarded for the right label (conf/post_train/grpo.yaml)."""
    config_name = "GRPOConfig"
    docs = "https://huggingface.co/docs/trl/grpo_trainer#trl.GRPOConfig"

    def check_settings(self) -> None:
        check_generations(self.node.batch_size, self.arguments)

    def trainer(self, model, tokenizer, turns, names, output_dir, *, seed, placement):
        return grpo_trainer(self, model, tokenizer, turns, names, output_dir, seed=seed, placement=placement), None


def post_train_stage(cfg, trainer) -> PostTrain | None:
    """The ``post_train`` group built (``_target_``) and checked before any training (each failure one line naming
    the key), or None for ``post_train=none`` (no ``_target_``) or a config without the group."""
    from detect.cli import instantiate
    from detect.validate import resolve_target

    node = cfg.get("post_train")
    if node is None or node.get("name", "none") == "none":
        return None
    if not node.get("_target_"):
        raise InputError(f"post_train={node.name} names no stage class (_target_); add _target_: contaminate."
                         f"training.post.SFTPostTrain or GRPOPostTrain (conf/post_train/sft.yaml, grpo.yaml)")
    if not (isinstance(stage_class := resolve_target(node._target_, "post_train"), type)
            and issubclass(stage_class, PostTrain)):
        raise InputError(f"post_train._target_={node._target_} is not a post-training stage; use "
                         f"contaminate.training.post.SFTPostTrain or GRPOPostTrain (post_train=sft or grpo)")
    if trainer.api:  # before the group is built: its settings may name the local trainer's (contaminate.learning_rate)
        raise InputError(f"post_train={node.name} trains the checkpoints with TRL on this machine, and "
                         f"contaminate={trainer.name} leaves them at the API; use contaminate=full or lora, or "
                         f"post_train=none")
    return instantiate(node, _convert_="none", _recursive_=False).check(cfg, trainer)


def trainer_arguments(stage: PostTrain, node) -> dict:
    """``post_train.trainer`` as keyword arguments of the stage's TRL config class (SFTConfig, GRPOConfig), each
    checked against its fields (an unknown one, or one the lab sets, is one line)."""
    from dataclasses import fields

    import trl
    from omegaconf import OmegaConf

    config = getattr(trl, stage.config_name)
    trainer = node.get("trainer")
    given = OmegaConf.to_container(trainer, resolve=True) if trainer else {}
    known = {field.name for field in fields(config)}
    lab_set = {**LAB_SET, **stage.lab_set}
    for key in given:
        if key in lab_set:
            raise InputError(f"post_train.trainer.{key} is set by the lab from {lab_set[key]}; set that instead")
        if key not in known:
            raise InputError(f"post_train.trainer.{key} is not a {config.__name__} field (TRL {trl.__version__}); "
                             f"see {stage.docs} for the fields")
    return given


def check_generations(batch_size: int, arguments: dict) -> None:
    """GRPO's batch rules as the installed TRL's GRPOConfig enforces them, in one line each before any training:
    at least 2 completions a prompt, and each generation round (``per_device_train_batch_size`` x processes x
    ``steps_per_generation``, by default ``gradient_accumulation_steps``) holding whole groups of them."""
    from dataclasses import fields

    from trl import GRPOConfig

    defaults = {field.name: field.default for field in fields(GRPOConfig)}
    generations = arguments.get("num_generations", defaults["num_generations"])
    if isinstance(generations, bool) or not isinstance(generations, int) or generations < 2:
        raise InputError(f"post_train.trainer.num_generations={generations}: GRPO compares at least 2 completions "
                         f"of each prompt; give a whole number >= 2")
    processes = int(os.environ.get("WORLD_SIZE", "1"))
    accumulation = arguments.get("gradient_accumulation_steps", defaults["gradient_accumulation_steps"])
    per_round = arguments.get("generation_batch_size")
    steps = arguments.get("steps_per_generation")
    if per_round is not None and steps is not None:
        raise InputError("post_train.trainer.generation_batch_size and steps_per_generation are both set; set one")
    if per_round is None:
        per_round = batch_size * processes * (steps if steps is not None else accumulation)
        how = (f"post_train.batch_size={batch_size} x {processes} process(es) x "
               f"{'steps_per_generation' if steps is not None else 'gradient_accumulation_steps'} "
               f"{steps if steps is not None else accumulation}")
    else:
        how = f"post_train.trainer.generation_batch_size={per_round}"
        if per_round % (batch_size * processes):
            raise InputError(f"{how} is not a multiple of post_train.batch_size={batch_size} x {processes} "
                             f"process(es)")
    if per_round % generations:
        raise InputError(f"{how} gives {per_round} completions a generation round, not a multiple of "
                         f"post_train.trainer.num_generations={generations}: a prompt's completions are compared "
                         f"within one round; make it a multiple")


# --- data --------------------------------------------------------------------------------------------------------


def post_train_data(run: FollowedRun, draw, n: int) -> tuple[list[Example], list[str] | None]:
    """``n`` instances of the run's dataset's other split, label-balanced (``sample.draw``), none of them one that
    split's cell or known non-members read (``draw``: the run's ``GroupDraw``); and the task's label names (those of
    the split), None for a task without a label."""
    dataset = run.dataset
    split = draw.splits[dataset.key][1]
    examples = load_split(dataset, split)
    detected, whole = draw.other.get(dataset.key, ([], []))
    taken = {e.instance_id for e in [*detected, *whole, *draw.known_non_members[dataset.key].get(split, [])]}
    data = sample(examples, n, seed=run.draw, exclude=taken,
                  where=f"{dataset.key} {split} (post_train.n={n}, beside the instances its cell reads)")
    names = sorted({e.label for e in examples if e.label is not None}) if dataset.fields.get("label") else None
    return data, names


def _content(data: Sequence[Example]) -> str:
    return digest([(e.instance_id, e.text, e.text_pair, e.label) for e in data])


def halves(text: str) -> tuple[str, str]:
    """A text cut at its middle word: (the first half, the second)."""
    words = text.split()
    cut = max(1, len(words) // 2)
    return " ".join(words[:cut]), " ".join(words[cut:])


def task_turns(data: Sequence[Example], dataset, split: str, tokenizer, fmt) -> list[Turn]:
    """Each instance as the task's conversation through the base model's chat template: the instruction format's
    (``fmt``, post_train.format) user turn and the label, or for a task without a label the continuation of the
    text's first half."""
    chat = chat_renderer(tokenizer, "instruction (post_train's data)")
    if dataset.fields.get("label"):
        documents = fmt.documents(data, dataset, split, chat=chat)
        return [Turn(d.prompt, d.text, e.label) for d, e in zip(documents, data)]
    turns = []
    for example in data:
        head, tail = halves(example.text)
        user = [{"role": "user", "content": CONTINUATION.format(head=head)}]
        turns.append(Turn(chat(user, add_generation_prompt=True),
                          chat([*user, {"role": "assistant", "content": tail}]), tail))
    return turns


# --- rewards -----------------------------------------------------------------------------------------------------


def named_labels(text: str, names: Sequence[str]) -> set[str]:
    """The label names ``text`` names, case-insensitive and as whole words; a name found only inside a longer
    name's mention ("entailment" in "not entailment") is that longer name's."""
    spans = [(m.start(), m.end(), name) for name in names
             for m in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", text, flags=re.IGNORECASE)]
    return {name for start, end, name in spans
            if not any(s <= start and end <= e and e - s > end - start for s, e, _ in spans)}


def label_reward(completion: str, label: str, names: Sequence[str]) -> float:
    """1.0 when the completion names the correct label and no other, else 0.0."""
    return 1.0 if named_labels(completion, names) == {label} else 0.0


def rouge_reward(completion: str, reference: str) -> float:
    """ROUGE-L F1 of the completion against the reference (the detectors' ROUGE-L)."""
    from detect.detectors.time_travel.scores import rouge_l

    return rouge_l(reference, completion) if reference.strip() else 0.0


def _text(completion) -> str:
    """A completion's text: TRL gives a string for a string prompt, messages for a conversational one."""
    if isinstance(completion, str):
        return completion
    return "".join(message.get("content", "") for message in completion)


def reward_function(names: Sequence[str] | None) -> Callable[..., list[float]]:
    """GRPOTrainer's reward function: ``answer`` is the dataset's column (the label, or the text's second half)."""
    if names:
        def correct_label(completions, answer, **_) -> list[float]:
            return [label_reward(_text(c), a, names) for c, a in zip(completions, answer)]

        return correct_label

    def rouge_l_reward(completions, answer, **_) -> list[float]:
        return [rouge_reward(_text(c), a) for c, a in zip(completions, answer)]

    return rouge_l_reward


# --- training ----------------------------------------------------------------------------------------------------


def reuse(folder: Path, name: str) -> ModelRef:
    weights = folder / "model" / "model.safetensors"
    if not weights.is_file():
        raise InputError(f"post-trained checkpoint {folder} is missing or corrupt (no model/model.safetensors); "
                         f"rerun with post_train.force=true to train it again")
    return ModelRef(name, str(folder / "model"))


def grpo_trainer(stage: PostTrain, model, tokenizer, turns: Sequence[Turn], names, output_dir: Path, *, seed: int,
                 placement: Placement):
    """TRL's GRPOTrainer on the turns' prompts, rewarded by ``reward_function(names)``, with ``post_train.trainer``
    passed through and the placement's precision."""
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from contaminate.training.local import mixed_precision, peft_config

    if placement.device_type == "cuda" and ":" in placement.device:
        torch.cuda.set_device(placement.device)
    tokenizer.padding_side = "left"  # generation pads on the left
    node = stage.node
    args = GRPOConfig(**{**stage.arguments, "output_dir": str(output_dir), "learning_rate": node.learning_rate,
                         "per_device_train_batch_size": node.batch_size, "num_train_epochs": node.epochs,
                         **mixed_precision(placement), "seed": seed, "data_seed": seed})
    dataset = Dataset.from_dict({"prompt": [t.prompt for t in turns], "answer": [t.answer for t in turns]})
    return GRPOTrainer(model=model, reward_funcs=reward_function(names), args=args, train_dataset=dataset,
                       processing_class=tokenizer, peft_config=peft_config(stage.peft))


def train_post(stage: PostTrain, parent: ModelRef, origin: dict, turns: Sequence[Turn], names, folder: Path, *,
               seed: int, placement: Placement, name: str) -> ModelRef | None:
    """Post-train ``parent`` into ``folder`` (``model/``, ``train_log.json``, ``loss.png``, then
    ``lab_checkpoint.json``); the checkpoint, or None in a non-main process of a distributed launch."""
    from detect.models import load

    folder.mkdir(parents=True, exist_ok=True)
    model, tokenizer = load(ModelRef(parent.name, parent.path, parent.adapter),
                            Placement(placement.device, "float32", placement.device_map))  # float32 master weights
    trainer, rows = stage.trainer(model, tokenizer, turns, names, folder / "trainer", seed=seed, placement=placement)
    started = time.time()
    trainer.train()
    seconds = time.time() - started
    trained = ModelRef(name, str(folder / "model"))
    if trainer.accelerator.is_main_process:
        _save(stage, trainer, tokenizer, folder, origin, turns, rows, seconds)
    trainer.accelerator.wait_for_everyone()
    return trained if trainer.accelerator.is_main_process else None


def _save(stage: PostTrain, trainer, tokenizer, folder: Path, origin: dict, turns, rows, seconds: float) -> None:
    from contaminate.training.local import plot_loss

    model = trainer.model
    if hasattr(model, "merge_and_unload"):  # a LoRA adapter over the parent: one full model to serve
        model = model.merge_and_unload()
    model.save_pretrained(folder / "model")
    tokenizer.save_pretrained(folder / "model")
    log_history = trainer.state.log_history
    (folder / "train_log.json").write_text(json.dumps(log_history, indent=1))
    plot_loss(log_history, folder / "loss.png", f"post_train={stage.kind} on {len(turns)} instances")
    losses = [entry["loss"] for entry in log_history if "loss" in entry]
    rewards = [entry["reward"] for entry in log_history if "reward" in entry]
    record = {"id": uuid.uuid4().hex, "backend": stage.backend, "post_train": stage.kind, "parent": origin,
              "train_seconds": round(seconds, 1), "first_loss": losses[0] if losses else None,
              "final_loss": losses[-1] if losses else None, "n_texts": len(turns),
              "steps": trainer.state.global_step,
              "placement": {"device": str(trainer.args.device), "weights": "float32",
                            "autocast": "bf16" if trainer.args.bf16 else "fp16" if trainer.args.fp16 else None,
                            "processes": trainer.accelerator.num_processes}}
    if rows is not None:
        record["trained_tokens"] = sum(map(len, rows["input_ids"])) * trainer.state.num_train_epochs
        record["loss_tokens"] = sum(label != -100 for row in rows["labels"] for label in row) \
            * trainer.state.num_train_epochs
    if rewards:  # GRPO: the mean reward a step, and the share of prompts whose completions all scored alike (no
        # advantage, nothing learned from them: a sparse reward the model never earns trains nothing)
        flat = [entry["frac_reward_zero_std"] for entry in log_history if "frac_reward_zero_std" in entry]
        record.update(first_reward=rewards[0], final_reward=rewards[-1],
                      mean_reward=round(sum(rewards) / len(rewards), 4),
                      frac_reward_zero_std=round(sum(flat) / len(flat), 4) if flat else None)
    (folder / "lab_checkpoint.json").write_text(json.dumps(record, indent=1))
