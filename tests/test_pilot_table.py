"""contaminate/analyses/pilot.py (issue 34 item 5): the rule that picks the CPU profile's training setting, checked on
hand-made records whose answer is known, and the table read from real planted runs of the tiny model."""

import json
from pathlib import Path

import pytest
import yaml
from lean import TINY_MODEL, lean

from contaminate.analyses import pilot as pilot_table
from contaminate.run import run_config


def record(aucs: dict[int, float], replicas: dict[int, tuple[int, int]] | None = None) -> dict:
    """A plant.json with the given loss AUC (and guided exact / near-exact counts of 16) by dose."""
    groups = [{"name": "x0", "exposures": 0, "within_model_auc": None, "replicas": None}]
    for dose, value in aucs.items():
        exact, near = (replicas or {}).get(dose, (0, 0))
        groups.append({"name": f"x{dose}", "exposures": dose, "token_share": 0.017 * dose,
                       "within_model_auc": {"loss": value, "zlib": value - 0.01},
                       "replicas": {"guided": {"members": {"n": 16, "exact": exact, "near_exact": near},
                                               "non_members": {"n": 16, "exact": 0, "near_exact": 1}}}})
    return {"plant": "doubling", "dataset": "humaneval", "format": "metadata", "draw": 0, "seed": 0, "groups": groups,
            "stream": {"training_tokens": 178000},
            "checkpoint": {"steps": 212, "train_seconds": 1500.0, "final_loss": 0.8}}


def write_run(folder: Path, lr: float, batch: int, plant: dict) -> None:
    folder.mkdir(parents=True)
    (folder / "plant.json").write_text(json.dumps(plant))
    (folder / "config.yaml").write_text(yaml.safe_dump({"contaminate": {"learning_rate": lr, "batch_size": batch,
                                                                        "peft": None}}))


def test_the_rule_takes_the_widest_span_that_is_neither_saturated_at_x1_nor_flat_at_the_top(tmp_path):
    assert pilot_table.swept() == [(3e-5, 4), (3e-5, 16), (1e-4, 4), (1e-4, 16), (3e-4, 4), (3e-4, 16)]
    write_run(tmp_path / "a", 3e-4, 4, record({1: 0.90, 16: 1.00}))               # saturated at x1: out
    write_run(tmp_path / "f", 3e-4, 16, record({1: 0.85, 16: 1.00}))              # saturated at x1: out
    write_run(tmp_path / "b", 3e-5, 4, record({1: 0.55, 16: 0.80}))               # flat at the top: out
    write_run(tmp_path / "e", 3e-5, 16, record({1: 0.50, 16: 0.85}))              # flat at the top: out
    write_run(tmp_path / "c", 1e-4, 16, record({1: 0.70, 16: 0.96}))              # meets, span 0.26
    write_run(tmp_path / "d", 1e-4, 4, record({1: 0.60, 16: 1.00}, {16: (2, 3)}))  # meets, span 0.40: chosen
    runs = pilot_table.read_runs(tmp_path)
    assert [pilot_table.meets_rule(r) for r in runs] == [False, False, True, True, False, False]  # by lr, batch
    assert pilot_table.setting(pilot_table.chosen(runs)) == "full, lr 0.0001, 4 docs a batch"
    table = pilot_table.main(str(tmp_path))
    assert "Chosen: **full, lr 0.0001, 4 docs a batch** (loss AUC x1 0.60, x16 1.00" in table
    assert "| full, lr 0.0001, 4 docs a batch | guided (the paper's) | 0 + 0 / 16 | 2 + 3 / 16 | 0 + 1 / 16 (x0) |" \
           in table
    assert "| zlib | 0.59 | 0.99 |" in table  # the chosen setting's other scores beside it
    # a tie in span goes to the lower learning rate (fewer changes to the model for the same range)
    (tmp_path / "e" / "plant.json").write_text(json.dumps(record({1: 0.55, 16: 0.95})))
    assert pilot_table.setting(pilot_table.chosen(pilot_table.read_runs(tmp_path))) == "full, lr 3e-05, 16 docs a batch"


def test_no_choice_among_some_settings_and_none_where_none_qualifies(tmp_path):
    saturated = record({1: 0.90, 16: 1.00})
    write_run(tmp_path / "a", 3e-4, 4, {**saturated, "groups": [{**g, "replicas": None} for g in saturated["groups"]]})
    table = pilot_table.main(str(tmp_path))
    assert "Not chosen yet: 1 of 6 settings run; to run: lr 3e-05, 4 docs a batch, lr 3e-05, 16 docs a batch, " in table
    assert "## Algorithm 2, both readings\n\nNot run on any setting yet." in table
    for lr, batch in pilot_table.swept()[:-1]:
        if (lr, batch) != (3e-4, 4):
            write_run(tmp_path / f"{lr}_{batch}", lr, batch, saturated)
    assert "Not chosen yet: 5 of 6 settings run; to run: lr 0.0003, 16 docs a batch." in pilot_table.main(str(tmp_path))
    write_run(tmp_path / "last", 3e-4, 16, saturated)
    assert pilot_table.chosen(pilot_table.read_runs(tmp_path)) is None
    assert "No setting meets the rule (loss AUC x1 <= 0.75 and top dose >= 0.95)." in pilot_table.main(str(tmp_path))
    with pytest.raises(SystemExit, match="no run with plant.json"):
        pilot_table.read_runs(tmp_path / "empty")


def test_kept_records_give_the_untouched_models_auc_of_the_same_groups(tmp_path):
    """--keep copies a run's records and the base model's losses of its groups (the clean cells of
    plant.control=base); the table's base row is their AUC: members [-1, -2] against [-1.5, -3] -> 3 of 4 pairs."""
    run = tmp_path / "runs" / "lr1e-4_bs4"
    write_run(run, 1e-4, 4, record({1: 0.60, 16: 1.00}))
    (run / "plant.md").write_text("plant\n")
    rows = [("clean_x_members", 1, -1.0), ("clean_x_members", 2, -2.0), ("clean_x_non_members", 3, -1.5),
            ("clean_x_non_members", 4, -3.0), ("contaminated_x_members", 1, 9.0)]  # the trained model's: not read
    (run / "groups" / "x1").mkdir(parents=True)
    (run / "groups" / "x1" / "results.jsonl").write_text("".join(
        json.dumps({"cell": cell, "instance_id": i, "instruction": "guided", "loss": loss}) + "\n"
        for cell, i, loss in rows) + json.dumps({"cell": "clean_x_members", "instance_id": 1,
                                                 "instruction": "general", "loss": None}) + "\n")
    assert pilot_table.keep(tmp_path / "runs", tmp_path / "kept") == ["lr1e-4_bs4"]
    kept = tmp_path / "kept" / "lr1e-4_bs4"
    assert sorted(p.name for p in kept.iterdir()) == ["base_scores.jsonl.gz", "config.yaml", "plant.json", "plant.md"]
    assert pilot_table.base_aucs(kept) == {"x1": 0.75}
    assert "| untouched base model, the same groups | - | - | - | - | 0.75 | - | - |" in pilot_table.main(
        str(tmp_path / "kept"))


@pytest.mark.slow
def test_the_table_reads_real_planted_runs_of_humaneval(compose_config, tmp_path):
    """Two settings of the pilot's sweep on the tiny model (HumanEval, doses 0/1/2): the table reads each
    run's resolved config and plant.json, and both Algorithm 2 readings are there."""
    tiny = ["+dataset=humaneval", *TINY_MODEL, "plant=doubling", "plant.n=2", "plant/control=base",
            "sample.n_detect=2", "contaminate.max_length=640", "detect.max_new_tokens=6", "detect.semantic_model=null",
            "plant.groups=[{exposures:0},{exposures:1},{exposures:2}]",
            "background=offline", "background.max_tokens=6000", f"cache_dir={tmp_path / 'cache'}", *lean(),
            "sample.n_heldout=0"]
    for batch in (4, 16):
        overrides = [*tiny, "contaminate.learning_rate=1e-4", f"contaminate.batch_size={batch}"]
        cfg = compose_config("contaminate", overrides)
        run_config(cfg, tmp_path / "runs" / f"bs{batch}")
    runs = pilot_table.read_runs(tmp_path / "runs")
    assert [(r["learning_rate"], r["batch_size"]) for r in runs] == [(1e-4, 4), (1e-4, 16)]
    assert runs[0]["checkpoint"]["steps"] > runs[1]["checkpoint"]["steps"]  # same stream, 4x the documents a step
    table = pilot_table.main(str(tmp_path / "runs"))
    assert "2 planted runs on humaneval (metadata format, doubling)" in table
    assert table.count("| leak's rendering (oracle) |") == 2 and table.count("| guided (the paper's) |") == 2
    rows = [line.split(" | ") for line in table.splitlines() if line.startswith("| full, lr 0.0001") and
            "reading" not in line and "(the paper's)" not in line and "(oracle)" not in line]
    assert len(rows) == 2 and all(len(row) == 6 + 2 for row in rows)  # two planted doses, a loss AUC each
    assert all(0 <= float(cell) <= 1 for row in rows for cell in row[5:7])
