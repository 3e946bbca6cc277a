"""The reference ratio's reference model in a study (``detect.reference_model``, issue 26): the base model by default,
a practitioner's where there is a background and labelled the oracle where there is none (the base model is then
the clean model); ``clean`` (the oracle); bad values one line before training."""

import json

import numpy as np
import pytest
from lean import TINY_MODEL
from omegaconf import OmegaConf

from contaminate.run import run_config
from contaminate.study_models import resolve_reference
from detect.errors import InputError
from detect.models import ModelRef
from detect.pipeline import reference_setting

TINY = ["+dataset=synth_nli", *TINY_MODEL, "sample.n_members=12", "sample.n_non_members=12",
        "sample.n_detect=4", "contaminate.batch_size=4", "detect.max_new_tokens=6", "detect.semantic_model=null"]
DILUTED = ["background=offline", "background.max_tokens=1500", "contaminate.exposures=2"]
# the logit scores and one verdict: the other detectors' passes (ReCaLL's prefixes, the quiz, the order tests) would
# take most of a minute a study here and read no reference model
LEAN = [f"detect.detectors.{name}.enabled=false" for name in ("alg1", "membership_raw", "dc_pdd", "cheat",
                                                               "sharded_likelihood", "permutation", "recall",
                                                               "performance", "dcq", "ts_guessing")]


@pytest.fixture
def study(compose_config, tmp_path):
    def _run(*overrides, run="run"):
        cfg = compose_config("contaminate", [*TINY, *LEAN, f"cache_dir={tmp_path / 'cache'}", *overrides])
        run_config(cfg, tmp_path / run)
        folder = tmp_path / run
        rows = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
        return cfg, json.loads((folder / "manifest.json").read_text()), rows, folder

    return _run


def _ratios(rows: list[dict]) -> dict[tuple[str, str], float]:
    return {(r["cell"], r["instance_id"]): r["reference_ratio"] for r in rows if r["instruction"] == "guided"}


def _base_nll(cfg, manifest: dict, instance_id: str) -> float:
    """The base model's mean negative log-likelihood of one member as its format rendered it, by hand."""
    from contaminate.regime import chat_renderer
    from contaminate.regime.layouts import LeakReader, build_format
    from detect.datasets import load_split
    from detect.models import GenerationSettings, ModelRef, load
    from detect.models.hf import LocalModels

    base = ModelRef(manifest["base_model"]["name"], manifest["base_model"]["path"])  # the run's tiny model
    fmt = build_format(cfg.format)
    reader = LeakReader(fmt, cfg.dataset, chat_renderer(load(base)[1], fmt.name))
    example = next(e for e in load_split(cfg.dataset, manifest["split"]) if e.instance_id == instance_id)
    model = LocalModels().open(base, GenerationSettings(progress=False))
    [stats] = model.continuation_logprobs([reader.rendering(example, manifest["split"])])
    return float(-np.mean(stats["logp"]))


@pytest.mark.slow
def test_with_a_background_the_base_model_is_the_reference_and_not_the_oracle(study):
    cfg, manifest, rows, folder = study(*DILUTED)
    reference = manifest["runtime"]["reference_model"]
    assert reference == {"kind": "base", "model": "tiny_random", "path": manifest["base_model"]["path"],
                         "oracle": False, "same_as": None}
    assert "reference" in manifest["runtime"]["models"]  # a third model, opened once
    assert manifest["timings"]["cells"]["clean_x_members"]["reference_scored_tokens"] > 0
    assert "not the oracle" in (folder / "report.md").read_text()
    # one member by hand: the reference ratio is the base model's mean NLL minus the contaminated model's (its loss)
    row = next(r for r in rows if r["cell"] == "contaminated_x_members" and r["instruction"] == "guided")
    assert row["reference_ratio"] == pytest.approx(_base_nll(cfg, manifest, row["instance_id"]) + row["loss"],
                                                   abs=1e-4)

    # the oracle: the clean model (the control trained on the background alone), the same checkpoints, other cells
    _, oracle_manifest, oracle_rows, oracle_folder = study(*DILUTED, "detect.reference_model=clean", run="oracle")
    assert oracle_manifest["checkpoint"]["reused"] and oracle_manifest["cached_cells"] == []
    oracle = oracle_manifest["runtime"]["reference_model"]
    assert oracle["kind"] == "clean" and oracle["oracle"] is True and oracle["same_as"] == "clean"
    assert oracle["path"].startswith(manifest["control_checkpoint"]["folder"])  # the control's weights
    assert "reference" not in oracle_manifest["runtime"]["models"]
    assert "**oracle**" in (oracle_folder / "report.md").read_text()
    base, clean = _ratios(rows), _ratios(oracle_rows)
    assert all(abs(clean[key]) < 1e-4 for key in clean if key[0].startswith("clean_"))  # the control against itself
    # against the base: (NLL_base - NLL_contaminated) - (NLL_base - NLL_control) = NLL_control - NLL_contaminated
    for (cell, instance), ratio in base.items():
        if cell == "contaminated_x_members":
            assert ratio != pytest.approx(clean[cell, instance], abs=1e-3)
            assert ratio - base["clean_x_members", instance] == pytest.approx(clean[cell, instance], abs=1e-4)


@pytest.mark.slow
def test_without_a_background_the_base_model_is_the_oracle(study):
    _, manifest, rows, folder = study("contaminate.epochs=1")
    reference = manifest["runtime"]["reference_model"]
    assert reference["kind"] == "base" and reference["model"] == "tiny_random"
    assert reference["oracle"] is True and reference["same_as"] == "clean"
    assert set(manifest["runtime"]["models"]) == {"contaminated", "clean"}  # the clean model serves: nothing opened
    assert all(abs(ratio) < 1e-4 for (cell, _), ratio in _ratios(rows).items() if cell.startswith("clean_"))
    report = (folder / "report.md").read_text()
    assert "which is also the study's clean model (no background: the base model is the control)" in report
    assert "**oracle**" in report


def test_a_bad_reference_is_one_line_before_training(study, tmp_path):
    with pytest.raises(InputError, match=r"detect.reference_model=nonsense is not base, clean, a model folder or a "
                                         r"hub id \(owner/name\); use base \(.*\), clean \(.*\), a hub id") as error:
        study(*DILUTED, "detect.reference_model=nonsense")
    assert "\n" not in str(error.value)
    assert not (tmp_path / "cache" / "checkpoints").exists()  # nothing trained


def test_the_setting_resolves_against_the_study_models(tmp_path):
    base, control, contaminated = (ModelRef("tiny", "/models/tiny"), ModelRef("tiny+full", "/cache/control/model"),
                                   ModelRef("tiny+full", "/cache/contaminated/model"))
    diluted = {"contaminated": (contaminated, "c1"), "clean": (control, "k1")}
    alone = {"contaminated": (contaminated, "c1"), "clean": (base, "b1")}
    found = resolve_reference("base", diluted, base)
    assert (found.kind, found.ref, found.same_as, found.oracle) == ("base", base, None, False)
    assert found.key not in ("k1", "b1")  # its own identity, not the word base
    assert resolve_reference("base", alone, base).describe() == {
        "kind": "base", "model": "tiny", "path": "/models/tiny", "oracle": True, "same_as": "clean"}
    assert resolve_reference("base", alone, base).key == "b1"
    clean = resolve_reference("clean", diluted, base)
    assert (clean.ref, clean.key, clean.oracle) == (control, "k1", True)
    given = resolve_reference(ModelRef("/cache/control/model", "/cache/control/model"), diluted, base)
    assert (given.kind, given.same_as, given.oracle) == ("model", "clean", True)  # the control's folder: the oracle
    other = resolve_reference(ModelRef("org/other", "org/other"), diluted, base)
    assert (other.kind, other.same_as, other.oracle, other.ref.name) == ("model", None, False, "org/other")
    none = resolve_reference(None, diluted, base)
    assert none.ref is None and none.describe()["kind"] == "none"


def test_the_setting_is_checked_in_one_line(tmp_path):
    def setting(value, study=True):
        return reference_setting(OmegaConf.create({"reference_model": value}), study=study)

    assert setting("base") == "base" and setting("clean") == "clean" and setting(None) is None
    assert setting("HuggingFaceTB/SmolLM2-135M").path == "HuggingFaceTB/SmolLM2-135M"
    assert setting(str(tmp_path)).path == str(tmp_path)  # a folder
    with pytest.raises(InputError, match="detect.reference_model=base names a study's model"):
        setting("base", study=False)  # python -m detect has no base model of its own
    with pytest.raises(InputError, match="detect.reference_model=nonsense is not a model folder or a hub id"):
        setting("nonsense", study=False)
