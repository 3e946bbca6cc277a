"""The docs hold what the code prints: no pasted traceback, the README's headline tables as the script generates
them from the committed calibration, and the committed calibration as its committed studies recompute it."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEADLINE = ROOT / "results" / "units_cpu"


def _docs() -> list[Path]:
    return [ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("results/*/README.md"),
            *ROOT.glob("results/*/*.md")]


def test_no_traceback_stands_in_the_docs():
    pasted = [str(path.relative_to(ROOT)) for path in _docs() if "Traceback (most recent call last)" in
              path.read_text()]
    assert not pasted, f"a traceback where a table or a number should be: {pasted}"


def _headline_tables():
    spec = importlib.util.spec_from_file_location("headline_tables", ROOT / "bench" / "headline_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_headline_tables_are_the_scripts_output():
    headline = _headline_tables()
    folder = HEADLINE.relative_to(ROOT)
    in_readme = headline.between_markers((ROOT / "README.md").read_text(), folder)
    assert in_readme == headline.tables(ROOT / folder).strip("\n"), \
        "README's headline tables differ from: python bench/headline_tables.py results/units_cpu --write README.md"


@pytest.mark.slow
def test_the_committed_calibration_recomputes_from_its_committed_studies(tmp_path):
    from contaminate.calibrate import main

    main([str(HEADLINE / "studies"), "--transfer", "--out", str(tmp_path)])

    def without_timestamp(path: Path) -> list[str]:
        # the one folder-dependent line: the command that loads this calibration.json
        return [line for line in path.read_text().splitlines()
                if "Generated" not in line and "judge.calibration=" not in line]

    assert without_timestamp(tmp_path / "calibration.md") == without_timestamp(HEADLINE / "calibration.md")
    again, committed = (json.loads((folder / "calibration.json").read_text()) for folder in (tmp_path, HEADLINE))
    assert again["by_regime"] == committed["by_regime"] and again["thresholds"] == committed["thresholds"]
