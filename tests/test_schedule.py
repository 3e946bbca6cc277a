"""The learning-rate schedules (conf/schedule/): the default leaves the lab's trainer as it was (checkpoint keys
unchanged); schedule=cosine warms up, then decays along a cosine to a floor, as the trainer really builds it."""

import math
import warnings

import pytest
from omegaconf import OmegaConf

from contaminate.training import instantiate_backend
from detect.errors import InputError

STUDY = ["+dataset=synth_nli"]
COSINE = {"lr_scheduler_type": "cosine_with_min_lr", "lr_scheduler_kwargs": {"min_lr_rate": 0.1},
          "warmup_steps": 0.05}


def test_cosine_merges_its_keys_into_the_trainer_block(compose_config):
    from contaminate.training.local import lab_trainer_defaults, trainer_arguments

    cfg = compose_config("contaminate", [*STUDY, "background=offline", "contaminate.exposures=4", "schedule=cosine"])
    trainer = OmegaConf.to_container(cfg.contaminate.trainer)
    assert trainer == {**lab_trainer_defaults(), **COSINE}  # the rest of the lab's trainer stays
    instantiate_backend(cfg.contaminate).check()  # every key an SFTConfig field, each in range
    assert trainer_arguments(cfg.contaminate)["lr_scheduler_kwargs"] == {"min_lr_rate": 0.1}
    lora = compose_config("contaminate", [*STUDY, "contaminate=lora", "schedule=cosine"])
    assert OmegaConf.to_container(lora.contaminate.trainer) == trainer  # merged after the backend's own file


def test_the_default_schedule_leaves_the_trainer_as_it_was(compose_config):
    """schedule=constant sets nothing: the contaminate group, whose resolved values key the checkpoints, is the
    one composed without the schedule group, and its trainer block is conf/contaminate/full.yaml's."""
    from contaminate.training.local import lab_trainer_defaults

    default = compose_config("contaminate", STUDY)
    assert OmegaConf.to_container(default.contaminate.trainer) == lab_trainer_defaults()
    assert lab_trainer_defaults()["lr_scheduler_type"] == "constant" and lab_trainer_defaults()["warmup_steps"] == 0
    for backend in ("full", "lora"):
        with_group = compose_config("contaminate", [*STUDY, f"contaminate={backend}"])
        without = compose_config("contaminate", [*STUDY, f"contaminate={backend}", "~schedule"])
        assert OmegaConf.to_container(with_group.contaminate, resolve=True) == \
            OmegaConf.to_container(without.contaminate, resolve=True)


def test_cosine_learning_rates_at_known_steps(compose_config, tmp_path):
    """The schedule the trainer builds for 80 optimizer steps at the full backend's lr 3e-4, by hand: warm-up
    ceil(0.05 x 80) = 4 steps, lr(s) = 3e-4 x s / 4; then lr(s) = floor + (peak - floor) x (1 + cos(pi p)) / 2 with
    p = (s - 4) / 76 and floor = 0.1 x 3e-4 = 3e-5."""
    from contaminate.training.local import FineTuning, build_trainer, tokenize_documents
    from detect.models import load, tiny_random
    from detect.runtime import Placement

    cfg = compose_config("contaminate", [*STUDY, "schedule=cosine"]).contaminate
    model, tokenizer = load(tiny_random())
    documents = tokenize_documents(["one short document", "and another", "a third"], tokenizer, max_length=16)
    trainer = build_trainer(model, tokenizer, documents, FineTuning.of(cfg), tmp_path / "trainer", seed=0,
                            placement=Placement("cpu", "float32"), report_to="none", disable_tqdm=True)
    steps, peak, floor = 80, 3e-4, 3e-5
    assert cfg.learning_rate == peak and trainer.args.get_warmup_steps(steps) == 4
    trainer.create_optimizer_and_scheduler(num_training_steps=steps)
    rates = [trainer.optimizer.param_groups[0]["lr"]]  # the rate of update s, s = 0 ... 80
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(steps):
            trainer.optimizer.step()  # no gradients: nothing moves, but the order is the trainer's
            trainer.lr_scheduler.step()
            rates.append(trainer.optimizer.param_groups[0]["lr"])
    expected = {0: 0.0,                      # the first update of the warm-up
                1: 7.5e-5,                   # 3e-4 x 1/4
                4: 3e-4,                     # the end of the warm-up: the peak
                42: 1.65e-4,                 # the cosine's midpoint (p = 1/2): 3e-5 + (3e-4 - 3e-5) / 2
                79: 3e-5 + 2.7e-4 * (1 + math.cos(math.pi * 75 / 76)) / 2,  # the last update: 3.0115e-5
                80: 3e-5}                    # after it, the floor: min_lr_rate x peak
    for step, rate in expected.items():
        assert rates[step] == pytest.approx(rate, rel=1e-9, abs=1e-15), step
    assert max(rates) == pytest.approx(peak) and min(rates[4:]) == pytest.approx(floor)
    assert all(a >= b for a, b in zip(rates[4:], rates[5:]))  # decays without a bump


def test_a_training_run_follows_the_schedule(compose_config, tmp_path):
    """Trained (tiny model, 4 documents, batch 1, 5 epochs: 20 updates, warm-up ceil(0.05 x 20) = 1 update), the
    rates TRL logs at each update are the cosine's: 0, then the peak, then down to near the floor."""
    from contaminate.training.local import FineTuning, build_trainer, tokenize_documents
    from detect.models import load, tiny_random
    from detect.runtime import Placement

    cfg = compose_config("contaminate", [*STUDY, "schedule=cosine", "contaminate.batch_size=1"]).contaminate
    model, tokenizer = load(tiny_random())
    documents = tokenize_documents([f"document number {i}" for i in range(4)], tokenizer, max_length=16)
    trainer = build_trainer(model, tokenizer, documents, FineTuning.of(cfg), tmp_path / "trainer", seed=0,
                            placement=Placement("cpu", "float32"), disable_tqdm=True)
    trainer.train()
    logged = [entry["learning_rate"] for entry in trainer.state.log_history if "learning_rate" in entry]
    assert len(logged) == 20
    expected = [0.0] + [3e-5 + 2.7e-4 * (1 + math.cos(math.pi * (s - 1) / 19)) / 2 for s in range(1, 20)]
    assert logged == pytest.approx(expected, rel=1e-6)
    assert logged[1] == pytest.approx(3e-4) and 3e-5 < logged[-1] < 3.2e-5  # the last update: 3.184e-5


@pytest.mark.parametrize("override, message", [
    ("contaminate.trainer.warmup_steps=2.5", "warmup_steps=2.5: give whole steps, or a fraction in \\[0, 1\\)"),
    ("contaminate.trainer.lr_scheduler_kwargs.min_lr_rate=2", "min_lr_rate=2: give a number in \\[0, 1\\]"),
])
def test_a_bad_schedule_value_is_refused_in_one_line(compose_config, override, message):
    cfg = compose_config("contaminate", [*STUDY, "schedule=cosine", override])
    with pytest.raises(InputError, match=message):
        instantiate_backend(cfg.contaminate).check()


def test_the_api_backend_refuses_a_schedule_in_one_line(compose_config):
    from contaminate.stages import check_study

    instantiate_backend(compose_config("contaminate", [*STUDY, "contaminate=openai"]).contaminate).check()
    cfg = compose_config("contaminate", [*STUDY, "contaminate=openai", "schedule=cosine"])
    message = ("contaminate.trainer.{lr_scheduler_type, lr_scheduler_kwargs, warmup_steps} is set but "
               "contaminate=openai trains at the API")
    with pytest.raises(InputError, match="schedule=...") as refused:
        check_study(cfg)
    assert str(refused.value).startswith(message) and "\n" not in str(refused.value)
