"""Planted groups (contaminate/regime/plant.py, contaminate/planted.py), by counting: each group exactly its
exposures, the never-planted group never, the background once in the control's order, windows honoured, a twin's
copies in the same positions; a tiny-model planted run gives one study per group from one training run; bad input
is one line each."""

import csv
import json
import re
from collections import Counter

import pytest
from lean import LEAK_READING, NO_EMBEDDING, TINY_MODEL, TINY_STUDY, lean
from omegaconf import OmegaConf

from contaminate.regime.plant import (
    PlantedGroup,
    group_positions,
    never_planted_group,
    plant_groups,
    plant_tail,
    planted_stream,
)
from contaminate.regime.stream import Document, build_stream
from contaminate.run import run_config
from detect.errors import InputError


def words(text: str) -> int:
    return len(text.split())


def groups_of(*exposures, n=5, window=None):
    return plant_groups(OmegaConf.create({"n": n, "window": window, "groups": [{"exposures": e} for e in exposures]}))


def documents_for(groups, offset=0):
    """One document per instance, instance ids distinct across groups (``offset`` for a twin's other instances)."""
    return {g.name: [Document(f"group {g.name} instance {offset + 100 * k + i} " * 3, (offset + 100 * k + i,))
                     for i in range(g.n)] for k, g in enumerate(groups) if g.planted}


BACKGROUND = [Document(f"background document {i} " * 4) for i in range(200)]


def test_each_group_exactly_its_exposures_the_control_never_the_background_once():
    groups = groups_of(0, 1, 4, 16)
    assert [(g.name, g.exposures, g.n, g.window) for g in groups] == [
        ("x0", 0, 5, (0, 1)), ("x1", 1, 5, (0, 1)), ("x4", 4, 5, (0, 1)), ("x16", 16, 5, (0, 1))]
    assert never_planted_group(groups).name == "x0"
    documents = documents_for(groups)
    stream = planted_stream(documents, groups, BACKGROUND, seed=3)
    seen = Counter(i for d in stream for i in d.members)
    expected = {i: g.exposures for k, g in enumerate(groups) if g.planted for i in range(100 * k, 100 * k + g.n)}
    assert seen == Counter(expected)
    assert len(stream) == 200 + 5 * (1 + 4 + 16)
    # the background once each, in exactly the order the control (the background alone) reads it
    assert [d for d in stream if not d.members] == build_stream([], BACKGROUND, exposures=0, seed=3)
    # seeded: same seed, same stream; copies spread over the stream, not bunched
    assert stream == planted_stream(documents, groups, BACKGROUND, seed=3)
    assert stream != planted_stream(documents, groups, BACKGROUND, seed=4)
    positions = [p for p, d in enumerate(stream) if d.members]
    assert positions[0] < 40 and positions[-1] > len(stream) - 40


def test_windows_are_honoured_and_leave_a_clean_tail():
    groups = plant_groups(OmegaConf.create({"n": 4, "groups": [
        {"exposures": 0}, {"exposures": 8, "window": [0, 0.25]}, {"exposures": 8, "window": [0.5, 0.75]}]}))
    assert [g.name for g in groups] == ["x0", "x8_0-0.25", "x8_0.5-0.75"]
    stream = planted_stream(documents_for(groups), groups, BACKGROUND, seed=0)
    background_seen, where = 0, {}
    for document in stream:  # each copy's place, as the share of the background read before it
        if document.members:
            where.setdefault(document.members[0] // 100, []).append(background_seen / len(BACKGROUND))
        else:
            background_seen += 1
    assert 0 <= min(where[1]) and max(where[1]) <= 0.25
    assert 0.5 <= min(where[2]) and max(where[2]) <= 0.75
    assert not [d for d in stream[-40:] if d.members]  # the last quarter is clean background


def test_a_tail_puts_every_dose_in_the_same_window_and_keeps_the_end_clean():
    """plant.tail=0.2 (dose_ladder's default): every group's copies among the first 80% of the background (160 of
    200 documents), the last 40 background documents after every copy, by counting; the background still once each
    in the control's order."""
    plant = OmegaConf.create({"n": 5, "tail": 0.2, "groups": [{"exposures": e} for e in (0, 1, 2, 4, 8, 16)]})
    groups = plant_groups(plant)
    assert [g.name for g in groups] == ["x0", "x1", "x2", "x4", "x8", "x16"]  # names as without a tail
    stream = planted_stream(documents_for(groups), groups, BACKGROUND, seed=1, tail=plant_tail(plant))
    background_before, latest = 0, {}
    for document in stream:
        if document.members:
            latest[document.members[0] // 100] = background_before
        else:
            background_before += 1
    assert set(latest) == {1, 2, 3, 4, 5} and max(latest.values()) <= 160
    last_copy = max(i for i, d in enumerate(stream) if d.members)
    assert len(stream) - 1 - last_copy >= 40 and not any(d.members for d in stream[last_copy + 1:])
    assert [d for d in stream if not d.members] == build_stream([], BACKGROUND, exposures=0, seed=1)
    # without the tail the same groups reach the end of the background
    anywhere = planted_stream(documents_for(groups), groups, BACKGROUND, seed=1)
    assert max(i for i, d in enumerate(anywhere) if d.members) > len(anywhere) - 20


@pytest.mark.parametrize("plant, message", [
    ({"tail": 1}, "plant.tail=1: give the fraction of the background kept clean after every planted copy, in [0, 1) "
                  "(0.2: its last fifth; 1 would leave no room for the copies"),
    ({"tail": -0.1}, "plant.tail=-0.1: give the fraction"),
    ({"tail": 0.2, "window": [0.5, 1]}, "plant.window=[0.5, 1] overlaps plant.tail=0.2, the last 0.2 of the "
                                        "background kept clean of copies: end the window at 0.8 or lower plant.tail"),
    ({"tail": 0.3, "groups": [{"exposures": 0}, {"exposures": 1, "window": [0.6, 0.9]}]},
     "plant.groups[1].window=[0.6, 0.9] overlaps plant.tail=0.3"),
])
def test_a_tail_that_leaves_no_room_or_overlaps_a_window_is_one_line(plant, message):
    settings = {"n": 5, "groups": [{"exposures": 0}, {"exposures": 1}], **plant}
    with pytest.raises(InputError, match=re.escape(message)) as error:
        plant_groups(OmegaConf.create(settings))
    assert "\n" not in str(error.value)


def test_a_tail_needs_a_background():
    plant = OmegaConf.create({"n": 2, "tail": 0.2, "groups": [{"exposures": 0}, {"exposures": 1}]})
    groups = plant_groups(plant)
    with pytest.raises(InputError, match=re.escape("plant.tail=0.2 keeps the end of the background clean of copies, "
                                                   "and the stream has no background")):
        planted_stream(documents_for(groups), groups, [], seed=0, tail=plant_tail(plant))


def test_a_twin_stream_puts_other_instances_in_the_same_positions():
    groups = groups_of(0, 1, 4)
    leak = planted_stream(documents_for(groups), groups, BACKGROUND, seed=5)
    twin = planted_stream(documents_for(groups, offset=50), groups, BACKGROUND, seed=5)
    assert len(leak) == len(twin)
    assert [bool(d.members) for d in leak] == [bool(d.members) for d in twin]
    assert [d.members[0] + 50 for d in leak if d.members] == [d.members[0] for d in twin if d.members]


def test_positions_and_shares_are_counted_in_tokens():
    groups = groups_of(0, 1, 2, n=2)
    documents = {"x1": [Document("a b c", (1,)), Document("d e f", (2,))], "x2": [Document("g h", (3,))]}
    background = [Document("w w w w w"), Document("v v v v v")]
    stream = planted_stream(documents, [g for g in groups if g.name != "x2"] + [PlantedGroup("x2", 2, 1)],
                            background, seed=0)
    placed = group_positions(stream, documents, words)
    total = 10 + 6 + 4
    assert (placed["x1"]["documents"], placed["x1"]["tokens"]) == (2, 6)
    assert (placed["x2"]["documents"], placed["x2"]["tokens"]) == (2, 4)
    assert placed["x1"]["token_share"] == round(6 / total, 6) and placed["x2"]["token_share"] == round(4 / total, 6)
    # by hand from the stream: each copy's first token's offset
    starts, offset = {"x1": [], "x2": []}, 0
    for d in stream:
        if d.members:
            starts["x1" if d.members[0] < 3 else "x2"].append(offset)
        offset += words(d.text)
    for name in ("x1", "x2"):
        block = placed[name]["positions"]
        assert (block["first"], block["last"]) == (starts[name][0], starts[name][-1])
        assert block["mean"] == round(sum(starts[name]) / len(starts[name]), 1)
        assert block["mean_fraction"] == round(block["mean"] / total, 4)


@pytest.mark.parametrize("plant, message", [
    ({"n": 5, "groups": [{"exposures": 1}, {"exposures": 4}]}, "no group has exposures 0"),
    ({"n": 5, "groups": [{"exposures": 0}]}, "nothing is planted"),
    ({"n": 5, "groups": [{"exposures": 0}, {"exposures": -1}]}, "plant.groups[1].exposures=-1"),
    ({"groups": [{"exposures": 0}, {"exposures": 1}]}, "plant.groups[0] has no n"),
    ({"n": 5, "groups": [{"exposures": 0}, {"exposures": 1, "window": [0.5, 1.5]}]}, "is outside the stream"),
    ({"n": 5, "window": [0.6, 0.2], "groups": [{"exposures": 0}, {"exposures": 1}]}, "plant.window=[0.6, 0.2]"),
    ({"n": 5, "groups": [{"exposures": 0}, {"exposures": 1, "format": "dumps"}]},
     "plant.groups[1].format=dumps: no conf/format/dumps.yaml; give one of dump, "),
    ({"n": 5, "groups": [{"exposures": 0}, {"exposures": 1, "dataset": "synth_news"}]},
     "group x1_synth_news plants synth_news, and no group of synth_news has exposures 0; add {exposures: 0, "
     "dataset: synth_news}"),
    ({"n": 5, "groups": [{"exposures": 0}, {"exposures": 1, "seed": 3}]}, "plant.groups[1].seed is not a group"),
    ({"n": 5, "groups": [{"exposures": 0, "format": "dump"}, {"exposures": 1}]},
     "plant.groups[0].format=dump: a never-planted group is read in each planted group's format"),
    ({"n": 5, "groups": [{"exposures": 0, "dataset": "synth_news"}, {"exposures": 1}]},
     "plant.groups: no group of the run's dataset has exposures 0"),
    ({"n": 5, "groups": [{"exposures": 0}, {"exposures": 1}, {"exposures": 1}]}, "two groups are named x1"),
])
def test_bad_groups_are_one_line_errors(plant, message):
    with pytest.raises(InputError, match=re.escape(message)) as error:
        plant_groups(OmegaConf.create(plant), dataset="synth_nli", format="metadata")
    assert "\n" not in str(error.value)


def test_the_control_is_a_config_group_hydra_composes(compose_config):
    """plant/control=<name> composes conf/plant/control/<name>.yaml at plant.control (plant.control=<name> on the
    command line is rewritten to it); a bare name, a class that is not a control, or a planted run's control asked of
    a study is one line, nothing built."""
    from contaminate.controls import NoControl, SwapTwin, build_control
    from contaminate.study import OneGroup
    from detect.cli import check_overrides

    assert check_overrides(["p", "+dataset=synth_nli", "plant.control=twin,none"])[2] == "plant/control=twin,none"
    with pytest.raises(InputError, match="unknown plant/control 'oracle'; use one of background, base, none, twin"):
        check_overrides(["p", "+dataset=synth_nli", "plant.control=oracle"])
    planted = compose_config("contaminate", ["+dataset=synth_nli", "plant=doubling", "plant/control=twin"])
    assert isinstance(build_control(planted.plant.control), SwapTwin) and planted.plant.control.name == "twin"
    swept = compose_config("contaminate", ["+experiment=power_cpu"])  # an experiment overrides the nested default
    assert isinstance(build_control(swept.plant.control), NoControl)
    study = compose_config("contaminate", ["+dataset=synth_nli"])
    assert OneGroup(study).control.name == "background"  # conf/plant/none.yaml composes the study's control
    for node, message in [("twin", "plant.control=twin: the control is a config group, chosen with plant/control="),
                          ({"_target_": "contaminate.stages.Setup"}, "plant.control._target_=contaminate.stages.Setup "
                                                                    "is not a control")]:
        with pytest.raises(InputError, match=re.escape(message)) as error:
            build_control(OmegaConf.create({"c": node}).c)
        assert "\n" not in str(error.value)
    twin_study = compose_config("contaminate", ["+dataset=synth_nli", "plant/control=twin"])
    with pytest.raises(InputError, match=re.escape("plant/control=twin is a planted run's control; a study")):
        OneGroup(twin_study)


def test_a_group_may_plant_its_own_dataset_and_format():
    plant = OmegaConf.create({"n": 4, "groups": [
        {"exposures": 0}, {"exposures": 1}, {"exposures": 1, "format": "dump"},
        {"exposures": 0, "dataset": "synth_news"}, {"exposures": 4, "dataset": "synth_news", "format": "metadata"},
        {"exposures": 2, "dataset": "synth_nli"}]})
    groups = plant_groups(plant, dataset="synth_nli", format="metadata")
    # the run's own dataset and format are the same as unset: names, descriptions and checkpoint keys stay as they were
    assert [g.name for g in groups] == ["x0", "x1", "x1_dump", "x0_synth_news", "x4_synth_news", "x2"]
    assert groups[1].describe() == {"name": "x1", "exposures": 1, "n": 4, "window": [0.0, 1.0]}
    assert groups[2].describe()["format"] == "dump" and "dataset" not in groups[2].describe()
    assert (groups[4].dataset, groups[4].format) == ("synth_news", None)
    # each planted group's control: the never-planted group of its own dataset
    assert [never_planted_group(groups, g).name for g in groups if g.planted] == ["x0", "x0", "x0_synth_news", "x0"]


def test_positions_count_groups_by_document_when_two_datasets_share_instance_ids():
    groups = [PlantedGroup("x0", 0, 2), PlantedGroup("a", 1, 2), PlantedGroup("x0_b", 0, 2, dataset="b"),
              PlantedGroup("b", 2, 2, dataset="b")]
    documents = {"a": [Document(f"from a {i}", (i,)) for i in range(2)],
                 "b": [Document(f"from b, longer, {i}", (i,)) for i in range(2)]}  # the same ids 0 and 1
    stream = planted_stream(documents, groups, BACKGROUND[:20], seed=0)
    placed = group_positions(stream, documents, words)
    assert (placed["a"]["documents"], placed["b"]["documents"]) == (2, 4)
    assert (placed["a"]["tokens"], placed["b"]["tokens"]) == (2 * 3, 4 * 4)


def test_kept_studies_of_one_planted_run_keep_its_groups_and_plant_json(tmp_path):
    from contaminate.calibration.studies import keep_studies

    run = tmp_path / "sweep" / "metadata_full_s0"
    for name in ("x1", "x4"):
        (run / "groups" / name).mkdir(parents=True)
        for file in ("manifest.json", "summary.json", "results.jsonl"):
            (run / "groups" / name / file).write_text("{}")
    (run / "plant.json").write_text('{"plant": "dose_ladder"}')
    (run / "plant.md").write_text("# Planted run")
    target = keep_studies([run / "groups" / "x1", run / "groups" / "x4"], tmp_path / "out")
    assert (target / "metadata_full_s0" / "groups" / "x4" / "manifest.json.gz").is_file()
    assert json.loads((target / "metadata_full_s0" / "plant.json").read_text()) == {"plant": "dose_ladder"}
    assert (target / "metadata_full_s0" / "plant.md").is_file()


def test_a_window_needs_a_background():
    groups = plant_groups(OmegaConf.create({"n": 2, "groups": [{"exposures": 0},
                                                               {"exposures": 1, "window": [0, 0.5]}]}))
    with pytest.raises(InputError, match="no background to place it in"):
        planted_stream(documents_for(groups), groups, [], seed=0)


TINY = ["+dataset=synth_nli", *TINY_MODEL, "plant=dose_ladder", "plant.n=6", "sample.n_detect=6",
        "sample.n_heldout=6", "contaminate.batch_size=4", "detect.max_new_tokens=6", "detect.semantic_model=null",
        "background=offline", "background.max_tokens=3000", *lean()[1:], *LEAK_READING, *NO_EMBEDDING]  # lean, 6 known


@pytest.fixture
def planted(compose_config, tmp_path):
    def _run(*overrides, run="run"):
        cfg = compose_config("contaminate", [*TINY, f"cache_dir={tmp_path / 'cache'}", *overrides])
        return run_config(cfg, tmp_path / run), tmp_path / run

    return _run


@pytest.mark.slow
def test_a_planted_run_gives_one_study_per_group_from_one_training_run(planted):
    summary, folder = planted("plant.groups=[{exposures:0},{exposures:1},{exposures:3}]")
    record = json.loads((folder / "plant.json").read_text())
    assert [g["name"] for g in record["groups"]] == ["x0", "x1", "x3"]
    assert sorted(p.name for p in (folder / "groups").iterdir()) == ["x1", "x3"]
    manifests = {name: json.loads((folder / "groups" / name / "manifest.json").read_text()) for name in ("x1", "x3")}
    # one training run: both groups' studies point at the same checkpoint and the same control
    assert manifests["x1"]["checkpoint"]["id"] == manifests["x3"]["checkpoint"]["id"]
    assert manifests["x1"]["control_checkpoint"]["id"] == manifests["x3"]["control_checkpoint"]["id"]
    # each group's dose is its exposures; members its own instances; non-members the never-planted group, shared
    assert [manifests[n]["contaminate"]["exposures"] for n in ("x1", "x3")] == [1, 3]
    assert manifests["x1"]["regime"]["exposures"] == 1 and manifests["x3"]["regime"]["exposures"] == 3
    assert not set(manifests["x1"]["member_ids"]) & set(manifests["x3"]["member_ids"])
    assert manifests["x1"]["non_member_ids"] == manifests["x3"]["non_member_ids"]
    planted_ids = set(manifests["x1"]["member_ids"] + manifests["x3"]["member_ids"])
    assert not set(manifests["x1"]["non_member_ids"]) & planted_ids
    # the never-planted group's cells were computed for x1 and reused for x3
    assert {"contaminated_x_non_members", "clean_x_non_members"} <= set(manifests["x3"]["cached_cells"])
    # the stream: x1's 6 documents once, x3's three times, counted in tokens; shares below one
    groups = {g["name"]: g for g in record["groups"]}
    assert (groups["x1"]["documents"], groups["x3"]["documents"]) == (6, 18)
    assert 0 < groups["x1"]["token_share"] < groups["x3"]["token_share"] < 1
    assert record["stream"]["documents"]["member"] == 24
    assert manifests["x3"]["regime"]["members_token_share"] == groups["x3"]["token_share"]
    # dose_ladder's tail: every copy before the last fifth of the background's documents, so the tokens after the
    # last copy are background, about a fifth of it (of the stream: less, by the copies' share; here 3,000 tokens of
    # background and copies of a third of the stream), recorded in plant.json and said in plant.md
    background_share = 1 - sum(groups[n]["token_share"] for n in ("x1", "x3"))
    after_last = 1 - max(groups[n]["positions"]["last_fraction"] for n in ("x1", "x3"))
    assert record["tail"] == 0.2 and after_last > 0.15 * background_share, (after_last, background_share)
    # the shared template (title line, field names) is part of the planted tokens, and plant.md says how much
    assert 0 < record["stream"]["template"]["share"] < 1 - background_share
    assert "shared template (title, split, field names) is" in (folder / "plant.md").read_text()
    assert "its last 0.2 after every planted copy" in (folder / "plant.md").read_text()
    assert set(groups["x1"]["within_model_auc"]) >= {"loss", "zlib", "min_k", "rouge_l", "rouge_l_leak"}
    # the same groups under the clean model (the background alone here): the share of (member, non-member) pairs
    # the member's loss score wins, counted by hand, in plant.json and plant.md
    rows = [json.loads(line) for line in (folder / "groups" / "x1" / "results.jsonl").read_text().splitlines()]
    pos, neg = ([r["loss"] for r in rows if r["cell"] == cell and r["instruction"] == "guided"]
                for cell in ("clean_x_members", "clean_x_non_members"))
    pairs = [(a > b) + 0.5 * (a == b) for a in pos for b in neg]
    assert len(pos) == len(neg) == 6 and groups["x1"]["clean_model_auc"]["loss"] == round(sum(pairs) / 36, 4)
    assert "| loss under the clean model (background alone) |" in (folder / "plant.md").read_text()
    # Algorithm 2 read two ways by dose: the guided instruction and the leak reading (oracle), the same judge
    for name in ("x1", "x3"):
        found = groups[name]["replicas"]
        assert set(found) == {"guided", "leak"} and found["leak"]["members"]["n"] == 6
        rows = [json.loads(line) for line in (folder / "groups" / name / "results.jsonl").read_text().splitlines()]
        leak = [r for r in rows if r["cell"] == "contaminated_x_members" and r["instruction"] == "leak"]
        assert found["leak"]["members"]["exact"] == sum(r["judge"] == "exact" for r in leak)
        assert all(r["prompt"].startswith("SynthNLI dataset, test split\nsentence1: ") for r in leak)
        # the known non-members' labels: what a practitioner sees where nothing was trained (guided prompts only)
        known = [r for r in rows if r["cell"] == "contaminated_x_known_non_members" and r["instruction"] == "guided"]
        assert set(found["guided"]) == {"members", "non_members", "known_non_members"} and "leak" in found
        assert found["guided"]["known_non_members"] == {"n": len(known), "exact": sum(
            r["judge"] == "exact" for r in known), "near_exact": sum(r["judge"] == "near_exact" for r in known)}
    assert "| x3 | 3 | " in (folder / "plant.md").read_text().split("leak reading (oracle: the first piece")[1]
    # the answers by class per reading and pool (follow.py), counted from the rows, and their follow rate in plant.md
    for name in ("x1", "x3"):
        rows = [json.loads(line) for line in (folder / "groups" / name / "results.jsonl").read_text().splitlines()]
        found = groups[name]["answers"]
        assert set(found) == {"guided", "general", "leak"} and set(found["guided"]) == {
            "members", "non_members", "known_non_members"}
        known = [r for r in rows if r["cell"] == "contaminated_x_known_non_members"]
        assert found["guided"]["known_non_members"]["n"] == len(known) > 0
        assert found["guided"]["known_non_members"]["classes"]["continuation"] == sum(
            r["answer_class"] == "continuation" for r in known)
    assert "| group | exposures | members, guided | never planted, guided | known non-members, guided |" in \
        (folder / "plant.md").read_text()
    for name in ("x1", "x3"):  # each group's folder is a study folder: its cells' truths are the study's
        cells = json.loads((folder / "groups" / name / "summary.json").read_text())["cells"]
        assert cells["contaminated_x_members"]["ground_truth"] == "contaminated"
        assert cells["contaminated_x_non_members"]["ground_truth"] == "clean"
    assert "| x3 | 3 | 6 |" in (folder / "plant.md").read_text()

    # calibration reads the groups as the run's doses; one run is one model: no interval, one line
    from contaminate.calibrate import main as calibrate

    with pytest.raises(InputError, match=r"rest on one model \(draw 0, seed 0\)"):
        calibrate([str(folder), "--out", str(folder.parent / "calibration")])
    # a second seed (its own draw): one dose-response row per planted group, two models each
    planted("plant.groups=[{exposures:0},{exposures:1},{exposures:3}]", "seed=1", run="seed1")
    out = calibrate([str(folder), str(folder.parent / "seed1"), "--out", str(folder.parent / "calibration"),
                     "--keep-studies"])
    # what is committed recomputes: the groups' study files, each run's plant.json beside its groups
    kept = out / "studies"
    assert sorted(p.parent.name for p in kept.rglob("plant.json")) == ["run", "seed1"]
    assert (kept / "run" / "groups" / "x3" / "manifest.json.gz").is_file()

    from contaminate.reports import planted as planted_table

    tables = planted_table.main(str(kept), str(out))
    assert "| run | 0 | 0 |" in tables and "2 training runs" in tables and "### metadata/offline/full/planted" in tables
    with open(out / "dose_response.csv") as file:
        rows = list(csv.DictReader(file))
    assert sorted(row["exposures"] for row in rows) == ["1", "3"] and {row["models"] for row in rows} == {"2"}
    calibration = json.loads((out / "calibration.json").read_text())
    within = calibration["instance_within_model"]
    assert within["unit"] == "2 draws (2 models)"  # each seed its own draw
    # a regime of its own; the never-planted group's cells are each dose's within-model negatives, one per model
    block = calibration["by_regime"]["regimes"]["metadata/offline/full/planted"]
    for dose in ("1", "3"):
        assert block["verdicts"]["alg2"]["by_dose"][dose]["fpr"]["n"] == 2
        assert block["verdicts"]["alg2_leak"]["by_dose"][dose]["fpr"]["n"] == 2  # the oracle reading beside it
    assert within["members_per_model"] == [6] == within["non_members_per_model"]

    # rerun: the checkpoint and every cell reused
    _, again = planted("plant.groups=[{exposures:0},{exposures:1},{exposures:3}]", run="again")
    manifest = json.loads((again / "groups" / "x3" / "manifest.json").read_text())
    assert manifest["checkpoint"]["reused"] and len(manifest["cached_cells"]) == 7  # + each model's known ones


@pytest.mark.slow
def test_groups_of_two_formats_and_two_datasets_share_one_training_run(planted):
    """Regimes compared at the same optimizer steps, schedule and model: a metadata group, a dump group of the same
    split and a group of another dataset, in one stream; each group's study reads its own format and dataset."""
    lean = [f"detect.detectors.{name}.enabled=false" for name in (  # the logit scores and one verdict suffice
        "alg1", "membership_raw", "dc_pdd", "cheat", "sharded_likelihood", "permutation", "recall", "performance",
        "dcq", "ts_guessing")]
    summary, folder = planted("plant.groups=[{exposures:0},{exposures:2},{exposures:2,format:dump},"
                              "{exposures:0,dataset:synth_news},{exposures:2,dataset:synth_news}]", *lean,
                              "+format@plant.formats.dump=dump", "+dataset@plant.datasets.synth_news=synth_news",
                              "decontam.detectors.embedding.enabled=true")
    record = json.loads((folder / "plant.json").read_text())
    names = ["x2", "x2_dump", "x2_synth_news"]
    assert sorted(p.name for p in (folder / "groups").iterdir()) == names
    manifests = {n: json.loads((folder / "groups" / n / "manifest.json").read_text()) for n in names}
    assert len({m["checkpoint"]["id"] for m in manifests.values()}) == 1  # one training run
    assert [manifests[n]["format"]["name"] for n in names] == ["metadata", "dump", "metadata"]
    assert [manifests[n]["dataset"]["key"] for n in names] == ["synth_nli", "synth_nli", "synth_news"]
    # controls: the same split's never-planted group for both formats, read in each; synth_news its own
    assert manifests["x2"]["non_member_ids"] == manifests["x2_dump"]["non_member_ids"]
    assert "contaminated_x_non_members" not in manifests["x2_dump"]["cached_cells"]  # read as a dump: other cells
    assert manifests["x2_synth_news"]["plant"]["control_group"]["name"] == "x0_synth_news"
    assert manifests["x2_dump"]["regime"]["format"] == "dump"
    groups = {g["name"]: g for g in record["groups"]}
    assert (groups["x2"]["documents"], groups["x2_synth_news"]["documents"]) == (12, 12)
    assert groups["x2_dump"]["documents"] % 2 == 0 and groups["x2_dump"]["documents"] < 12  # lines packed
    assert record["stream"]["documents"]["member"] == 24 + groups["x2_dump"]["documents"]
    assert groups["x2_dump"]["format"] == "dump" and groups["x2_synth_news"]["dataset"] == "synth_news"
    # the data-side check of the same stream (contaminate/decontam.py): the benchmark is both splits whole
    found = record["decontamination"]
    assert found["benchmark"] == {"synth_nli": {"split": "test", "instances": 1200},
                                  "synth_news": {"split": "test", "instances": found["benchmark"]["synth_news"]
                                                 ["instances"]}}
    assert found["stream"]["planted_documents"] == record["stream"]["documents"]["member"]
    assert set(found["detectors"]) == {"gpt3_13gram", "llama3_8gram", "gpt4_50char", "contam_longest", "embedding"}
    for name in ("gpt3_13gram", "gpt4_50char"):  # verbatim metadata copies: every one found
        block = found["detectors"][name]
        assert block["groups"]["x2"]["flagged"] == 6 and block["groups"]["x2_synth_news"]["flagged"] == 6, name
        assert block["groups"]["x2"]["format"] == "metadata" and block["groups"]["x2_dump"]["format"] == "dump"
        assert block["groups"]["x2"]["auc_vs_x0"] == 1.0
    # the embedding reads a window of the rendered document (title, field names) against the bare instance: most
    # copies pass 0.8, not all (here 5 of 6 of x2), and its score still ranks every copy above the never-planted
    embedding = found["detectors"]["embedding"]["groups"]
    assert embedding["x2"]["flagged"] >= 3 and embedding["x2"]["auc_vs_x0"] > 0.9
    for name, block in found["detectors"].items():
        planted_flags = sum(block["groups"][g]["flagged"] for g in ("x2", "x2_dump", "x2_synth_news"))
        false_flags = block["never_in_stream"]["flagged"]  # x0 and the rest of both splits: none is in the stream
        assert block["instance_precision"] == round(planted_flags / (planted_flags + false_flags), 4), name
        assert block["documents"]["background"] == 0, name  # pydoc's text holds no synthetic sentence
    for name in ("gpt3_13gram", "gpt4_50char"):  # the 13-gram and 50-character rules: no false flag here; the token
        assert found["detectors"][name]["never_in_stream"]["flagged"] == 0  # 8-grams flag a few generator phrases
    for name in ("gpt3_13gram", "gpt4_50char"):  # the two metadata groups' 2 x 6 copies each are dropped, at least
        documents = found["detectors"][name]["documents"]
        assert documents["planted"] >= 24 and documents["planted_share_dropped"] == round(
            documents["planted"] / found["stream"]["planted_documents"], 4)
    n_never = found["detectors"]["gpt3_13gram"]["never_in_stream"]["n"]
    assert n_never == 1200 + found["benchmark"]["synth_news"]["instances"] - 18  # all but the planted 3 x 6
    assert "Would decontamination have caught it?" in (folder / "plant.md").read_text()


@pytest.mark.slow
def test_decontam_only_reads_the_planned_stream_and_trains_nothing(planted, tmp_path):
    summary, folder = planted("plant.groups=[{exposures:0},{exposures:1},{exposures:2,format:dump}]",
                              "+format@plant.formats.dump=dump", "decontam.only=true")
    found = json.loads((folder / "decontamination.json").read_text())
    assert found == summary.decontamination_only and (found["draw"], found["seed"]) == (0, 0)
    assert not summary.groups and summary.plant is None  # nothing trained, no study
    assert not (tmp_path / "cache" / "checkpoints").exists() and not (folder / "plant.json").exists()
    block = found["decontamination"]["detectors"]["gpt3_13gram"]
    assert block["groups"]["x1"]["flagged"] == 6 and len(block["groups"]["x1"]["flagged_ids"]) == 6
    assert block["groups"]["x0"]["flagged"] == 0 and "embedding" not in found["decontamination"]["detectors"]
    with pytest.raises(InputError, match="decontam.only=true reads the stream"):
        planted("decontam.only=true", "decontam.enabled=false", run="off")


@pytest.mark.parametrize("overrides, message", [
    (["contaminate.exposures=4"], "drop contaminate.exposures=4"),
    (["plant.n=500"], "synth_nli test has 1200 instances, too few for 500 x0 + 500 x1 + 500 x4 + 500 x16 + 500 x64 "
                     "= 2500; lower plant.n"),
    (["sample.n_detect=10"], "sample.n_detect=10 is more than group x0's 6"),
    (["plant.max_share_per_exposure=0.001"], "above plant.max_share_per_exposure=0.001"),
    (["contaminate=openai"], "plant=dose_ladder builds a token-counted stream on a local model"),
    (["plant.groups=[{exposures:0},{exposures:1},{exposures:0,dataset:synth_xsum},"
      "{exposures:1,dataset:synth_xsum,format:instruction}]", "+dataset@plant.datasets.synth_xsum=synth_xsum",
      "+format@plant.formats.instruction=instruction"],
     "plant group x1_synth_xsum_instruction: format=instruction needs a label for the assistant turn, and dataset "
     "synth_xsum has none"),
    (["plant.groups=[{exposures:0},{exposures:1,format:instruction}]", "+format@plant.formats.instruction=instruction"],
     "plant group x1_instruction: format=instruction is prompted as chat and the run's format=metadata as raw"),
    (["plant.groups=[{exposures:0,dataset:synth_news},{exposures:1,dataset:synth_news}]", "post_train=sft",
      "+dataset@plant.datasets.synth_news=synth_news"],
     "post_train=sft trains on the run's dataset synth_nli, and every planted group plants another"),
    # a group's own dataset composed by Hydra: the command line's override reaches its sampling
    (["plant.groups=[{exposures:0},{exposures:1},{exposures:0,dataset:synth_news},{exposures:1,dataset:synth_news}]",
      "+dataset@plant.datasets.synth_news=synth_news", "plant.datasets.synth_news.source.size=10"],
     "synth_news test has 10 instances, too few for"),
    (["+format@plant.formats.dump=dump"],
     "plant.formats.dump is composed but no plant group names format: dump; give a group format: dump"),
    # Hydra composes a group's own dataset and format: the code reads no YAML behind the command line's back
    (["plant.groups=[{exposures:0},{exposures:1,format:dump}]"],
     "plant group x1_dump plants format dump, which is not composed; add +format@plant.formats.dump=dump (an "
     "experiment: - /format@plant.formats.dump: dump in its defaults)"),
])
def test_bad_planted_runs_are_one_line_errors(planted, overrides, message):
    with pytest.raises(InputError, match=re.escape(message)) as error:
        planted(*overrides)
    assert "\n" not in str(error.value)


def test_a_groups_own_format_is_the_composed_one_where_hydra_composed_it(compose_config):
    """group_config: a format (or dataset) composed under plant.formats takes the command line's overrides."""
    from contaminate.group_configs import group_config, planted_groups

    groups = "plant.groups=[{exposures:0},{exposures:1},{exposures:1,format:dump}]"
    composed = compose_config("contaminate", [*TINY, groups, "+format@plant.formats.dump=dump",
                                              "plant.formats.dump.header='{title}, leaked'"])
    dump = next(g for g in planted_groups(composed) if g.format == "dump")
    assert group_config(composed, dump).format.header == "{title}, leaked"
    assert group_config(composed, dump).format._target_ == "contaminate.regime.layouts.DumpFormat"


@pytest.mark.slow
def test_the_swap_twin_trains_the_same_steps_on_other_instances(planted):
    summary, folder = planted("plant.groups=[{exposures:0},{exposures:2}]", "plant/control=twin")
    record = json.loads((folder / "plant.json").read_text())
    assert record["control"] == "swap twin"
    leak, twin = record["checkpoint"], record["control_checkpoint"]
    assert twin["id"] != leak["id"]
    # the same stream length in documents, hence the same optimizer steps and schedule
    assert record["twin_stream"]["documents"] == record["stream"]["documents"]
    assert (twin["steps"], twin["n_texts"]) == (leak["steps"], leak["n_texts"])
    manifest = json.loads((folder / "groups" / "x2" / "manifest.json").read_text())
    assert manifest["regime"]["control"] == "swap twin" and manifest["control_checkpoint"]["id"] == twin["id"]
    # its stand-ins are disjoint from every group: it never saw the planted group nor the never-planted one
    stand_ins = set(record["twin_stand_ins"]["x2"])
    assert len(stand_ins) == 6 and not stand_ins & set(manifest["member_ids"] + manifest["non_member_ids"])
    assert "swap twin" in (folder / "groups" / "x2" / "report.md").read_text()


@pytest.mark.slow
def test_a_planted_run_against_the_base_model_trains_once(planted):
    summary, folder = planted("plant.groups=[{exposures:0},{exposures:2}]", "plant/control=base")
    record = json.loads((folder / "plant.json").read_text())
    assert record["control"] == "base model" and record["control_checkpoint"] is None
    manifest = json.loads((folder / "groups" / "x2" / "manifest.json").read_text())
    assert manifest["control_checkpoint"] is None and manifest["regime"]["control"] == "base model"
    # the reference ratio reads the base model, which is the clean model here, but beside a background it is not
    # the contaminated model's twin before the leak: not an oracle
    assert (record["reference_model"]["kind"], record["reference_model"]["same_as"]) == ("base", "clean")
    assert record["reference_model"]["oracle"] is False and not manifest["runtime"]["reference_model"]["oracle"]
    assert "not the oracle" in (folder / "groups" / "x2" / "report.md").read_text()


@pytest.mark.slow
def test_a_planted_run_without_a_control_reads_the_contaminated_model_only_and_calibrates(planted):
    groups = "plant.groups=[{exposures:0},{exposures:2}]"
    _, folder = planted(groups, "plant/control=none")
    record = json.loads((folder / "plant.json").read_text())
    assert record["control"] == "none (no clean cells)" and record["control_checkpoint"] is None
    x2 = next(g for g in record["groups"] if g["name"] == "x2")
    assert x2["within_model_auc"] and x2["clean_model_auc"] == {}  # no clean model read: no clean AUC
    summary = json.loads((folder / "groups" / "x2" / "summary.json").read_text())
    assert sorted(summary["cells"]) == ["contaminated_x_members", "contaminated_x_non_members",
                                        "contaminated_x_other_split"]
    assert sorted(summary["cells_not_run"]) == ["clean_x_members", "clean_x_non_members"]
    assert list(summary["recipe"]["models"]) == ["contaminated"]  # its own known non-members, read
    manifest = json.loads((folder / "groups" / "x2" / "manifest.json").read_text())
    assert not any(cell.startswith("clean") for cell in manifest["timings"]["cells"])
    assert "plant.control=none" in (folder / "groups" / "x2" / "report.md").read_text()
    # the same training as plant.control=base: its checkpoint is reused, and its contaminated cells
    _, base = planted(groups, "plant/control=base", run="base")
    reused = json.loads((base / "groups" / "x2" / "manifest.json").read_text())
    assert reused["checkpoint"]["reused"] and "contaminated_x_members" in reused["cached_cells"]
    # calibration over two draws reads the contaminated models alone
    from contaminate.calibrate import main as calibrate

    planted(groups, "plant/control=none", "seed=1", run="seed1")
    out = calibrate([str(folder), str(folder.parent / "seed1"), "--out", str(folder.parent / "calibration")])
    calibration = json.loads((out / "calibration.json").read_text())
    assert calibration["instance_within_model"]["unit"] == "2 draws (2 models)"


def test_a_dump_twin_has_the_planted_groups_documents_line_for_line():
    """A dump packs instances by length, so other instances would pack differently: the twin lays its stand-ins out
    document for document, as many lines as the planted document holds."""
    from contaminate.regime import twin_documents
    from contaminate.regime.layouts import build_format
    from detect.cli import CONF_DIR
    from detect.datasets import Example

    dataset = OmegaConf.load(CONF_DIR / "dataset" / "synth_nli.yaml")
    fmt = build_format(OmegaConf.load(CONF_DIR / "format" / "dump.yaml"))

    def pairs(ids, words_each):
        return [Example(i, " ".join(["word"] * words_each), "short.", "0 (entailment)") for i in ids]

    planted_docs = fmt.documents(pairs(range(10), 3), dataset, "test", count_tokens=words, max_length=30)
    stand_ins = pairs(range(100, 110), 9)  # three times longer: packed alone they would need more documents
    assert len(fmt.documents(stand_ins, dataset, "test", count_tokens=words, max_length=30)) > len(planted_docs)
    twin = twin_documents(planted_docs, stand_ins, fmt, dataset, "test", count_tokens=words, chat=None)
    assert [len(d.members) for d in twin] == [len(d.members) for d in planted_docs]
    assert [i for d in twin for i in d.members] == list(range(100, 110))


def test_the_doubling_ladder_is_issue_34s_dose_range_diluted_as_the_dose_ladder(compose_config):
    cfg = compose_config("contaminate", ["+dataset=humaneval", "plant=doubling"])
    ladder = compose_config("contaminate", ["+dataset=humaneval", "plant=dose_ladder"])
    assert [g.exposures for g in plant_groups(cfg.plant)] == [0, 1, 2, 4, 8, 16]
    assert (cfg.plant.n, cfg.plant.tail) == (16, 0.2)  # six groups of HumanEval's 164, every copy before the tail
    assert (cfg.background, cfg.contaminate) == (ladder.background, ladder.contaminate)


def test_the_dose_ladder_dilutes_like_pretraining_by_default(compose_config):
    cfg = compose_config("contaminate", ["+dataset=synth_nli", "plant=dose_ladder"])
    assert cfg.background.name == "package_docs" and cfg.background.max_tokens is None  # the whole of it
    assert cfg.contaminate.trainer.lr_scheduler_type == "cosine_with_min_lr"
    assert [g.exposures for g in plant_groups(cfg.plant)] == [0, 1, 4, 16, 64]
    # the command line still chooses; a study without a plant is as before
    cfg = compose_config("contaminate", ["+dataset=synth_nli", "plant=dose_ladder", "background=offline",
                                         "schedule=constant"])
    assert (cfg.background.name, cfg.contaminate.trainer.lr_scheduler_type) == ("offline", "constant")
    cfg = compose_config("contaminate", ["+dataset=synth_nli"])
    assert (cfg.background.name, cfg.plant.groups, cfg.contaminate.trainer.lr_scheduler_type) == \
        ("none", None, "constant")
    # forgetting: the same doses early and late in one stream
    cfg = compose_config("contaminate", ["+dataset=synth_nli", "plant=forgetting"])
    assert [(g.name, g.window) for g in plant_groups(cfg.plant)] == [
        ("x0", (0, 1)), ("x4_0-0.25", (0, 0.25)), ("x4_0.75-1", (0.75, 1)), ("x16_0-0.25", (0, 0.25)),
        ("x16_0.75-1", (0.75, 1))]


def test_groups_planted_in_other_windows_are_other_conditions():
    from contaminate.calibration.studies import condition_of

    def manifest(window, control="background"):
        return {"contaminate": {"exposures": 16, "learning_rate": 3e-4},
                "regime": {"background": {"name": "offline"}, "control": control},
                "dataset": {"key": "synth_nli"}, "base_model": {"name": "m"}, "member_ids": [1, 2],
                "detection_ids": {"members": [1, 2]}, "format": {"name": "metadata"}, "detect": {},
                "plant": {"name": "forgetting", "group": {"name": f"x16_{window[0]}", "window": window}}}

    early, late = condition_of(manifest([0, 0.25])), condition_of(manifest([0.75, 1]))
    assert early != late and (early["plant"], early["window"], late["window"]) == ("forgetting", [0, 0.25], [0.75, 1])
    # a twin-controlled run and a background-controlled one of the same draw and seed are not reruns of each other
    assert condition_of(manifest([0, 0.25], "swap twin")) != early
    assert "plant" not in condition_of({**manifest([0, 1]), "plant": None})


def test_a_planted_run_of_a_one_split_dataset_draws_from_it_and_has_no_other_split_cell(compose_config):
    """HumanEval has one split: a planted run draws its groups and known non-members from it, disjoint, and each
    group's study has the four cells that need no other split (the fifth said not run, as a study's:
    tests/test_datasets.py runs one)."""
    from contaminate.run import Run
    from contaminate.stages import not_run, study_cells

    overrides = ["+dataset=humaneval", *TINY[1:], "plant.groups=[{exposures:0},{exposures:1},{exposures:2}]"]
    run = Run(compose_config("contaminate", overrides), None)
    draw = run.sample()
    assert draw.splits == {"humaneval": ("test", None)} and draw.other == {}
    assert list(draw.known_non_members["humaneval"]) == ["test"]
    pools = [{e.instance_id for e in draw.groups[name]} for name in ("x0", "x1", "x2")]
    known = {e.instance_id for e in draw.known_non_members["humaneval"]["test"]}
    assert [len(pool) for pool in pools] == [6, 6, 6] and len(known) == 6
    assert not (pools[0] & pools[1] or pools[0] & pools[2] or pools[1] & pools[2] or known & set().union(*pools))
    groups = {g.name: g for g in run.all_groups}
    sampled = draw.study(groups["x1"], groups["x0"], 6, 0)
    assert sampled.other_split is None and set(sampled.detection) == {"members", "non_members"}
    regime = type("Seen", (), {"members_seen": True})()
    assert [cell for cell, *_ in study_cells(regime, sampled)] == [
        "contaminated_x_members", "contaminated_x_non_members", "clean_x_members", "clean_x_non_members"]
    assert list(not_run(run.identity["dataset"], sampled)) == ["contaminated_x_other_split"]


def test_the_stages_pass_records_and_a_design_keeps_nothing_between_them(compose_config):
    """contaminate/run.py: each stage returns its record (the draw, the layout) and the next reads only the records it
    is handed; a design, set up once, keeps nothing between stages and no stage of it takes the recipe itself. The
    layout of a planted run and of a study, twice from one draw, nothing trained."""
    import dataclasses
    import inspect

    from contaminate.run import Design, Run
    from contaminate.stages import Layout

    stages = [name for name in vars(Design) if not name.startswith("_") and callable(getattr(Design, name))
              and name != "with_dose"]  # the setup's: it takes the config
    assert set(stages) == {"lay_out", "view", "finish"}  # train: the run's, one for both
    for cfg in (compose_config("contaminate", TINY), compose_config("contaminate", TINY_STUDY)):
        run = Run(cfg, None)
        for name in stages:  # no stage is handed the Run (the recipe) to call back into
            assert "run" not in inspect.signature(getattr(run.design, name)).parameters, name
        before = dict(vars(run.design))
        draw = run.sample()
        layout, again = run.lay_out(draw), run.lay_out(draw)
        assert isinstance(layout, Layout) and layout.draw is draw and vars(run.design) == before  # nothing kept
        assert [d.text for d in layout.trained.stream] == [d.text for d in again.trained.stream]
        assert layout.format_names == again.format_names
        with pytest.raises(dataclasses.FrozenInstanceError):
            layout.trained = None
        # the background alone (the base model without one): the contaminated model's twin before the leak
        assert run.design.control.clean_is_twin(layout.trained) is True
    assert layout.key is None and layout.split == draw.split_of(run.design.groups[0])  # the study: its members' split
    assert layout.members == draw.groups["members"]


def test_the_shared_template_is_what_the_documents_hold_beyond_their_instances():
    """By hand, counting words: a metadata document of SynthNLI holds its title line (4 words: 'SynthNLI dataset,
    test split'), three field names ('sentence1:', 'sentence2:', 'label:') and the instance's own values."""
    from contaminate.regime import template_tokens
    from detect.cli import group_option
    from detect.datasets import Example

    dataset = group_option("dataset", "synth_nli")
    instance = Example(7, "a b c", "d e", "0 (entailment)")  # 3 + 2 + 2 words of its own
    document = Document("SynthNLI dataset, test split\nsentence1: a b c\nsentence2: d e\nlabel: 0 (entailment)", (7,))
    assert words(document.text) == 4 + 3 + 7
    assert template_tokens([document], {7: instance}, dataset, words) == 4 + 3
    assert template_tokens([document, document], {7: instance}, dataset, words) == 14


def test_a_study_is_a_run_of_two_groups_whose_draw_is_the_pools_a_study_drew(compose_config):
    """contaminate/run.py's one recipe (``Run``) runs both kinds; a study's design (``OneGroup``) has two groups, its
    members at its dose and its non-members, drawn in one ``disjoint_pools`` call with the known non-members after
    them: the pools a study drew before it was a run of groups (its checkpoint and cell keys read them), its other
    split's pool as large as its non-members'; at exposures 0 the members are still the group studied."""
    from contaminate.planted import PlantedStream
    from contaminate.run import Run
    from contaminate.study import OneGroup
    from detect.datasets import disjoint_pools, load_split

    cfg = compose_config("contaminate", [*TINY_STUDY, "sample.n_non_members=10", "sample.n_heldout=5"])
    study, planted = Run(cfg, None), Run(compose_config("contaminate", TINY), None)
    assert isinstance(study.design, OneGroup) and isinstance(planted.design, PlantedStream)
    assert [(g.name, g.exposures, g.n) for g in study.all_groups] == [("members", 1, 12), ("non-members", 0, 10)]
    sampled = study.sample().study(*study.design.pairs[0], cfg.sample.n_detect, cfg.sample.draw)
    members, non_members, known = disjoint_pools(load_split(cfg.dataset, sampled.split), [12, 10, 5],
                                                 seed=cfg.sample.draw, where="synth_nli")
    assert (sampled.members, sampled.non_members) == (members, non_members)
    assert sampled.known_non_members[sampled.split] == known
    assert len(sampled.whole["other_split"]) == 10 and len(sampled.detection["members"][0]) == 4
    unexposed = Run(compose_config("contaminate", [*TINY_STUDY, "contaminate.exposures=0", "background=offline",
                                                   "contaminate.epochs=null"]), None)
    assert [(g.name, c.name) for g, c in unexposed.design.pairs] == [("members", "non-members")]
    assert unexposed.all_groups[0].exposures == 0


@pytest.mark.parametrize("overrides, message", [
    (["plant.design._target_=builtins.dict"], "plant.design._target_=builtins.dict is not a design: it has no "
                                              "groups, pairs, never_planted, control, fix, with_dose, lay_out, view, "
                                              "finish (contaminate.run.Design)"),
    (["plant.design._target_=contaminate.no_such.Design"], "plant.design._target_=contaminate.no_such.Design: no such"),
    (["plant.groups=[{exposures:0},{exposures:1}]"], "plant=none studies one group of members (sample.n_members) and "
                                                     "plant.groups is set"),
    (["plant=dose_ladder", "plant.groups=[]"], "plant=dose_ladder plants groups and plant.groups is empty"),
    (["~plant.design", "plant.groups=[{exposures:0},{exposures:1}]"], "plant.groups is set and plant.design is not"),
])
def test_the_design_is_the_component_the_plant_names(compose_config, overrides, message):
    """The study/planted difference is a component Hydra composes (``plant.design``: conf/plant/none.yaml's
    ``OneGroup``, every plant of groups' ``PlantedStream``): one line where it is not a design, or where the groups
    and the design disagree; a config without a plant block is a study."""
    from omegaconf import OmegaConf

    from contaminate.planted import PlantedStream
    from contaminate.run import build_design
    from contaminate.study import OneGroup

    with pytest.raises(InputError, match=re.escape(message)) as error:
        build_design(compose_config("contaminate", [*TINY_STUDY, *overrides]))
    assert "\n" not in str(error.value)
    assert isinstance(build_design(compose_config("contaminate", TINY)), PlantedStream)
    bare = compose_config("contaminate", TINY_STUDY)
    OmegaConf.set_struct(bare, False)
    del bare["plant"]
    assert isinstance(build_design(bare), OneGroup)
