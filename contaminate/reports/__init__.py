"""Everything the lab renders, apart from what it computes (``contaminate/analyses/``): a study's ``report.md`` and
the lines its command prints (``run``), a planted run's ``plant.md`` (``planted``), a calibration's
``calibration.md`` and figures (``calibration``, with its regime sections in ``calibration_regimes`` and the recipe
and card in ``calibration_product``), and the generators of committed tables that only render what runs,
calibrations or bench scripts wrote (``headline``, ``dose0``, ``gpu``, ``regimes``, ``study``, ``config_groups``;
``includes`` copies them into the docs); tests/test_docs.py checks every committed table is what its generator prints
now. Run a generator as ``python -m contaminate.reports.<name>``. Every table goes through ``detect.markdown``."""
