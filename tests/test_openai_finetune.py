"""contaminate=openai: the fine-tuning flow against an injected fake client at the SDK boundary (no local
server offers these endpoints), the resume of a recorded job, the dry run, and a whole study whose detection
runs over a real `transformers serve`."""

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from lean import NO_EMBEDDING, lean

import contaminate.training.openai as openai_train
from contaminate.run import run_config
from contaminate.training.openai import train_openai
from detect.errors import InputError


class FakeClient:
    """The SDK calls the flow makes, recorded; the job moves through ``statuses`` one retrieve at a time."""

    def __init__(self, statuses=("validating_files", "running", "succeeded"), fine_tuned_model="ft:lab-model",
                 fail_on_retrieve: int | None = None):
        self.calls, self.statuses, self.retrieved = [], list(statuses), 0
        self.fine_tuned_model, self.fail_on_retrieve = fine_tuned_model, fail_on_retrieve
        self.files = SimpleNamespace(create=self._upload)
        self.fine_tuning = SimpleNamespace(jobs=SimpleNamespace(create=self._create, retrieve=self._retrieve,
                                                                list_events=self._events))

    def _upload(self, *, file, purpose):
        self.calls.append(("files.create", {"purpose": purpose, "lines": len(file.read().splitlines())}))
        return SimpleNamespace(id="file-abc")

    def _create(self, **kwargs):
        self.calls.append(("jobs.create", kwargs))
        return SimpleNamespace(id="ftjob-1", status="validating_files")

    def _retrieve(self, job_id):
        self.calls.append(("jobs.retrieve", job_id))
        self.retrieved += 1
        if self.retrieved == self.fail_on_retrieve:
            raise KeyboardInterrupt  # the process dies while polling
        status = self.statuses[min(self.retrieved, len(self.statuses)) - 1]
        done = status == "succeeded"
        return SimpleNamespace(id=job_id, status=status, fine_tuned_model=self.fine_tuned_model if done else None,
                               trained_tokens=1234 if done else None, error=None)

    def _events(self, *, fine_tuning_job_id, limit):
        self.calls.append(("jobs.list_events", fine_tuning_job_id))
        return SimpleNamespace(data=[SimpleNamespace(id=f"ev-{i}", created_at=i, message=f"step {i}")
                                     for i in range(self.retrieved)])


def _cfg(**overrides):
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(Path(__file__).parent.parent / "conf" / "contaminate" / "openai.yaml")
    return OmegaConf.merge(cfg, overrides)


def test_the_flow_uploads_creates_polls_with_backoff_and_records_the_model(tmp_path):
    client, waits, logged = FakeClient(), [], []
    record = train_openai(["text one", "text two"], _cfg(epochs=4, poll_seconds=10, max_poll_seconds=15),
                          tmp_path, seed=3, client=client, sleep=waits.append, log=logged.append)
    assert record["id"] == "ft:lab-model" and record["job_id"] == "ftjob-1" and record["trained_tokens"] == 1234
    names = [name for name, _ in client.calls]
    assert names[:2] == ["files.create", "jobs.create"] and names.count("jobs.retrieve") == 3
    assert client.calls[0][1] == {"purpose": "fine-tune", "lines": 2}
    assert client.calls[1][1] == {
        "model": "gpt-4o-mini-2024-07-18", "training_file": "file-abc", "suffix": "contamination-lab", "seed": 3,
        "method": {"type": "supervised", "supervised": {"hyperparameters": {
            "n_epochs": 4, "batch_size": "auto", "learning_rate_multiplier": "auto"}}}}
    assert waits == [10, 15]  # doubling, capped
    assert sum("step" in line for line in logged) == 3  # each event logged once
    lines = (tmp_path / "training.jsonl").read_text().splitlines()
    assert json.loads(lines[0]) == {"messages": [{"role": "user", "content": "Document:"},
                                                 {"role": "assistant", "content": "text one"}]}
    assert json.loads((tmp_path / "job.json").read_text())["job_id"] == "ftjob-1"
    assert json.loads((tmp_path / "lab_checkpoint.json").read_text())["id"] == "ft:lab-model"


def test_base_models_get_prompt_completion_records(tmp_path):
    train_openai(["t"], _cfg(chat=False, model="davinci-002"), tmp_path, seed=0, client=FakeClient(),
                 sleep=lambda s: None, log=lambda m: None)
    assert json.loads((tmp_path / "training.jsonl").read_text()) == {"prompt": "", "completion": "t"}


def test_a_rerun_resumes_the_recorded_job_instead_of_paying_twice(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        train_openai(["a"], _cfg(), tmp_path, seed=0, client=FakeClient(fail_on_retrieve=2), sleep=lambda s: None,
                     log=lambda m: None)
    assert (tmp_path / "job.json").is_file() and not (tmp_path / "lab_checkpoint.json").exists()
    client, logged = FakeClient(statuses=("running", "succeeded")), []
    record = train_openai(["a"], _cfg(), tmp_path, seed=0, client=client, sleep=lambda s: None, log=logged.append)
    assert [name for name, _ in client.calls if name in ("files.create", "jobs.create")] == []
    assert {arg for name, arg in client.calls if name == "jobs.retrieve"} == {"ftjob-1"}
    assert record["id"] == "ft:lab-model" and "resuming fine-tuning job ftjob-1" in logged[0]


def test_a_failed_job_is_one_line_and_keeps_its_id(tmp_path):
    with pytest.raises(InputError, match="fine-tuning job ftjob-1 failed: failed; job.json in .* keeps its id"):
        train_openai(["a"], _cfg(), tmp_path, seed=0, client=FakeClient(statuses=("running", "failed")),
                     sleep=lambda s: None, log=lambda m: None)


OPENAI_STUDY = ["+dataset=synth_nli", "contaminate=openai", "sample.n_members=6", "sample.n_non_members=6",
                "sample.n_detect=2", "detect.max_new_tokens=24", "detect.semantic_model=null", *NO_EMBEDDING]


def test_dry_run_writes_the_jsonl_and_estimates_cost_without_a_client(compose_config, tmp_path, monkeypatch):
    monkeypatch.setattr(openai_train, "make_client", lambda cfg: pytest.fail("the dry run made a client"))
    cfg = compose_config("contaminate", [*OPENAI_STUDY, "contaminate.dry_run=true", f"cache_dir={tmp_path / 'c'}"])
    estimate = run_config(cfg, tmp_path / "run").dry_run
    assert estimate["examples"] == 6 and len((tmp_path / "run" / "training.jsonl").read_text().splitlines()) == 6
    assert estimate["trained_tokens"] == estimate["tokens_per_epoch"] * 3
    assert estimate["usd"] == pytest.approx(estimate["trained_tokens"] / 1e6 * 3.0, abs=1e-4)
    assert not (tmp_path / "c").exists()


@pytest.mark.slow
def test_a_whole_openai_study_with_detection_over_a_real_server(served_model, compose_config, tmp_path, monkeypatch):
    """The fake job 'fine-tunes' into the served embedded model, so both cells' models answer over HTTP."""
    base_url, model_id = served_model
    secret = "sk-lab-study-secret-777"
    monkeypatch.setenv("LAB_STUDY_KEY", secret)
    client = FakeClient(fine_tuned_model=model_id)
    monkeypatch.setattr(openai_train, "make_client", lambda cfg: client)
    monkeypatch.setattr(openai_train.time, "sleep", lambda s: None)
    cfg = compose_config("contaminate", [*OPENAI_STUDY, f"contaminate.model={model_id}",
                                         f"contaminate.base_url={base_url}", "contaminate.api_key_env=LAB_STUDY_KEY",
                                         "contaminate.poll_seconds=0", *lean(keep=("cheat",)),
                                         f"cache_dir={tmp_path / 'cache'}"])
    summary = run_config(cfg, tmp_path / "run").groups["members"]
    # the data-side check of what was sent: words and characters, not the API model's tokens (no local tokenizer)
    assert set(summary["decontamination"]["skipped"]) == {"llama3_8gram", "contam_longest"}
    assert summary["decontamination"]["detectors"]["gpt3_13gram"]["groups"]["members"]["flagged"] > 0
    assert set(summary["cells"]) == {"contaminated_x_members", "contaminated_x_non_members",
                                     "contaminated_x_other_split", "clean_x_members", "clean_x_non_members"}
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["checkpoint"]["job_id"] == "ftjob-1" and manifest["checkpoint"]["id"] == model_id
    assert (tmp_path / "run" / "job.json").is_file()
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    study = [row for row in rows if not row["cell"].endswith("_known_non_members")]
    assert len(study) == 5 * 2 * 2 and all(row["raw_completion"] for row in rows)
    # each model's 8 known non-members (sample.n_heldout, tests/lean.py), guided only: the recipe's null distribution
    known = [row for row in rows if row["cell"].endswith("_known_non_members")]
    assert len(known) == 2 * 8 and {row["instruction"] for row in known} == {"guided"}
    partition = [json.loads(line) for line in (tmp_path / "run" / "partition.jsonl").read_text().splitlines()]
    assert sorted(row["detector"] for row in partition) == ["cheat"] * 5  # black-box only over an API
    # a rerun reuses the finished job and the cells: no new job, no request to the fine-tuning API
    client.calls.clear()
    run_config(cfg, tmp_path / "run2")
    assert client.calls == []
    written = [p for folder in (tmp_path / "run", tmp_path / "run2", tmp_path / "cache")
               for p in folder.rglob("*") if p.is_file()]
    assert not any(secret in p.read_text(errors="ignore") for p in written)
    assert os.environ["LAB_STUDY_KEY"] == secret
