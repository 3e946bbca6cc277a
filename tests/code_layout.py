"""The code's layout, counted from its source (issue 70's before and after): lines by module, import floors, and
how far the root config reaches, at a commit (read from git's objects, not the working tree) or in the working tree.
docs/study.md includes what it wrote under results/code_layout/, and tests/test_code_shape.py recomputes each of
those files from its commit, so no count there is written by hand:

    python tests/code_layout.py                       # the working tree
    python tests/code_layout.py --at 3492caa          # a commit: writes results/code_layout/3492caa.md

Definitions, so that every count can be recomputed:
- **Lines**: every line of every ``*.py`` file tracked under detect/ and contaminate/ (tests and bench left out).
- **Floor** of a module of contaminate/ (or detect/): 1 where it imports no other module of its package at module
  level, else one above the highest module it imports at module level. An import inside a function (lazy) *runs up
  a floor* where it reaches a module on its importer's floor or above: a dependency the module-level graph hides,
  the usual sign of a stage calling back into the recipe that holds it.
- **Config reach** (contaminate/ only): functions and methods with a parameter named ``cfg`` (the lab's name for a
  composed config: the root config, or a group's whole copy of it), functions and methods whose body reads
  ``self.cfg`` or ``run.cfg``, and calls that read a config group's YAML from disk (``group_option``,
  ``OmegaConf.load``), which Hydra and the command line never reach.
"""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

from detect.markdown import table

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("contaminate", "detect")
# The recipe core issue 70 measures (2,108 lines at 552c529; at most 1,500 after it); group_configs was split from
# planted.py at 351c75a: counted, so that a move out of the core is not a saving; study.py is stages.py after 58660c8
CORE = ("run", "study", "stages", "planted", "sampling", "controls", "checkpoints", "study_models", "group_configs")


class Tree:
    """The tracked ``.py`` files of detect/ and contaminate/ at ``commit`` (git's objects), or in the working tree."""

    def __init__(self, commit: str | None = None):
        self.commit = commit
        command = ["git", "ls-tree", "-r", "--name-only", commit] if commit else ["git", "ls-files"]
        self.python = sorted(path for path in git(*command[1:]).split() if path.endswith(".py"))
        self.paths = [path for path in self.python if path.split("/")[0] in PACKAGES]

    def read(self, path: str) -> str:
        return git("show", f"{self.commit}:{path}") if self.commit else (ROOT / path).read_text()

    def sources(self, package: str) -> dict[str, str]:
        """Module name -> its text, for every file of ``package``."""
        found = {}
        for path in self.paths:
            if path.startswith(f"{package}/"):
                parts = list(Path(path).with_suffix("").parts)
                found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = self.read(path)
        return found


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def imports(modules: dict[str, str]) -> tuple[dict[str, set[str]], list[tuple[str, str, int]]]:
    """Each module's module-level imports of the package's modules, and its lazy ones as (importer, target, line)."""
    top, lazy = {name: set() for name in modules}, []
    for name, text in modules.items():
        tree = ast.parse(text)
        module_level = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    target = next((m for m in (f"{node.module}.{alias.name}", node.module) if m in modules), None)
                    targets.append(target)
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names if alias.name in modules]
            for target in targets:
                if not target or target == name:
                    continue
                if id(node) in module_level or _guarded(tree, node):
                    top[name].add(target)
                else:
                    lazy.append((name, target, node.lineno))
    return top, lazy


def _guarded(tree: ast.Module, node: ast.AST) -> bool:
    """An import under a module-level ``if`` / ``try`` (TYPE_CHECKING, an optional dependency) is module level."""
    for statement in tree.body:
        if isinstance(statement, (ast.If, ast.Try)) and any(child is node for child in ast.walk(statement)):
            return True
    return False


def floors(graph: dict[str, set[str]]) -> dict[str, int]:
    """Each module's floor over the module-level graph (acyclic: tests/test_code_shape.py)."""
    found: dict[str, int] = {}

    def floor(module: str) -> int:
        if module not in found:
            found[module] = 1 + max((floor(target) for target in graph[module]), default=0)
        return found[module]

    for module in graph:
        floor(module)
    return found


def every_import(modules: dict[str, str]) -> dict[str, set[str]]:
    """Each module's imports of the package's modules, lazy ones included (a lazy import is still a dependency: the
    graph tests/test_code_shape.py checks has no circle)."""
    graph, lazy = imports(modules)
    for importer, target, _ in lazy:
        graph[importer].add(target)
    return graph


def up_a_floor(graph: dict[str, set[str]], lazy: list[tuple[str, str, int]]) -> list[str]:
    """Every lazy import (``imports``' second part) that reaches its importer's floor or above, as
    ``importer:line -> target (floors)``; an entry point's (``__main__``) lazy imports are left out: they defer
    loading, they hide no layering."""
    level = floors(graph)
    return [f"{importer}:{line} -> {target} (floor {level[importer]} -> {level[target]})"
            for importer, target, line in sorted(set(lazy))
            if level[target] >= level[importer] and not importer.endswith("__main__")]


def config_reach(modules: dict[str, str]) -> dict[str, list[str]]:
    """Where the code takes or reads a composed config, and where it reads a group's YAML from disk."""
    takes, reads, yaml = [], [], []
    for name, text in modules.items():
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                where = f"{name}.{node.name}"
                arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                if any(argument.arg == "cfg" for argument in arguments):
                    takes.append(where)
                if any(isinstance(inner, ast.Attribute) and inner.attr == "cfg" and isinstance(inner.value, ast.Name)
                       and inner.value.id in ("self", "run") for inner in ast.walk(node)):
                    reads.append(where)
            elif isinstance(node, ast.Call):
                called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if called == "group_option" or (called == "load" and ast.unparse(node.func) == "OmegaConf.load"):
                    yaml.append(f"{name}:{node.lineno}")
    return {"takes": sorted(takes), "reads": sorted(set(reads)), "yaml": sorted(yaml)}


def lines(text: str) -> int:
    return len(text.splitlines())


def kinds(text: str) -> dict[str, int]:
    """A module's lines by kind: docstrings (the module's, each class's and function's), comments, blank, and code
    (the rest)."""
    documented = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) \
                and ast.get_docstring(node) is not None:
            documented.update(range(node.body[0].lineno, node.body[0].end_lineno + 1))
    found = dict.fromkeys(("code", "docstrings", "comments", "blank"), 0)
    for number, line in enumerate(text.splitlines(), start=1):
        kind = ("docstrings" if number in documented else "comments" if line.strip().startswith("#")
                else "blank" if not line.strip() else "code")
        found[kind] += 1
    return found


def report(tree: Tree) -> str:
    """The layout as markdown."""
    where = f"at {tree.commit}" if tree.commit else "in the working tree"
    out = [f"The code's layout {where} (`python tests/code_layout.py{' --at ' + tree.commit if tree.commit else ''}`):",
           ""]
    climbing, rows = {}, []
    for package in PACKAGES:
        modules = tree.sources(package)
        graph, lazy = imports(modules)
        climbing[package] = up_a_floor(graph, lazy)
        rows.append([f"{package}/", len(modules), f"{sum(map(lines, modules.values())):,}",
                     max(floors(graph).values()), len(set(lazy)), len(climbing[package])])
    out += table(["package", "modules", "lines", "floors", "lazy imports", "lazy imports running up a floor"], rows)
    outside_tests = sum(lines(tree.read(path)) for path in tree.python if not path.startswith("tests/"))
    out += ["", f"Python outside tests/ (bench/ included: "
                f"`git ls-files '*.py' | grep -v '^tests/' | xargs wc -l`): {outside_tests:,} lines."]
    core = tree.sources("contaminate")
    core_lines = {name: lines(core[f"contaminate.{name}"]) for name in CORE if f"contaminate.{name}" in core}
    reports = [text for name, text in core.items() if name.startswith("contaminate.reports")]
    analyses = [text for name, text in core.items() if name.startswith("contaminate.analyses")]
    split = {kind: sum(kinds(core[f"contaminate.{name}"])[kind] for name in core_lines)
             for kind in ("code", "docstrings", "comments", "blank")}
    out += ["", f"The recipe core ({', '.join(f'{name}.py' for name in core_lines)}): "
                f"{sum(core_lines.values()):,} lines ({', '.join(f'{n} {v}' for n, v in core_lines.items())}; "
                f"{', '.join(f'{v:,} {kind}' for kind, v in split.items())}); "
                f"contaminate/reports/: {sum(map(lines, reports)):,} lines in {len(reports)} files"
                + (f"; contaminate/analyses/: {sum(map(lines, analyses)):,} lines in {len(analyses)} files"
                   if analyses else "") + "."]  # the analyses left reports/ after fa1af3b
    for package in PACKAGES:
        if climbing[package]:
            out += ["", f"Lazy imports of {package}/ running up a floor: " + "; ".join(climbing[package]) + "."]
    reach = config_reach(core)
    out += ["", f"Config reach in contaminate/: {len(reach['takes'])} functions and methods take a `cfg`; "
                f"{len(reach['reads'])} read `self.cfg` or `run.cfg` ({', '.join(reach['reads'])}); "
                f"{len(reach['yaml'])} calls read a group's YAML from disk ({', '.join(reach['yaml'])})."]
    return "\n".join(out)


def written(commit: str) -> Path:
    return ROOT / "results" / "code_layout" / f"{commit}.md"


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--at", metavar="COMMIT", help="count a commit, and write results/code_layout/COMMIT.md")
    args = parser.parse_args()
    text = report(Tree(args.at))
    if args.at:
        written(args.at).parent.mkdir(exist_ok=True)
        written(args.at).write_text(text + "\n")
    print(text)
