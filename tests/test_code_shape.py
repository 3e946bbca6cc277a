"""The project's own bar on its code, checked: no function in detect/ or contaminate/ over 80 lines (a module reads
in one sitting; a longer function is stages that want names)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 80


def test_no_function_is_over_80_lines():
    long = []
    for package in ("detect", "contaminate"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = node.end_lineno - node.lineno + 1
                    if lines > LIMIT:
                        long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, "split into stages: " + "; ".join(long)


def _private(modules: dict[str, str]) -> list[str]:
    """Every private name one module of the package imports from another."""
    found = []
    for name, text in modules.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and node.module in modules:
                found += [f"{name} imports {node.module}.{alias.name}" for alias in node.names
                          if alias.name.startswith("_") and not alias.name.startswith("__")]
    return found


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import path that comes back to where it started (depth-first, each circle reported once)."""
    circles, done = [], set()

    def visit(module: str, path: list[str]) -> None:
        for target in sorted(graph[module]):
            if target in path:
                circle = path[path.index(target):]
                if frozenset(circle) not in done:
                    done.add(frozenset(circle))
                    circles.append([*circle, target])
            elif len(path) < 12:
                visit(target, [*path, target])

    for start in sorted(graph):
        visit(start, [start])
    return circles


def test_no_import_circle_and_no_private_name_crosses_a_module():
    """contaminate/ and detect/ import in one direction (contaminate/run.py -> planted -> study -> checkpoints, ...):
    a circle, lazy imports included, and a module reaching into another's private names fail here."""
    from code_layout import Tree, every_import

    tree = Tree()
    for package in ("contaminate", "detect"):
        modules = tree.sources(package)
        circles, private = _circles(every_import(modules)), _private(modules)
        assert not circles, f"import circles in {package}/: " + "; ".join(" -> ".join(c) for c in circles)
        assert not private, "private names imported across modules: " + "; ".join(private)


def test_no_lazy_import_runs_up_a_floor():
    """A module-level import puts its importer above what it imports (tests/code_layout.py's floors); a lazy import
    that reaches its importer's floor or above hides that the importer sits higher than it reads (issue 70): import
    it at the top. Entry points (``__main__``) may defer loading."""
    from code_layout import Tree, imports, up_a_floor

    tree = Tree()
    for package in ("contaminate", "detect"):
        climbing = up_a_floor(*imports(tree.sources(package)))
        assert not climbing, f"lazy imports of {package}/ running up a floor, import them at the top: " + "; ".join(
            climbing)


def test_the_recipe_reads_a_config_group_from_disk_in_two_named_places_only():
    """Hydra composes every config group the recipe reads (issue 70 item 1: the control, each planted group's dataset
    and format, post-training's format), so the command line reaches them; two reads from disk remain, named: the
    lab's trainer block under a hand-built trainer config (training.local.lab_trainer_defaults) and an error message's
    list of formats (regime.layouts.formats_for). contaminate/reports/ and contaminate/analyses/ read run folders' and
    experiments' files, not a run's config. A new read fails here."""
    from code_layout import Tree, config_reach

    recipe = {name: text for name, text in Tree().sources("contaminate").items()
              if not name.startswith(("contaminate.reports.", "contaminate.analyses."))}
    found = {place.split(":")[0] for place in config_reach(recipe)["yaml"]}
    assert found == {"contaminate.training.local", "contaminate.regime.layouts"}, found


# The setup: the functions of the recipe that take a composed config (its root, or a group's whole copy), each run
# once before any work to build and check a component (``Run.__init__`` and what it calls) or an entry point
# (``run_config``, ``check_config``, ``main``); ``sample_pools`` is the tests' short way to a study's draw.
SETUP = {
    "contaminate.__main__.main", "contaminate.run.run_config", "contaminate.run.check_config",
    "contaminate.run.build_design", "contaminate.run.with_dose", "contaminate.study.with_dose",
    "contaminate.planted.with_dose",
    "contaminate.run.__init__", "contaminate.study.__init__", "contaminate.planted.__init__",
    "contaminate.stages.check_study", "contaminate.stages._judge", "contaminate.stages.of",
    "contaminate.planted.check_planted", "contaminate.regime.check_regime",
    "contaminate.group_configs.planted_groups", "contaminate.group_configs.group_config",
    "contaminate.group_configs.group_formats", "contaminate.group_configs.check_composed",
    "contaminate.group_configs.composed_options", "contaminate.sampling.study_groups",
    "contaminate.sampling.asked_split", "contaminate.sampling.sample_pools",
}


def test_no_stage_below_the_setup_reads_the_config():
    """Issue 70 items 1 and 3: the stages (contaminate/run.py's ``Run`` methods, the designs' lay_out, view and finish,
    the data-side check) read the records they are handed and what the setup kept, never the config: no method reads
    ``self.cfg`` or ``run.cfg`` outside a training backend (contaminate/training/, whose ``cfg`` is its own
    ``contaminate`` block, the component's settings), and the functions that take a config are the setup's, named in
    ``SETUP``. A new reader fails here."""
    from code_layout import Tree, config_reach

    recipe = {name: text for name, text in Tree().sources("contaminate").items()
              if not name.startswith(("contaminate.training", "contaminate.reports.", "contaminate.analyses."))}
    reach = config_reach(recipe)
    assert reach["reads"] == [], reach["reads"]
    assert set(reach["takes"]) <= SETUP, sorted(set(reach["takes"]) - SETUP)


def test_the_circle_check_finds_a_circle():
    """The check is not vacuous: a lazy import back from a module it depends on is a circle."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c", "a"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_the_layout_counts_in_the_docs_are_the_scripts_own():
    """Each results/code_layout/<commit>.md (docs/study.md includes them) is what tests/code_layout.py counts at that
    commit, read from git's objects: no count of the layout is typed by hand."""
    from code_layout import Tree, report

    written = sorted((ROOT / "results" / "code_layout").glob("*.md"))
    assert written
    for path in written:
        rerun = f"rerun: python tests/code_layout.py --at {path.stem}"
        assert path.read_text() == report(Tree(path.stem)) + "\n", rerun


def test_a_lazy_import_up_a_floor_is_found():
    """The layout's definitions on hand-made modules: ``low`` imports nothing at module level (floor 1) and ``high``
    (floor 2, over ``low``) lazily; an entry point's lazy import is left out."""
    from code_layout import config_reach, every_import, floors, imports, up_a_floor

    modules = {"p.low": "def f():\n    from p.high import g\n", "p.high": "import p.low\n",
               "p.__main__": "def main():\n    from p.high import g\n",
               "p.stage": "def run(cfg, x):\n    return self.cfg, group_option('format', 'plain')\n"}
    graph, lazy = imports(modules)
    assert floors(graph) == {"p.low": 1, "p.high": 2, "p.__main__": 1, "p.stage": 1}
    assert sorted(lazy) == [("p.__main__", "p.high", 2), ("p.low", "p.high", 2)]
    assert up_a_floor(graph, lazy) == ["p.low:2 -> p.high (floor 1 -> 2)"]
    assert every_import(modules) == {"p.low": {"p.high"}, "p.high": {"p.low"}, "p.__main__": {"p.high"},
                                     "p.stage": set()}  # a circle through a lazy import: test_no_import_circle
    assert config_reach(modules) == {"takes": ["p.stage.run"], "reads": ["p.stage.run"], "yaml": ["p.stage:2"]}
