"""The shifted pool's rewrite (contaminate/shift.py): the same problem, written differently."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from contaminate.shift import rename_identifiers, reword, rewrite_docstring, rewrite_problem

CONF = Path(__file__).resolve().parents[1] / "conf" / "dataset"


def test_names_are_renamed_where_the_syntax_binds_them_and_nowhere_else():
    program = ("import math\n\ndef f(xs, key):\n    count = 0\n    for x in sorted(xs, key=key):\n"
               "        count += str(x).count('1') + math.floor(x)\n    return [y for y in xs if y], count\n")
    renamed, mapping = rename_identifiers(program, "f")
    assert mapping == {"xs": "arg0", "key": "arg1", "count": "var0", "x": "var1", "y": "var2"}
    assert renamed == ("import math\n\ndef f(arg0, arg1):\n    var0 = 0\n    for var1 in sorted(arg0, key=arg1):\n"
                       "        var0 += str(var1).count('1') + math.floor(var1)\n"
                       "    return [var2 for var2 in arg0 if var2], var0\n")
    # a parameter the tests pass by keyword keeps its name
    kept, mapping = rename_identifiers(program, "f", test="assert candidate([1], key=abs) == ([1], 1)")
    assert "key" not in mapping and "def f(arg0, key):" in kept


def test_the_docstring_is_reworded_and_reflowed_and_its_examples_kept():
    body = (" Return the sum of a list of numbers given as a string.\n    The string is never empty.\n"
            "    >>> total('1 2')\n    3\n    ")
    assert reword("Return a list") == "Give back a sequence" and reword("x.list(") == "x.list("
    got = rewrite_docstring(body)
    assert got == (" Give back the sum of a sequence of values supplied as a\n    text. The text is never empty.\n"
                   "    >>> total('1 2')\n    3\n    ")  # re-wrapped at 60 characters, the example as it was


@pytest.mark.slow
def test_the_two_arms_change_one_part_each():
    """rename: the names (and the parameter's name in the prose), the words kept; reword: the words, the names kept."""
    prompt = 'def total(numbers):\n    """ Return the sum of numbers in the list.\n    >>> total([1])\n    1\n    """\n'
    solution = "    acc = 0\n    for n in numbers:\n        acc += n\n    return acc\n"
    renamed, renamed_solution = rewrite_problem(prompt, solution, "total", shift="rename")
    assert "def total(arg0):" in renamed and "Return the sum of arg0 in the list." in renamed
    assert "var0 = 0" in renamed_solution and ">>> total([1])" in renamed
    reworded, reworded_solution = rewrite_problem(prompt, solution, "total", shift="reword")
    assert "def total(numbers):" in reworded and "Give back" in reworded and reworded_solution == solution
    both, _ = rewrite_problem(prompt, solution, "total", shift="rewrite")
    assert "def total(arg0):" in both and "Give back" in both


@pytest.mark.parametrize("shift", ["rewrite", "rename", "reword"])
def test_every_rewritten_humaneval_problem_is_the_same_problem_in_other_words(shift):
    """All 164, by each arm: the function the tests call keeps its name, and the canonical solution, rewritten with
    it, passes the problem's own tests (contaminate/harm.py, behind the boundary); the whole rewrite changes every
    text, rename leaves the docstring's prose words but the names, reword leaves the code."""
    from contaminate.harm import Problem, pass_at_1
    from detect.datasets import load_raw

    raw = load_raw(OmegaConf.load(CONF / "humaneval.yaml"), "test")
    problems, completions = {}, {}
    for i, row in enumerate(raw):
        prompt, solution = rewrite_problem(row["prompt"], row["canonical_solution"], row["entry_point"], row["test"],
                                           shift=shift)
        if shift == "rewrite":
            assert prompt + solution != row["prompt"] + row["canonical_solution"], i
        if shift == "reword":
            assert solution == row["canonical_solution"], i
        if shift == "rename":
            assert "Give back" not in prompt or "Give back" in row["prompt"], i
        assert f"def {row['entry_point']}(" in prompt, i
        problems[i], completions[i] = Problem(i, prompt, row["test"], row["entry_point"]), solution
    found = pass_at_1(problems, completions)
    failed = {i: r for i, r in found["results"].items() if r != "passed"}
    assert not failed and found["pass_at_1"] == 1.0


def test_a_study_asked_for_a_shifted_pool_reads_its_known_non_members_rewritten(compose_config):
    """sample.known_shift=rewrite: the same known non-members (ids), each rewritten; the judged pools as drawn."""
    from contaminate.sampling import sample_pools

    overrides = ["+dataset=humaneval", "sample.n_members=8", "sample.n_non_members=8", "sample.n_detect=4",
                 "sample.n_heldout=6"]
    plain = sample_pools(compose_config("contaminate", overrides))
    shifted = sample_pools(compose_config("contaminate", [*overrides, "sample.known_shift=rewrite"]))
    before, after = plain.known_non_members["test"], shifted.known_non_members["test"]
    assert [e.instance_id for e in before] == [e.instance_id for e in after] and len(after) == 6
    assert all(a.text != b.text and "arg0" in a.text for a, b in zip(after, before))
    assert [e.text for e in shifted.members] == [e.text for e in plain.members]
    assert [e.text for e in shifted.non_members] == [e.text for e in plain.non_members]


def test_a_synthetic_pool_is_rewritten_by_its_generator_same_facts_and_label_other_text(compose_config):
    """synth_nli's shifted pool: each instance from the generator's second template (another wording of every fact,
    another frame), its instance id, label and every drawn name and number kept."""
    from contaminate.shift import shift_pool
    from detect.datasets import load_split

    dataset = compose_config("contaminate", ["+dataset=synth_nli", "model=tiny_random"]).dataset
    pool = load_split(dataset, "test")[:20]
    shifted = shift_pool(dataset, "test", pool, "rewrite")
    assert [(e.instance_id, e.label) for e in shifted] == [(e.instance_id, e.label) for e in pool]
    assert all(a.text != b.text and a.text_pair != b.text_pair for a, b in zip(shifted, pool))
    numbers = [re.findall(r"\d+", e.text + " " + e.text_pair) for e in (pool[0], shifted[0])]
    assert sorted(numbers[0]) == sorted(numbers[1]) and numbers[0]
    assert shift_pool(dataset, "test", pool, None) == list(pool)


def test_a_design_of_two_datasets_asks_an_arm_of_one_and_reads_the_other_as_drawn(compose_config):
    """sample.known_shift={humaneval:rename} on a draw of HumanEval and synth_nli groups (the power design's): the code
    pool renamed (its ids kept), the synthetic pool as drawn; a key naming no drawn dataset, or a value neither an arm
    nor a mapping, is one line."""
    from omegaconf import OmegaConf

    from contaminate.regime.plant import PlantedGroup
    from contaminate.sampling import sample_groups
    from detect.errors import InputError

    code = compose_config("contaminate", ["+dataset=humaneval", "model=tiny_random"]).dataset
    nli = compose_config("contaminate", ["+dataset=synth_nli", "model=tiny_random"]).dataset
    groups = [PlantedGroup("x0", 0, 4), PlantedGroup("x1", 1, 4), *(
        PlantedGroup(f"x{d}_synth_nli", d, 4, dataset="synth_nli") for d in (0, 1))]
    datasets = {g.name: nli if g.dataset else code for g in groups}

    def drawn(shift):
        sample_cfg = OmegaConf.create({"draw": 0, "n_detect": 4, "n_heldout": 6, "known_shift": shift})
        return sample_groups(groups, datasets, sample_cfg).known_non_members

    plain, arm = drawn(None), drawn({"humaneval": "rename"})
    renamed, as_drawn = arm["humaneval"]["test"], plain["humaneval"]["test"]
    assert [e.instance_id for e in renamed] == [e.instance_id for e in as_drawn]
    assert all("arg0" in a.text and a.text != b.text for a, b in zip(renamed, as_drawn))
    assert arm["synth_nli"] == plain["synth_nli"] and drawn("rewrite")["synth_nli"] != plain["synth_nli"]
    for shift, message in (({"humaneval": "rename", "rte": "rewrite"}, "sample.known_shift names rte, which this run "
                            "does not draw; name its datasets (humaneval, synth_nli)"),
                           (3, "sample.known_shift=3: use one arm (rewrite, rename, reword) or a mapping")):
        with pytest.raises(InputError, match=re.escape(message)):
            drawn(OmegaConf.create({"s": shift}).s if isinstance(shift, dict) else shift)


@pytest.mark.parametrize("overrides, message", [
    (["+dataset=rte", "sample.known_shift=rewrite"],
     "sample.known_shift=rewrite rewrites code problems whose text is their prompt and canonical solution "
     "(HumanEval) or the lab's synthetic partitions (synth_*), and rte is neither; use sample.known_shift=null"),
    (["+dataset=humaneval", "sample.known_shift=paraphrase"], "sample.known_shift=paraphrase: use null"),
    (["+dataset=synth_nli", "sample.known_shift=rename"],
     "sample.known_shift=rename renames or rewords a code problem; a synthetic partition (synth_nli) is rewritten "
     "by its generator alone"),
])
def test_a_shift_the_dataset_cannot_take_is_one_line_before_any_work(compose_config, overrides, message):
    from contaminate.run import check_config
    from detect.errors import InputError

    with pytest.raises(InputError, match=re.escape(message)) as error:
        check_config(compose_config("contaminate", [*overrides, "model=tiny_random"]))
    assert "\n" not in str(error.value)


@pytest.mark.slow
def test_a_shifted_pool_rereads_only_the_known_non_members_of_the_same_model(compose_config, tmp_path):
    """The power profile's second invocation (sample.known_shift=rewrite on the cached model): every judged cell's
    rows come from the cell cache (no detector reads the known non-members inside a cell, so they are not in its
    key), the known cell is read anew and rewritten, and the members' scores are the first invocation's."""
    import json

    from lean import TINY_MODEL, lean

    from contaminate.run import run_config

    tiny = ["+dataset=humaneval", *TINY_MODEL, "plant=doubling", "plant.n=2", "plant/control=none",
            "sample.n_detect=2", "contaminate.max_length=640", "detect.semantic_model=null",
            "plant.groups=[{exposures:0},{exposures:1}]", "background=offline", "background.max_tokens=4000",
            f"cache_dir={tmp_path / 'cache'}", *lean(), "sample.n_heldout=4",
            *(f"detect.detectors.{name}.enabled=false" for name in ("alg1", "alg2", "alg2_leak"))]
    run_config(compose_config("contaminate", tiny), tmp_path / "plain")
    run_config(compose_config("contaminate", [*tiny, "sample.known_shift=rewrite"]), tmp_path / "shifted")

    def rows(folder: str) -> dict[str, list[dict]]:
        found: dict[str, list[dict]] = {}
        for line in (tmp_path / folder / "groups" / "x1" / "results.jsonl").read_text().splitlines():
            row = json.loads(line)
            found.setdefault(row["cell"], []).append(row)
        return found

    manifest = json.loads((tmp_path / "shifted" / "groups" / "x1" / "manifest.json").read_text())
    assert set(manifest["cached_cells"]) == {"contaminated_x_members", "contaminated_x_non_members"}
    plain, shifted = rows("plain"), rows("shifted")
    members = "contaminated_x_members"
    assert [r["loss"] for r in plain[members]] == [r["loss"] for r in shifted[members]]
    assert [r["instance_id"] for r in plain["contaminated_x_known_non_members"]] == \
        [r["instance_id"] for r in shifted["contaminated_x_known_non_members"]]
    assert [r["loss"] for r in plain["contaminated_x_known_non_members"]] != \
        [r["loss"] for r in shifted["contaminated_x_known_non_members"]]
