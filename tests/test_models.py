"""The one model interface: the local backend, the server backend against real servers, and what a detector does
with a model that cannot give what it needs."""

from types import SimpleNamespace

import pytest

from detect.models import GenerationSettings, build_backend
from detect.models.server import COPY_CHECK, OpenAIServer, prompt_logprobs


def test_prompt_logprobs_of_an_echoed_completion_by_hand():
    """OpenAI-format echo answers: the scored tokens are the text's own that have a log-probability; what follows
    the text (the one generated token) is dropped."""
    text = "The cat sat."
    # vLLM with a start token: its offsets count "<s>" (ggml / vLLM issue 5334's answer has the same shape), and the
    # first text token is scored given the start token, as the local path scores a tokenizer that adds one
    tokens, logprobs = ["<s>", "The", " cat", " sat", ".", " It"], [None, -3.0, -5.5, -1.25, -0.5, -2.0]
    found = prompt_logprobs(text, tokens, logprobs, [0, 3, 6, 10, 14, 15])
    # offsets: where each scored token starts in the text (what continuation_logprobs cuts a context off by)
    assert found == {"logp": [-3.0, -5.5, -1.25, -0.5], "tokens": ["The", " cat", " sat", "."],
                     "offsets": [0, 3, 7, 11]}
    # no start token: the first text token has no context and no log-probability
    found = prompt_logprobs(text, tokens[1:], [None, -5.5, -1.25, -0.5, -2.0], [0, 3, 7, 11, 12])
    assert found["logp"] == [-5.5, -1.25, -0.5] and found["offsets"] == [3, 7, 11]
    from detect.models.base import continuation

    assert continuation(found, len("The cat")) == {"logp": [-1.25, -0.5], "tokens": [" sat", "."], "offsets": [7, 11]}
    # byte tokens whose strings are not the text: the server's offsets are used
    found = prompt_logprobs("ab", ["bytes:a", "bytes:b", "x"], [None, -1.0, -2.0], [0, 1, 2])
    assert found["logp"] == [-1.0]


def test_one_factory_builds_every_backend_and_refuses_in_one_line():
    from detect.errors import InputError
    from detect.models.hf import LocalModels

    assert isinstance(build_backend({"_target_": "detect.models.hf.LocalModels", "name": "local"}), LocalModels)
    server = build_backend({"_target_": "detect.models.server.OpenAIServer", "name": "openai", "model": "m"})
    assert isinstance(server, OpenAIServer) and server.model == "m"
    with pytest.raises(InputError, match="generation openai has no _target_"):
        build_backend({"name": "openai"})
    with pytest.raises(InputError, match="generation.logprobs=maybe: use echo"):
        OpenAIServer(model="m", base_url="http://127.0.0.1:9/v1", api_key_env=None, logprobs="maybe").open(
            None, GenerationSettings())


# Built as the README and .ci/run install it (CMAKE_ARGS="-DGGML_NATIVE=OFF": x86-64 with AVX2, no AVX-512, no AMX):
# a native build on a CPU with AMX segfaulted in decode on the echo + logprobs completion (issue 46; llama.cpp's
# tracker has AMX crashes, ggml-org/llama.cpp#11115), so CI would fail on that kind of machine.
NOT_EVERY_CPU = ("AVX512", "AMX")


def test_llama_cpp_is_built_for_every_cpu_not_this_one():
    llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python[server] is in the dev extra")
    features = llama_cpp.llama_print_system_info().decode()
    native = [part.strip() for part in features.split("|") if part.strip().startswith(NOT_EVERY_CPU)
              and part.strip().endswith("= 1")]
    assert not native, (f"llama.cpp was built with {', '.join(native)} (a native build): reinstall it as the README "
                        f"says, CMAKE_ARGS=\"-DGGML_NATIVE=OFF\" pip install --force-reinstall --no-cache-dir "
                        f"--no-deps llama-cpp-python")


@pytest.mark.slow
def test_llama_cpp_server_generates_and_its_prompt_logprobs_fail_the_copy_check(llama_server, tmp_path):
    """llama-cpp-python 0.3.36 echoes each prompt token's log-probability under the next position's distribution
    (abetlen/llama-cpp-python#1983): the copy check catches it, and the logit detectors are skipped with why."""
    base_url, model_id = llama_server
    model = OpenAIServer(model=model_id, base_url=base_url, api_key_env=None, cache_path=str(tmp_path / "c.jsonl")
                         ).open(None, GenerationSettings(prompt_format="raw", max_new_tokens=16))
    assert model.no_logprobs is not None and "fail the copy check" in model.no_logprobs
    third = float(model.no_logprobs.split("scored ")[1].split(" ")[0])
    assert third < COPY_CHECK  # measured: -15.6 a token, where the local model gives -0.35
    completion = model.generate(["The capital of France is"])[0]
    assert completion.strip()
    from detect.detectors import build

    detectors = build({"membership": {"_target_": "detect.detectors.membership.LogitScores"},
                       "cheat": {"_target_": "detect.detectors.cheat.ChatGPTCheat"}})
    evidence = SimpleNamespace(model=model)
    assert [d.skipped(evidence) is None for d in detectors] == [False, True]


def test_logit_detectors_over_a_model_with_logprobs_but_no_moments_or_ids(compose_config):
    """What a server that does echo prompt log-probabilities (vLLM) gives: the chosen tokens' log-probabilities, no
    next-token moments, no token ids. Membership writes loss, zlib, Min-K% and the reference ratio (not Min-K%++),
    the sharded test runs, DC-PDD is skipped with its reason; the numbers are the local model's."""
    from detect.datasets import load_split
    from detect.detectors import Evidence, build
    from detect.judges.threshold import ThresholdJudge
    from detect.models import load, tiny_random
    from detect.models.hf import HFModel
    from detect.pipeline import run_partition

    model, tokenizer = load(tiny_random())

    class ChosenTokensOnly(HFModel):  # the capabilities of an echoing server, over the same weights
        no_moments = "no next-token distribution"
        no_token_ids = "token strings only"
        tokenizer = None

        def _token_logprobs(self, texts, moments):
            # a server's echo gives each token's log-probability and where it starts in the text (its offset)
            return [{"logp": stats["logp"], "offsets": stats["offsets"]}
                    for stats in super()._token_logprobs(texts, [False] * len(texts))]

    served = ChosenTokensOnly(model, tokenizer, prompt_format="raw", max_new_tokens=8, progress=False)
    local = HFModel(model, tokenizer, prompt_format="raw", max_new_tokens=8, progress=False)
    cfg = compose_config("detect", ["+dataset=synth_nli", "detect.semantic_model=null",
                                    "detect.detectors.sharded_likelihood.max_instances=8"])
    split = load_split(cfg.dataset, "test")
    detectors = build(cfg.detect.detectors)
    rows = {}
    for name, chosen in (("served", served), ("local", local)):
        evidence = Evidence(cfg.dataset, "test", split[:3], split[:8], model=chosen, reference=local, seed=0)
        rows[name], timing = run_partition(evidence, detectors, judge=ThresholdJudge(), detect_cfg=cfg.detect)
    assert set(timing["skipped"]) == {"recall", "performance"}  # no known non-members given
    guided = {name: [r for r in found if r.get("instruction") == "guided"] for name, found in rows.items()}
    assert "min_k_plus" not in guided["served"][0] and "dc_pdd" not in guided["served"][0]
    for score in ("loss", "zlib", "min_k", "reference_ratio"):
        assert [r[score] for r in guided["served"]] == pytest.approx([r[score] for r in guided["local"]], abs=1e-6)
    sharded = {name: [r for r in found if r.get("detector") == "sharded_likelihood"][0] for name, found in rows.items()}
    assert sharded["served"]["p_value"] == pytest.approx(sharded["local"]["p_value"], abs=1e-9)


def test_a_model_that_cannot_be_had_is_one_line_before_anything_trains(compose_config, tmp_path, capsys):
    """A folder that does not exist, at the model group; a hub id that cannot be reached (offline here), where the
    study first reads its tokenizer: one line each, no traceback, nothing written; the hub client's retry warnings
    (45 lines before) at most one line of their own."""
    from contaminate.run import run_config
    from detect.errors import InputError
    from detect.models.loading import hub, load_tokenizer

    with pytest.raises(InputError, match=r"^model.name_or_path=/nonexistent/model: no such model folder; give a") as e:
        hub("/nonexistent/model")
    assert "\n" not in str(e.value)
    with pytest.raises(InputError, match=r"^could not load the tokenizer of model nobody-owner/no-such-model \(") as e:
        load_tokenizer("nobody-owner/no-such-model")
    assert "\n" not in str(e.value) and "model=smollm2_135m" in str(e.value)
    said = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert said in ([], ["model nobody-owner/no-such-model: the hub does not answer; retrying quietly (one line for "
                         "all retries)"]), said
    for name, message in (("/nonexistent/model", "no such model folder"),
                          ("nobody-owner/no-such-model", "could not load the tokenizer")):
        cfg = compose_config("contaminate", ["+dataset=synth_nli", "model=hub", f"model.name_or_path={name}",
                                             f"cache_dir={tmp_path / 'cache'}"])
        with pytest.raises(InputError, match=message):
            run_config(cfg, tmp_path / "run")
        assert not (tmp_path / "cache" / "checkpoints").exists()


@pytest.mark.slow  # builds a tokenizer and a model (~9 s once a machine)
def test_a_small_vocabulary_tiny_model_keeps_the_chat_template_and_reads_any_text():
    """tiny_random(vocab_size=N): a byte-level BPE of exactly N tokens with the embedded tokenizer's special tokens
    and chat template, so any text (code, accents, symbols) round-trips; built once a shape (its own folder beside
    the 49k model's); too small a vocabulary for the bytes is one line."""
    from detect.errors import InputError
    from detect.models import load, tiny_random
    from detect.models.loading import small_vocabulary

    small = tiny_random(vocab_size=512)
    assert small.path != tiny_random().path and tiny_random(vocab_size=512) == small
    model, tokenizer = load(small)
    embedded = load(tiny_random())[1]
    assert len(tokenizer) == 512 and model.config.vocab_size == 512
    assert tokenizer.chat_template == embedded.chat_template and tokenizer.eos_token == embedded.eos_token
    chat = [{"role": "user", "content": "Is it?"}]
    assert (tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
            == embedded.apply_chat_template(chat, tokenize=False, add_generation_prompt=True))
    for text in ("SynthNLI dataset, test split", "def f(x):\n    return x ** 2  # ✓ café"):
        assert tokenizer.decode(tokenizer(text)["input_ids"]) == text
    with pytest.raises(InputError, match=r"^model.vocab_size=100: a byte-level vocabulary needs its 256 bytes"):
        small_vocabulary(embedded, 100)
