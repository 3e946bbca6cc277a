"""contaminate/analyses/replicas.py (issue 45 item 4): Algorithm 2's labels by dose and reading, counted from a planted
run's rows, the smallest dose meeting the paper's rule, and the pools where nothing was trained; checked on hand-made
runs whose answer is counted here by hand."""

import json
from pathlib import Path

import yaml

from contaminate.analyses import replicas as replicas_table


def row(cell: str, instruction: str, judge: str, answer: str = "continuation") -> dict:
    return {"cell": cell, "instruction": instruction, "judge": judge, "completion": "x", "answer_class": answer}


def write_run(folder: Path, shots: int, post: str, labels: dict[str, dict[str, list[str]]],
              post_rate: float | None = None) -> None:
    """A planted run of HumanEval groups x0, x1, x4 and synth_nli's x0_synth_nli, x4_synth_nli; ``labels`` gives each
    group's member labels per reading; the never-planted and known non-members' labels are fixed below."""
    groups = [{"name": "x0", "exposures": 0}, {"name": "x1", "exposures": 1, "token_share": 0.01},
              {"name": "x4", "exposures": 4, "token_share": 0.04},
              {"name": "x0_synth_nli", "exposures": 0, "dataset": "synth_nli"},
              {"name": "x4_synth_nli", "exposures": 4, "dataset": "synth_nli", "token_share": 0.02}]
    folder.mkdir(parents=True)
    (folder / "plant.json").write_text(json.dumps({
        "dataset": "humaneval", "groups": groups, "stream": {"training_tokens": 1000},
        "checkpoint": {"steps": 10, "train_seconds": 5.0}, "post_train_seconds": 2.0 if post != "none" else None}))
    (folder / "plant.md").write_text("# Planted run\n")
    (folder / "config.yaml").write_text(yaml.safe_dump({
        "contaminate": {"learning_rate": 3e-4, "batch_size": 4}, "detect": {"elicit": {"shots": shots}},
        "post_train": {"name": post, **({"learning_rate": post_rate} if post_rate else {})}}))
    for group in groups:
        if not group["exposures"]:
            continue
        rows = [row("contaminated_x_members", reading, label)
                for reading, found in labels.get(group["name"], {}).items() for label in found]
        rows += [row("contaminated_x_non_members", "guided", label) for label in ("none", "near_exact")]
        rows += [row("contaminated_x_non_members", "leak", "none") for _ in range(2)]
        # known non-members: guided prompts only; 3 of 4 followed, one near-exact label where nothing was trained
        rows += [row("contaminated_x_known_non_members", "guided", label, answer)
                 for label, answer in (("none", "continuation"), ("near_exact", "continuation"),
                                       ("none", "continuation"), ("none", "instruction_echo"))]
        (folder / "groups" / group["name"]).mkdir(parents=True)
        (folder / "groups" / group["name"] / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_labels_by_dose_and_reading_and_the_smallest_dose_meeting_the_rule(tmp_path):
    write_run(tmp_path / "plain", 0, "none", {
        "x1": {"guided": ["none", "near_exact"], "leak": ["near_exact", "near_exact"]},   # leak meets at x1
        "x4": {"guided": ["exact", "none"], "leak": ["exact", "exact"]},                  # guided meets at x4
        "x4_synth_nli": {"guided": ["none", "none"], "leak": ["none", "near_exact"]}})    # neither meets
    write_run(tmp_path / "shots", 3, "none", {
        "x1": {"guided": ["near_exact", "near_exact"], "leak": ["near_exact", "near_exact"]},  # 2 near-exact: meets
        "x4": {"guided": ["exact", "exact"], "leak": ["exact", "exact"]},
        "x4_synth_nli": {"guided": ["none", "none"], "leak": ["none", "near_exact"]}})
    table = replicas_table.main(str(tmp_path))
    humaneval, synth = table.split("## humaneval")[1].split("## synth_nli")
    # the plain run first, then the 3-shot run; the leak reading once for the one trained model
    assert ("| lr 0.0003, 4 a batch | guided, plain | 0.75 of 4 | 0 + 1 / 2 | 1 + 0 / 2 | 0 + 1 / 2 (x0) | 0 + 1 / 4 "
            "| x4 |") in humaneval
    assert "| lr 0.0003, 4 a batch | leak (oracle) | - | 0 + 2 / 2 | 2 + 0 / 2 | 0 + 0 / 2 (x0) | - | x1 |" in humaneval
    assert "| lr 0.0003, 4 a batch | guided, 3-shot | 0.75 of 4 | 0 + 2 / 2 | 2 + 0 / 2 |" in humaneval
    assert humaneval.count("leak (oracle)") == 1
    assert "| guided, plain | 0.75 of 4 | 0 + 0 / 2 | 0 + 1 / 2 (x0_synth_nli) | 0 + 1 / 4 | none to x4 |" in synth
    assert "Share of the training tokens: x1 1.00%, x4 4.00%." in humaneval
    # a post-trained model is another model: its leak reading gets its own row
    write_run(tmp_path / "elicit", 0, "elicit", {"x4": {"guided": ["exact", "none"], "leak": ["exact", "none"]}})
    table = replicas_table.main(str(tmp_path))
    assert "| guided, after post_train=elicit |" in table and "| leak (oracle), after post_train=elicit |" in table
    assert "| lr 0.0003, 4 a batch | guided, after post_train=elicit | 10 | 1,000 | 5 | 2 |" in table
    # post-trained at a rate of its own (not the leak's): another model again, named by its rate
    write_run(tmp_path / "gentle", 0, "elicit", {"x4": {"guided": ["none", "none"], "leak": ["exact", "exact"]}},
              post_rate=3e-5)
    humaneval = replicas_table.main(str(tmp_path)).split("## humaneval")[1].split("## synth_nli")[0]
    assert "| guided, after post_train=elicit at lr 3e-05 | 0.75 of 4 | - | 0 + 0 / 2 |" in humaneval
    assert "| leak (oracle), after post_train=elicit at lr 3e-05 | - | - | 2 + 0 / 2 |" in humaneval
    assert humaneval.count("leak (oracle)") == 3  # the trained model, post-trained at its rate, and at 3e-5


def test_a_batch_is_the_documents_an_optimizer_step_reads():
    assert replicas_table.batch({"batch_size": 16}) == 16
    assert replicas_table.batch({"batch_size": 4, "trainer": {"gradient_accumulation_steps": 4}}) == 16


def test_the_kept_records_give_the_same_table(tmp_path):
    write_run(tmp_path / "runs" / "plain", 0, "none", {"x4": {"guided": ["exact", "none"], "leak": ["exact", "exact"]}})
    assert replicas_table.keep(tmp_path / "runs", tmp_path / "kept") == ["plain"]
    assert (tmp_path / "kept" / "plain" / "groups" / "x4" / "results.jsonl.gz").exists()
    assert not (tmp_path / "kept" / "plain" / "groups" / "x4" / "results.jsonl").exists()
    assert replicas_table.main(str(tmp_path / "kept")) == replicas_table.main(str(tmp_path / "runs"))
