"""Everything the lab renders, apart from what it computes: a study's ``report.md`` and the lines its command prints
(``run``), a planted run's ``plant.md`` (``planted``), a calibration's ``calibration.md`` and figures
(``calibration``, with its regime sections in ``calibration_regimes`` and the recipe and card in
``calibration_product``), and the generators of the committed results' tables: each of those reads what runs,
calibrations or bench scripts wrote (never a checkpoint) and prints the markdown a results/<name>/ folder or a doc
includes; tests/test_docs.py checks every committed table is what its generator prints now. Run a generator as
``python -m contaminate.reports.<name>`` (its docstring has the commands that made the committed files). Every table
goes through ``detect.markdown``."""
