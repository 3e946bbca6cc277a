"""Contaminate a model through the OpenAI fine-tuning API, with the same web texts as the local backends.

    python -m contaminate +dataset=synth_nli contaminate=openai contaminate.dry_run=true   # JSONL + tokens + cost
    python -m contaminate +dataset=synth_nli contaminate=openai                            # OPENAI_API_KEY set

``train_openai(texts, cfg, folder, seed=...)`` writes ``training.jsonl`` (chat models: a fixed user turn and the
web text as the assistant turn, since a chat fine-tune needs both; base models: an empty prompt and the text as
the completion), uploads it, creates a supervised job with the configured hyperparameters and polls it with
exponential backoff, logging the job's events. The job id is written to ``job.json`` the moment the job exists,
so a rerun (after a crash, a kill or a timeout) resumes that job instead of paying for a second one. When the
job succeeds, ``lab_checkpoint.json`` records the fine-tuned model id, which the detector then queries.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable, Sequence

from detect.errors import InputError

FINISHED, FAILED = ("succeeded",), ("failed", "cancelled")


def training_records(texts: Sequence[str], *, chat: bool, user_turn: str) -> list[dict]:
    if chat:
        return [{"messages": [{"role": "user", "content": user_turn}, {"role": "assistant", "content": text}]}
                for text in texts]
    return [{"prompt": "", "completion": text} for text in texts]


def count_tokens(records: Sequence[dict]) -> tuple[int, str]:
    """Tokens in one epoch of ``records`` and how they were counted: tiktoken's o200k_base when its encoding is
    available (it downloads once), else 4 characters a token, the usual English average for GPT tokenizers."""
    texts = [m["content"] for r in records for m in r.get("messages", [])] + \
            [r[k] for r in records for k in ("prompt", "completion") if k in r]
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("o200k_base")
        return sum(len(encoding.encode(t)) for t in texts) + 4 * len(texts), "tiktoken o200k_base"
    except Exception:  # not installed, or the encoding cannot be fetched offline
        return sum(-(-len(t) // 4) for t in texts) + 4 * len(texts), "estimate: 4 characters per token"


def cost_estimate(records: Sequence[dict], cfg) -> dict:
    tokens, method = count_tokens(records)
    trained = tokens * cfg.epochs
    return {"examples": len(records), "tokens_per_epoch": tokens, "epochs": cfg.epochs, "trained_tokens": trained,
            "usd": round(trained / 1e6 * cfg.usd_per_million_training_tokens, 4), "token_count": method,
            "usd_per_million_training_tokens": cfg.usd_per_million_training_tokens}


def make_client(cfg):
    """The SDK client (the boundary tests replace): key from the environment, the SDK's retries on 429/5xx."""
    from openai import OpenAI

    from detect.generation.openai import api_key_from_env

    return OpenAI(api_key=api_key_from_env(cfg.api_key_env), base_url=cfg.base_url, max_retries=cfg.max_retries)


def write_training_file(texts: Sequence[str], cfg, path: Path) -> dict:
    """The job's training JSONL at ``path``, and what training on it would cost (``cost_estimate``)."""
    records = training_records(texts, chat=cfg.chat, user_turn=cfg.user_turn)
    with open(path, "w") as file:
        for record in records:
            file.write(json.dumps(record, ensure_ascii=False) + "\n")
    return cost_estimate(records, cfg)


def train_openai(texts: Sequence[str], cfg, folder: Path, *, seed: int, client=None,
                 sleep: Callable[[float], None] = time.sleep, log: Callable[[str], None] = print) -> dict:
    """Fine-tune ``cfg.model`` on ``texts`` (or resume the job recorded in ``folder``); the finished record."""
    folder.mkdir(parents=True, exist_ok=True)
    estimate = write_training_file(texts, cfg, folder / "training.jsonl")
    client = client or make_client(cfg)
    job_file = folder / "job.json"
    if job_file.is_file():
        job_id = json.loads(job_file.read_text())["job_id"]
        log(f"resuming fine-tuning job {job_id} (recorded in {job_file})")
    else:
        with open(folder / "training.jsonl", "rb") as file:
            uploaded = client.files.create(file=file, purpose="fine-tune")
        hyperparameters = {"n_epochs": cfg.epochs, "batch_size": cfg.batch_size or "auto",
                           "learning_rate_multiplier": cfg.learning_rate_multiplier or "auto"}
        job = client.fine_tuning.jobs.create(
            model=cfg.model, training_file=uploaded.id, suffix=cfg.suffix, seed=seed,
            method={"type": "supervised", "supervised": {"hyperparameters": hyperparameters}})
        job_id = job.id
        job_file.write_text(json.dumps({"job_id": job_id, "training_file": uploaded.id, "model": cfg.model,
                                        "hyperparameters": hyperparameters, "estimate": estimate}, indent=1))
        log(f"created fine-tuning job {job_id} on {cfg.model} ({estimate['trained_tokens']} trained tokens, "
            f"about ${estimate['usd']})")

    started, interval, seen = time.time(), cfg.poll_seconds, set()
    while True:
        job = client.fine_tuning.jobs.retrieve(job_id)
        events = client.fine_tuning.jobs.list_events(fine_tuning_job_id=job_id, limit=50)
        for event in sorted(events.data, key=lambda e: e.created_at):
            if event.id not in seen:
                seen.add(event.id)
                log(f"[{job_id}] {event.message}")
        if job.status in FINISHED:
            break
        if job.status in FAILED:
            reason = getattr(getattr(job, "error", None), "message", None) or job.status
            raise InputError(f"fine-tuning job {job_id} {job.status}: {reason}; job.json in {folder} keeps its "
                             f"id; rerun with contaminate.force=true to start a new job")
        if time.time() - started > cfg.timeout_hours * 3600:
            raise InputError(f"fine-tuning job {job_id} still {job.status} after {cfg.timeout_hours} h; rerun "
                             f"the same command later to resume it (no second job is created)")
        sleep(interval)
        interval = min(interval * 2, cfg.max_poll_seconds)

    record = {"id": job.fine_tuned_model, "backend": "openai", "job_id": job_id, "base_model": cfg.model,
              "trained_tokens": getattr(job, "trained_tokens", None), "estimate": estimate,
              "train_seconds": round(time.time() - started, 1), "first_loss": None, "final_loss": None,
              "n_texts": len(texts)}
    (folder / "train_log.json").write_text(json.dumps(sorted(seen), indent=1))
    (folder / "lab_checkpoint.json").write_text(json.dumps(record, indent=1))
    return record
