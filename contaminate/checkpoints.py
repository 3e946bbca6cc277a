"""The checkpoint store: where a trained model lives, how it is keyed, reused or (re)trained.

A checkpoint lives in ``<cache_dir>/checkpoints/<digest of its key>/``, its key beside it as ``<digest>.json``
(written before training starts, so a folder can always be traced to what made it), and ``lab_checkpoint.json``
inside it written last by the trainer: a folder with that file is finished and reused, a folder without it was
killed mid-way and is trained again (from scratch, or resumed by a trainer that ``resumes``). The key is whatever
determines the weights (contaminate/stages.py says what the study's holds; training/post.py the post-training
stage's); ``force`` trains again regardless. Every training stage of the lab (the study's contaminated model and
control, a planted run's model and twin, post-training) goes through ``reuse_or_train``.

Two runs on one cache (two terminals, a Hydra multirun's parallel jobs): a checkpoint is trained under a lock,
``<digest>.lock`` beside its folder (an OS file lock: released when its process ends, killed or not), so the second
run waits for the first and then reuses what it finished, instead of both training into one folder. Everything else
the lab caches (cells, converted models, corpora) is written to a temporary sibling and renamed: two runs computing
it at once each write a whole file, never half of one.

Distributed launches (``accelerate launch``, ``torchrun``): only the main process takes the lock and clears and
prepares the folder; every process trains (the Trainer runs data-parallel) once it is ready, and only the main
process saves.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from filelock import FileLock, Timeout

from detect.cache import digest
from detect.models import ModelRef
from detect.runtime import Placement, release_freed_memory

FINISHED = "lab_checkpoint.json"  # written last by every trainer: its record (id, steps, losses, ...)
log = logging.getLogger(__name__)


def is_main_process() -> bool:
    """False in the other processes of a distributed launch (accelerate launch, torchrun): they only train."""
    return int(os.environ.get("RANK", "0")) == 0


def wait_for_everyone() -> None:
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        from accelerate import PartialState

        PartialState().wait_for_everyone()


def checkpoint_folder(cache_dir: str | Path, key: dict) -> Path:
    return Path(cache_dir) / "checkpoints" / digest(key)


def write_key(folder: Path, key: dict) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    (folder.parent / f"{folder.name}.json").write_text(json.dumps(key, indent=1, default=str))


def checkpoint_record(folder: Path) -> dict:
    """A finished checkpoint's record (``lab_checkpoint.json``)."""
    return json.loads((Path(folder) / FINISHED).read_text())


@dataclass(frozen=True)
class Checkpoint:
    """A model a study reads and how it came about: a trained checkpoint (its folder, whether this run reused it,
    its ``lab_checkpoint.json`` record), or the base model itself (``folder``, ``reused`` and ``record`` None)."""
    model: ModelRef
    folder: Path | None = None
    reused: bool | None = None
    record: dict | None = None

    @classmethod
    def finished(cls, model: ModelRef, folder: Path, reused: bool) -> Checkpoint:
        """A finished checkpoint, its record read from its folder."""
        return cls(model, folder, reused, checkpoint_record(folder))

    def manifest(self) -> dict:
        """The manifest's block: the folder, whether it was reused, and the record's fields."""
        return {"folder": str(Path(self.folder).resolve()), "reused": self.reused, **self.record}


@contextlib.contextmanager
def training_lock(folder: Path) -> Iterator[None]:
    """Held while ``folder`` is prepared and trained (the main process only): another run that needs the same
    checkpoint waits here, then finds it finished."""
    if not is_main_process():
        yield
        return
    folder.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(folder.parent / f"{folder.name}.lock")
    try:
        lock.acquire(timeout=0)
    except Timeout:
        log.info("waiting for %s: another run is training it (lock %s)", folder, lock.lock_file)
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def reuse_or_train(key: dict, cache_dir: str | Path, *, force: bool, resumes: bool,
                   reuse: Callable[[Path], ModelRef], train: Callable[[Path], ModelRef | None],
                   ) -> tuple[ModelRef | None, Path, bool]:
    """(model, folder, reused): the finished checkpoint of ``key`` reused, or ``train(folder)`` into a folder made
    ready for it (cleared first when forced, or when a killed run left it and the trainer does not resume), under
    the folder's lock. The model is None in a non-main process of a distributed launch (it trained; the main process
    goes on)."""
    folder = checkpoint_folder(cache_dir, key)
    if (folder / FINISHED).is_file() and not force:
        return reuse(folder), folder, True
    with training_lock(folder):
        # decided under the lock: a run that held it may have finished this checkpoint while this one waited
        if is_main_process() and (force or not (folder / FINISHED).is_file()):
            if folder.exists() and (force or not resumes):
                shutil.rmtree(folder)
            write_key(folder, key)
            folder.mkdir(parents=True, exist_ok=True)
        wait_for_everyone()  # the other processes of a distributed launch train once the folder is ready
        if (folder / FINISHED).is_file():  # finished by the run this one waited for (force cleared it above)
            return reuse(folder), folder, True
        log.info("training %s", folder)
        model = train(folder)
    # The trainer (the model, its gradients and optimizer state: ~2 GB for the embedded model) is held in reference
    # cycles until Python's occasional full collection: freed now, and handed back to the system, so that detection
    # starts from what it needs, not from training's high-water mark
    release_freed_memory()
    return model, folder, False


def train_checkpoint(trainer, base: ModelRef, documents: list, key: dict, *, cache_dir: str | Path, force: bool,
                     seed: int, placement: Placement) -> tuple[ModelRef | None, Path, bool]:
    """A contaminate/training trainer's checkpoint of ``documents`` on ``base`` in the store under ``cache_dir``,
    reused where finished (``force``: trained again, ``contaminate.force``)."""
    return reuse_or_train(key, cache_dir, force=bool(force), resumes=trainer.resumes,
                          reuse=lambda folder: trainer.reuse(base, folder),
                          train=lambda folder: trainer.train(base, documents, folder, seed=seed, placement=placement))
