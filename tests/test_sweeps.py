"""The sweep configs compose: the dose-response experiment and both launchers (SLURM cannot run here)."""

import pytest
from hydra import compose, initialize_config_dir

from detect.cli import CONF_DIR


def _compose(overrides):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="contaminate", overrides=overrides, return_hydra_config=True)


def test_dose_response_sweeps_partitions_exposures_and_seeds():
    cfg = _compose(["+experiment=dose_response"])
    params = cfg.hydra.sweeper.params
    assert params["+dataset"] == "synth_nli,synth_news,synth_xsum"
    assert params["contaminate.epochs"] == "1,3,9" and params["seed"] == "0,1,2"
    # the other axes are there to be overridden on the command line
    assert {"sample.n_members", "contaminate", "format", "detect.prompt_format"} <= set(params)
    assert cfg.sample.n_detect == cfg.sample.n_non_members == 16
    assert cfg.hydra.mode.name == "MULTIRUN"


@pytest.mark.parametrize("launcher, target, settings", [
    ("local", "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher", {"n_jobs": 2}),
    ("slurm", "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher",
     {"gpus_per_node": 1, "timeout_min": 180, "partition": None}),
])
def test_launchers_compose(launcher, target, settings):
    cfg = _compose(["+experiment=dose_response", f"hydra/launcher={launcher}"])
    assert cfg.hydra.launcher._target_ == target
    assert {key: cfg.hydra.launcher[key] for key in settings} == settings


@pytest.mark.parametrize("experiment, members, top_dose", [("regimes_cpu", 10, "16"), ("regimes_gpu", 100, "64")])
def test_regime_experiments_sweep_every_regime_axis(experiment, members, top_dose):
    import contaminate  # noqa: F401  (registers the lab's config resolvers)

    cfg = _compose([f"+experiment={experiment}"])
    params = cfg.hydra.sweeper.params
    assert params["contaminate"] == "full,lora" and params["format"] == "metadata,dump,instruction,input_only"
    doses = params["contaminate.exposures"].split(",")
    assert params["background"] == "offline" and doses[0] == "0" and doses[-1] == top_dose  # 0: the control
    assert len(params["seed"].split(",")) >= 2
    assert cfg.sample.n_members == members and cfg.hydra.mode.name == "MULTIRUN"


@pytest.mark.parametrize("experiment, split_size",
                         [("replicas_recipe_cpu", 1200), ("replicas_recipe_humaneval_cpu", 164)])
def test_recipe_experiments_hold_the_known_non_members_the_recipe_needs(experiment, split_size):
    """Each recipe study draws its groups and enough known non-members for the paper's rule at the recipe's default
    budget (both parts bounded together) from one split: HumanEval's 164 problems hold partitions of 6, not 10."""
    import contaminate  # noqa: F401  (registers the lab's config resolvers)
    from detect.judges.recipe import rule_needs

    cfg = _compose([f"+experiment={experiment}"])
    needs = rule_needs(cfg.sample.n_detect, (1, 2), 0.05)
    assert cfg.plant.n == cfg.sample.n_detect and cfg.sample.n_heldout >= needs
    assert len(cfg.plant.groups) * cfg.plant.n + cfg.sample.n_heldout <= split_size
    assert cfg.hydra.mode.name == "MULTIRUN" and len(cfg.hydra.sweeper.params["seed"].split(",")) >= 6


def test_the_power_design_on_the_second_model_is_power_cpus_on_the_same_draws():
    """conf/experiment/power_gemma_cpu.yaml: power_cpu's design and primary contrasts, its runs' seeds (draw N pairs
    with power_cpu's run N), on Gemma 3 270M in bf16 with pass@1 stripped; nothing else moved."""
    gemma, smol = _compose(["+experiment=power_gemma_cpu"]), _compose(["+experiment=power_cpu"])
    params, base = dict(gemma.hydra.sweeper.params), dict(smol.hydra.sweeper.params)
    assert params.pop("model") == "gemma3_270m" and params == base and params["seed"] == "0,1,2,3,4,5,6,7,8,9"
    assert gemma.power == smol.power and gemma.plant.groups == smol.plant.groups
    assert (gemma.runtime.dtype, smol.runtime.dtype) == ("bf16", "fp32")
    assert (gemma.plant.pass_at_1_format, smol.plant.pass_at_1_format) == ("stripped", "raw")
    assert gemma.hydra.sweep.dir == "runs/power_gemma_cpu"


def test_a_study_reads_one_shot_at_its_small_sizes_and_every_experiment_keeps_the_papers_reading():
    """The first command's defaults (issue 71): one worked example before each prompt, asked in the leak's format, 30
    members and 40 known non-members, every detector of the paper's reading but Algorithm 2's leak reading (an
    oracle); every experiment under conf/experiment/ composes the paper's zero-shot reading (each model asked both
    ways, the leak reading on) and conf/sample/default.yaml, as it was measured before the study's defaults
    changed."""
    cfg = _compose(["+dataset=synth_nli"])
    choices = cfg.hydra.runtime.choices
    assert (choices.detect, choices.sample) == ("one_shot", "small")
    assert (cfg.detect.elicit.shots, cfg.detect.instruction_format) == (1, "model")
    assert (cfg.sample.n_members, cfg.sample.n_heldout) == (30, 40)
    papers = _compose(["+dataset=synth_nli", "detect=default"]).detect.detectors
    assert papers.alg2_leak.enabled and not cfg.detect.detectors.alg2_leak.enabled
    assert {**cfg.detect.detectors, "alg2_leak": None} == {**papers, "alg2_leak": None}
    assert _compose(["+dataset=synth_nli", "detect.detectors.alg2_leak.enabled=true"]).detect.detectors == papers
    for path in sorted((CONF_DIR / "experiment").glob("*.yaml")):
        overrides = [f"+experiment={path.stem}"] + (["+dataset=synth_nli"] if path.stem != "replicas_cpu" else [])
        choices = _compose(overrides).hydra.runtime.choices
        assert (choices.detect, choices.sample) == ("default", "default"), path.stem
