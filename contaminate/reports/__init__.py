"""The generators of the committed results' tables: each reads what runs, calibrations or bench scripts wrote (never
a checkpoint) and prints the markdown a results/<name>/ folder or a doc includes; tests/test_docs.py checks every
committed table is what its generator prints now. Run each as ``python -m contaminate.reports.<name>`` (its
docstring has the commands that made the committed files)."""
