import os

# The hub cannot be reached here; offline mode makes hub attempts fail at once instead of retrying for 25 s.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# runtime auto: float32 on every CPU, so that the suite's numbers do not depend on whether the CPU that runs it
# has native bf16 (detect/runtime.py; tests/test_runtime.py checks the bf16 choice with the variable unset)
os.environ.setdefault("LAB_AUTO_CPU_BF16", "0")
# Under pytest-xdist (-n N) the workers share the cores: each worker, and the studies it starts, computes on
# cores / N threads, so that N workers never ask for more threads than there are cores (oversubscribed OpenMP
# threads spin against each other: two 2-thread jobs on 2 cores ran ~6x slower, not 2x)
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    os.environ.setdefault("OMP_NUM_THREADS",
                          str(max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))))

import sys  # noqa: E402

import pytest  # noqa: E402
from hydra import compose, initialize_config_dir  # noqa: E402
from servers import free_port, pytest_runtest_makereport, serving  # noqa: E402, F401 (the hook: servers.py)

from detect.cli import CONF_DIR  # noqa: E402


@pytest.fixture
def compose_config():
    """compose_config("detect", ["+dataset=synth_nli", ...]) -> the composed DictConfig."""

    def _compose(config_name: str, overrides: list[str]):
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            return compose(config_name=config_name, overrides=overrides)

    return _compose


@pytest.fixture(scope="session")
def served_model(tmp_path_factory):
    """`transformers serve` on loopback with the embedded model: (base_url, model id). Up in ~6 s here."""
    from detect.models import embedded_smollm2

    ref, port = embedded_smollm2(), free_port()
    command = [sys.executable, "-m", "transformers.cli.transformers", "serve", "--host", "127.0.0.1", "--port",
               str(port), ref.path]
    with serving("transformers serve", command, port, "/health", tmp_path_factory.mktemp("serve")) as base_url:
        yield base_url, ref.path


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory):
    """llama-cpp-python's OpenAI-compatible server on loopback with the embedded GGUF file: (base_url, model id)."""
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] is in the dev extra")
    from detect.models.loading import EMBEDDED_GGUF, embedded_gguf_folder

    port = free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(embedded_gguf_folder() / EMBEDDED_GGUF),
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--logits_all", "true",
               "--model_alias", "smollm2"]
    with serving("llama_cpp.server", command, port, "/v1/models", tmp_path_factory.mktemp("llama")) as base_url:
        yield base_url, "smollm2"
