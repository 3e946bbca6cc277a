"""What the lab computes from finished runs, apart from what it renders: each module reads run folders, calibrations
or bench scripts' output (``detector_fixes`` alone loads checkpoints and scores them again), computes what its
results/<name>/ folder reports (the power profile's contrasts, the pilot's chosen setting, where replicas appear,
Algorithm 2 read on the best prefix, the order tests' power by simulation, decontamination's recall, two readings
paired within each model, the recipe's needs, a template spread, whether the models answered the instruction) and
prints its tables through ``detect.markdown``; its statistics come from ``contaminate/calibration/statistics.py``. Run
one as ``python -m contaminate.analyses.<name>`` (its docstring has the commands that made the committed files);
tests/test_docs.py checks every committed table is what its module prints now. What only renders lives in
``contaminate/reports/``."""
