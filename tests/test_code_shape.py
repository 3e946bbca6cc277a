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
