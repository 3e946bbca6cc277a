"""A tiny-model study in each contamination regime (method section 8), what the manifest and report say of it, and
the regimes' bad input, each one line before any training."""

import json
from collections import Counter

import pytest
from lean import TINY_MODEL, lean
from omegaconf import OmegaConf

from contaminate.regime import study_regime
from contaminate.run import run_config
from contaminate.sampling import sample_pools
from detect.errors import InputError

TINY = ["+dataset=synth_nli", *TINY_MODEL, "sample.n_members=12", "sample.n_non_members=12",
        "sample.n_detect=4", "contaminate.batch_size=4", "detect.max_new_tokens=6", "detect.semantic_model=null",
        *lean(keep=("membership_raw", "recall"))]  # the renderings' tests read both
DILUTED = ["background=offline", "background.max_tokens=1500"]


@pytest.fixture
def study(compose_config, tmp_path):
    def _run(*overrides, run="run"):
        base = TINY[1:] if any(o.startswith("+dataset=") for o in overrides) else TINY  # another dataset
        cfg = compose_config("contaminate", [*base, f"cache_dir={tmp_path / 'cache'}", *overrides])
        summary = run_config(cfg, tmp_path / run).groups["members"]
        return summary, json.loads((tmp_path / run / "manifest.json").read_text()), tmp_path / run

    return _run


def _tokenizer():
    from detect.models import load, tiny_random

    return load(tiny_random())[1]


def _plan(cfg, sampled):
    """The study's regime as its setup plans it: the background and format built from the config."""
    from contaminate.regime.background import instantiate_background
    from contaminate.regime.layouts import build_format

    return study_regime(cfg.dataset, cfg.contaminate, sampled.members, sampled.split, _tokenizer(),
                        instantiate_background(cfg.get("background")), build_format(cfg.format), seed=cfg.seed)


def test_the_planned_stream_holds_members_n_times_and_no_non_member(compose_config, tmp_path):
    cfg = compose_config("contaminate", [*TINY, *DILUTED, "contaminate.exposures=3"])
    sampled = sample_pools(cfg)
    regime = _plan(cfg, sampled)
    seen = Counter(i for document in regime.stream for i in document.members)
    assert seen == Counter({e.instance_id: 3 for e in sampled.members})
    assert not set(seen) & {e.instance_id for e in sampled.non_members}
    assert Counter(d.text for d in regime.stream if not d.members) == Counter(d.text for d in regime.control)
    assert regime.background["tokens"] >= 1500 and regime.background["documents"] == len(regime.control)
    assert regime.counts["documents"] == {"member": 36, "background": len(regime.control)}
    assert 0 < regime.counts["members_token_share"] < 0.7


@pytest.mark.slow  # two studies on the tiny model: ~35 s
def test_a_diluted_study_and_its_control(study):
    summary, manifest, folder = study(*DILUTED, "contaminate.exposures=2")
    regime = manifest["regime"]
    assert regime["exposures"] == 2 and regime["epochs"] is None and regime["control"] == "background"
    assert regime["background"]["name"] == "offline" and regime["background"]["source"].startswith("pydoc_data")
    assert regime["documents"]["member"] == 24 and regime["tokens"]["background"] == regime["background"]["tokens"]
    assert summary["regime"]["background"] == "offline" and summary["regime"]["members_token_share"] > 0
    control = manifest["control_checkpoint"]
    assert control["folder"] != manifest["checkpoint"]["folder"] and control["steps"] < manifest["checkpoint"]["steps"]
    # the reference ratio's reference: the base model (detect.reference_model=base), not the control: no oracle
    assert manifest["runtime"]["reference_model"]["kind"] == "base"
    assert manifest["runtime"]["reference_model"]["oracle"] is False
    report = (folder / "report.md").read_text()
    assert "Regime: diluted: each member 2x at random positions" in report and "background alone" in report
    assert summary["cells"]["contaminated_x_members"]["ground_truth"] == "contaminated"

    # exposures 0 is the control itself: nothing new trained, every cell clean, the control reused
    summary, manifest, folder = study(*DILUTED, "contaminate.exposures=0", run="control")
    assert manifest["checkpoint"]["folder"] == control["folder"] and manifest["control_checkpoint"]["reused"]
    assert {cell["ground_truth"] for cell in summary["cells"].values()} == {"clean"}
    assert "No member was trained in" in (folder / "report.md").read_text()
    # the contaminated and clean cells of one model on the same instances are one computation
    assert "contaminated_x_members" in manifest["cached_cells"]


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["dump", "instruction", "input_only", "paraphrase"])
def test_each_format_trains_and_detects(study, fmt):
    summary, manifest, folder = study(f"format={fmt}", "contaminate.exposures=1")
    assert summary["format"] == fmt and manifest["regime"]["format"] == fmt
    example = manifest["format"]["example"]
    if fmt == "dump":  # many members per document, in canonical order
        assert manifest["regime"]["documents"]["member"] < 12 and example.count('"label"') > 1
    if fmt == "instruction":  # a chat, with the loss on the answer
        assert "<|im_start|>assistant" in example and "assistant turn only" in manifest["regime"]["loss"]
        assert manifest["detect"]["prompt_format"] == "chat"  # prompted as it went in
        assert manifest["checkpoint"]["loss_tokens"] < manifest["checkpoint"]["trained_tokens"] / 3
    if fmt == "input_only":
        assert "label" not in example and "sentence1:" in example
    if fmt == "paraphrase":  # planted reworded: no member's verbatim text is in the training example
        from detect.datasets import load_split

        verbatim = {e.text for e in load_split(OmegaConf.create(manifest["dataset"]), manifest["split"])
                    if e.instance_id in manifest["member_ids"]}
        assert "sentence1:" in example and not any(text in example for text in verbatim)
    assert set(summary["cells"]) and all("alg2" in cell for cell in summary["cells"].values())
    # the detectors read the leak as it was trained: every instance score on every guided row
    rows = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    guided = [r for r in rows if r["instruction"] == "guided"]
    study = [r for r in guided if not r["cell"].endswith("_known_non_members")]
    assert study and all(r["loss"] is not None and r["loss_raw"] is not None and "recall" in r for r in study)
    # the known non-members are read as the leak was too: the recipe's logit scores need them
    known = [r for r in guided if r["cell"].endswith("_known_non_members")]
    assert known and all(r["loss"] is not None and r["loss_raw"] is not None for r in known)


@pytest.mark.parametrize("overrides, message", [
    (["contaminate.exposures=-1"], "contaminate.exposures=-1: give a whole number >= 0"),
    (["contaminate.exposures=2.5"], "contaminate.exposures=2.5: give a whole number >= 0"),
    (["contaminate.exposures=2", "contaminate.epochs=3"], "are both set"),
    (["background=offline"], "background=offline needs contaminate.exposures=N"),
    (["contaminate.exposures=0"], "with background=none trains on nothing"),
    (["background=offline", "background.max_tokens=100", "contaminate.exposures=1"],
     r"background offline has \d+ tokens, fewer than the [\d,]+ tokens of the 12 members it should dilute"),
    (["background=local", "background.path=/no/such/corpus", "contaminate.exposures=1"],
     "background.path=/no/such/corpus: no such file"),
    (["background=local", "contaminate.exposures=1"], "background=local needs background.path"),
    (["+dataset=xsum", "format=instruction"], "format=instruction needs a label for the assistant turn"),
    (["format=dump", "format.header='{title} {subset}'"], "names {subset}, which dataset synth_nli lacks"),
    (["contaminate=openai", "contaminate.exposures=1", "contaminate.epochs=null"],
     "contaminate=openai takes contaminate.epochs"),
    (["contaminate=openai", "format=dump"], "format=dump trains on a local model"),
    (["contaminate.max_length=3"], r"contaminate.max_length=3 holds none of the 12 member documents whole \(the "
                                   r"shortest has \d+ tokens, the longest \d+\); give at least \d+"),
])
def test_bad_regimes_are_one_line_errors_before_training(study, tmp_path, overrides, message):
    with pytest.raises(InputError, match=message.replace("{", r"\{").replace("}", r"\}")) as error:
        study(*overrides)
    assert "\n" not in str(error.value)
    assert not (tmp_path / "cache" / "checkpoints").exists()  # nothing trained, nothing lost


def test_member_documents_cut_by_max_length_are_said_in_one_line(capsys):
    from contaminate.regime import check_fits
    from contaminate.regime.stream import Document

    words = lambda text: len(text.split())  # noqa: E731 (a token is a word here)
    documents = [Document(text, ()) for text in ("a b", "a b c", "a b c d e")]
    check_fits(documents, words, 3)  # 2 and 3 words fit, 5 do not: trained cut, and said so
    said = capsys.readouterr().err
    assert said.count("\n") == 1
    assert "contaminate.max_length=3 cuts 1 of the 3 member documents" in said and "max_length=5" in said
    check_fits(documents, words, 5)
    assert capsys.readouterr().err == ""


def test_an_unreachable_hub_background_names_the_offline_default(compose_config):
    from contaminate.regime.background import HubBackground

    with pytest.raises(InputError, match="could not stream background HuggingFaceFW/fineweb-edu .* use "
                                         "background=offline") as error:
        HubBackground("HuggingFaceFW/fineweb-edu", "sample-10BT").texts()
    assert "\n" not in str(error.value)


def test_a_local_background_is_read_cut_and_counted(compose_config, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("\n\n".join(f"Paragraph {i} of a local corpus about rivers and bridges." * 3
                                              for i in range(200)))
    (corpus / "b.jsonl").write_text("\n".join(json.dumps({"text": f"Document {i} about trains."}) for i in range(30)))
    cfg = compose_config("contaminate", [*TINY, "background=local", f"background.path={corpus}",
                                         "contaminate.exposures=1"])
    sampled = sample_pools(cfg)
    regime = _plan(cfg, sampled)
    assert regime.background["name"] == "local" and regime.background["source"] == str(corpus.resolve())
    texts = "".join(d.text for d in regime.control)
    assert "Paragraph 199" in texts and "Document 29 about trains." in texts  # every file, in full
    (corpus / "c.jsonl").write_text('{"body": "no text field"}\n')
    with pytest.raises(InputError, match=r"c.jsonl line 1: not a JSON object with a 'text' field"):
        _plan(cfg, sampled)


def test_the_hub_clients_retry_warnings_are_one_line(capsys):
    """Where the hub does not answer, its clients warn at every retry (22 lines for one corpus); while a background
    streams they are one line, and their other records pass."""
    import logging

    from detect.hub_retries import retries_said_once

    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    keep = Keep()
    logging.getLogger("huggingface_hub").addHandler(keep)
    try:
        with retries_said_once("background HuggingFaceFW/fineweb-edu (sample-10BT)"):
            for attempt in range(1, 6):
                logging.getLogger("huggingface_hub.utils._http").warning(  # the failed request, then its retry
                    "'[Errno -2] Name or service not known' thrown while requesting HEAD https://huggingface.co/x")
                logging.getLogger("huggingface_hub.utils._http").warning(
                    f"'(MaxRetryError)' thrown while requesting HEAD https://huggingface.co/x: Retrying in 1s "
                    f"[Retry {attempt}/5].")
            logging.getLogger("huggingface_hub.utils._http").warning("a token is set but not used")
        logging.getLogger("huggingface_hub.utils._http").warning("Retrying in 1s [Retry 1/5].")  # after: as before
    finally:
        logging.getLogger("huggingface_hub").removeHandler(keep)
    assert seen == ["a token is set but not used", "Retrying in 1s [Retry 1/5]."]
    said = capsys.readouterr().err.strip().splitlines()
    assert said == ["background HuggingFaceFW/fineweb-edu (sample-10BT): the hub does not answer; retrying quietly "
                    "(one line for all retries)"]
