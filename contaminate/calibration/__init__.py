"""Calibration from ground truth, as a library: how good each detector is, and the judge's thresholds chosen from data.

    python -m contaminate.calibrate runs/units_cpu                             # a multirun folder, or study folders
    python -m contaminate.calibrate runs/units_cpu --out results/units_cpu --keep-studies

Reads every finished study under the folders (``results.jsonl`` + ``manifest.json``, or their .gz) and writes to
``--out`` (default ``<first folder>/calibration``): ``calibration.json`` (the thresholds; ``judge.calibration=<path>``
loads them into any detection), ``calibration.md``, ``dose_response.csv``/``.md`` and PNG plots.

How every number is measured (SPEC section 9; ``statistics.py`` holds the methods):

- The independent unit is a model: one (member draw, training seed) pair (``sample.draw``, ``seed``). Intervals
  come from a hierarchical bootstrap (draws, then seeds within a draw, then instances) or, for k of n models
  flagged, Clopper-Pearson; every table says how many models it rests on. One model is refused: no interval.
- Membership within each model (``membership.py``, by regime and dose): each contaminated model's members against
  its own non-members: AUC, TPR at 1% and 0.1% FPR. This is the headline.
- Held-out thresholds for every detector: split-conformal thresholds fitted leave-one-draw-out (one draw:
  leave-one-seed-out), scored on the held-out models; practitioner (clean models and the other split only) and
  oracle (the contaminated models' non-members too). Platt-calibrated scores, scored the same way.
- Per-model rates: every partition-level rate is computed on one model's cells (a pool is one model's cell) and
  summarised across models.
- Transfer (``regimes.py``): a threshold or calibrated score fitted in one regime and used in another, as an
  equivalence test with its power ("not enough data" where it has none).
- Cross-model numbers (members against every clean instance, the base model's included) are kept for the judge's
  thresholds and labelled as such: ``exact_threshold`` is the lowest ROUGE-L whose exact labels stay within
  ``--exact-fpr`` of the negatives, ``near_exact_threshold`` (per score) the lowest whose exact-or-near-exact labels
  stay within ``--near-exact-fpr``; Algorithm 2's rates with them are cross-fitted over draws (or seeds). The
  "default thresholds" are the lab's threshold judge (ROUGE-L 0.95 / 0.75), not the paper's GPT-4 judge.
"""
