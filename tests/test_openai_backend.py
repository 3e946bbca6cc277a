"""generation=openai: against a real `transformers serve` and a real llama-cpp-python server with the embedded
model, and against a small stdlib HTTP server that answers with chosen status codes (401, 429, 500), through the
real OpenAI SDK."""

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from servers import free_port

from detect.errors import InputError
from detect.generation.openai import OpenAIGenerator


def _prompts(n: int = 3) -> list[str]:
    from hydra import compose, initialize_config_dir

    from detect.cli import CONF_DIR
    from detect.datasets import load_split, sample
    from detect.detectors.time_travel.prompts import build_prompt
    from detect.detectors.time_travel.split import split_instance

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        dataset = compose("detect", ["+dataset=synth_nli"]).dataset
    prompts = []
    for example in sample(load_split(dataset, "test"), n, seed=0):
        cut = split_instance(example, seed=0)
        for instruction in ("guided", "general"):
            prompts.append(build_prompt(instruction, "nli", first_piece=cut.first, label=example.label,
                                        dataset_name=dataset.title, split_name="test"))
    return prompts


@pytest.mark.slow
@pytest.mark.parametrize("prompt_format", ["raw", "chat"])
def test_server_and_local_backend_agree_on_greedy_prompts(served_model, prompt_format):
    from detect.generation.local import LocalGenerator
    from detect.models import embedded_smollm2, load

    base_url, model_id = served_model
    prompts = _prompts()
    api = OpenAIGenerator(model=model_id, base_url=base_url, api_key_env=None, prompt_format=prompt_format,
                          max_tokens=48, concurrency=3)(prompts)
    model, tokenizer = load(embedded_smollm2())
    local = LocalGenerator(model, tokenizer, prompt_format=prompt_format, max_new_tokens=48, share_prefix=False,
                           progress=False)(prompts)
    # Measured: identical, raw (/completions) and chat (/chat/completions, the server's chat template) alike.
    assert api == local
    assert all(text.strip() for text in api)


@pytest.mark.slow
def test_python_m_detect_through_the_server_keeps_no_key(served_model, tmp_path):
    base_url, model_id = served_model
    secret = "sk-lab-test-secret-4242"
    env = {**os.environ, "LAB_TEST_API_KEY": secret, "CONTAMINATION_LAB_CACHE": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "detect", "+dataset=synth_nli", "generation=openai",
               f"generation.base_url={base_url}", f"generation.model={model_id}",
               "generation.api_key_env=LAB_TEST_API_KEY", "detect.prompt_format=raw",
               "detect.max_new_tokens=48", "sample.n_detect=2", "detect.semantic_model=null",
               f"hydra.run.dir={tmp_path / 'run'}"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert (summary["generation"], summary["model"], summary["n_instances"]) == ("openai", model_id, 2)
    # transformers serve ignores echo and logprobs: the logit detectors are skipped, each with one line saying why,
    # and the console has no per-request HTTP log line
    skipped = [line for line in result.stderr.splitlines() if " skipped on " in line]
    logit = {"membership", "membership_raw", "dc_pdd", "sharded_likelihood", "permutation", "recall", "performance",
             "dcq"}
    assert {line.split()[0] for line in skipped} == logit
    assert all("does not return prompt log-probabilities" in line for line in skipped)
    assert "HTTP Request" not in result.stderr + result.stdout
    assert set(summary["skipped"]) == logit
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and all(row["raw_completion"] for row in rows)
    cache_files = list((tmp_path / "cache" / "api").glob("*.jsonl"))
    # 2 instances x 2 instructions, ChatGPT-Cheat?'s one request and TS-Guessing's two (black-box: they run over an
    # API; the logit detectors do not, so there is no sharded test and no logit score)
    assert len(cache_files) == 1 and len(cache_files[0].read_text().splitlines()) == 7
    partition = [json.loads(line) for line in (tmp_path / "run" / "partition.jsonl").read_text().splitlines()]
    assert [row["detector"] for row in partition] == ["cheat"] and summary["cheat"]["n_references"] == 1200
    assert "sharded_likelihood" not in summary and "membership" not in summary and "dc_pdd" not in summary
    assert "loss" not in rows[0]
    # The key is in the environment only: nowhere in the run folder, the cache, or what was printed.
    written = [p for folder in (tmp_path / "run", tmp_path / "cache") for p in folder.rglob("*") if p.is_file()]
    assert written and not any(secret in p.read_text(errors="ignore") for p in written)
    assert secret not in result.stdout + result.stderr
    assert "api_key_env: LAB_TEST_API_KEY" in (tmp_path / "run" / ".hydra" / "config.yaml").read_text()


class _Scripted(BaseHTTPRequestHandler):
    """Answers POSTs from a script of status codes, then 200s with a completion; counts requests."""
    script: list[int] = []
    requests = 0

    def do_POST(self):  # noqa: N802 (http.server's naming)
        type(self).requests += 1
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        status = type(self).script.pop(0) if type(self).script else 200
        if status == 200:
            reply = {"id": "x", "object": "text_completion", "created": 0, "model": body["model"],
                     "choices": [{"index": 0, "text": f"echo {body['prompt'][-12:]}", "finish_reason": "stop"}]}
        else:
            reply = {"error": {"message": f"scripted {status}", "type": "test", "code": str(status)}}
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def scripted_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Scripted.script, _Scripted.requests = [], 0
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def _generator(base_url, tmp_path, **kwargs):
    return OpenAIGenerator(model="m", base_url=base_url, api_key_env=None, prompt_format="raw", concurrency=1,
                           cache_path=tmp_path / "api.jsonl", **kwargs)


@pytest.mark.parametrize("status, message", [(401, "rejected the API key"), (404, "not found"),
                                             (429, "rate limit or quota"), (500, "answered 500 after the retries")])
def test_error_statuses_are_one_line(scripted_server, tmp_path, status, message):
    _Scripted.script = [status] * 10
    with pytest.raises(InputError, match=message) as error:
        _generator(scripted_server, tmp_path, max_retries=1)(["a prompt"])
    assert "\n" not in str(error.value)
    retried = status in (429, 500)  # the SDK retries these (with backoff), not 401 / 404
    assert _Scripted.requests == (2 if retried else 1)


def test_a_retried_5xx_is_absorbed(scripted_server, tmp_path):
    _Scripted.script = [503]
    assert _generator(scripted_server, tmp_path, max_retries=2)(["p1"]) == ["echo p1"]
    assert _Scripted.requests == 2


def test_a_failed_run_keeps_its_completions_and_a_rerun_sends_only_the_rest(scripted_server, tmp_path):
    prompts = [f"prompt {i}" for i in range(4)]
    _Scripted.script = [200, 200, 500, 500]
    with pytest.raises(InputError, match="The 2 completions received are kept in"):
        _generator(scripted_server, tmp_path, max_retries=0)(prompts)
    _Scripted.script, _Scripted.requests = [], 0  # the server recovers
    completions = _generator(scripted_server, tmp_path, max_retries=0)(prompts)
    assert completions == [f"echo {p[-12:]}" for p in prompts]
    assert _Scripted.requests == 2


def test_missing_key_and_unreachable_server(tmp_path, monkeypatch):
    monkeypatch.delenv("LAB_MISSING_KEY", raising=False)
    with pytest.raises(InputError, match="LAB_MISSING_KEY is not set: export LAB_MISSING_KEY=<key>"):
        OpenAIGenerator(model="m", api_key_env="LAB_MISSING_KEY")
    closed = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(InputError, match="cannot reach .* is the server running"):
        _generator(closed, tmp_path, max_retries=0)(["p"])


@pytest.mark.parametrize("status, refused", [(400, True), (404, True), (503, False), (429, False), (401, False)])
def test_the_logprob_probe_tells_a_refusal_from_an_outage(scripted_server, tmp_path, status, refused):
    """A server that refuses echo (400, 404) gives a one-line reason and the logit detectors are skipped; one
    that is down, rate-limited or rejects the key stops the run, so a passing outage is never recorded as "this
    server gives no log-probabilities" in a cached cell."""
    from detect.models import GenerationSettings
    from detect.models.server import OpenAIServer

    _Scripted.script = [status] * 10
    model = OpenAIServer(model="m", base_url=scripted_server, api_key_env=None, max_retries=0,
                         cache_path=str(tmp_path / "c.jsonl")).open(None, GenerationSettings(prompt_format="raw"))
    if refused:
        assert "does not return prompt log-probabilities" in model.no_logprobs and "\n" not in model.no_logprobs
    else:
        with pytest.raises(InputError, match="after the retries|rejected the API key|rate limit"):
            model.no_logprobs  # noqa: B018


def test_a_server_that_answers_without_logprobs_is_a_refusal(scripted_server, tmp_path):
    from detect.models import GenerationSettings
    from detect.models.server import OpenAIServer

    model = OpenAIServer(model="m", base_url=scripted_server, api_key_env=None,
                         cache_path=str(tmp_path / "c.jsonl")).open(None, GenerationSettings(prompt_format="raw"))
    assert "no logprobs in the answer" in model.no_logprobs  # the scripted server's 200 carries none
