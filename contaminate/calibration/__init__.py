"""Calibration from ground truth, as a library: how good each detector is, and the judge's thresholds chosen from data.

    python -m contaminate.calibrate runs/units_cpu                             # a multirun folder, or study folders
    python -m contaminate.calibrate runs/units_cpu --out results/units_cpu --keep-studies

Reads every finished study under the folders (``results.jsonl`` + ``manifest.json``, or their .gz) and writes to
``--out`` (default ``<first folder>/calibration``): ``calibration.json``, ``card.json`` (the threshold card, where one
is written: ``judge.calibration=<card.json>`` loads it into any detection), ``calibration.md``,
``dose_response.csv``/``.md`` and PNG plots.

How every number is measured (method sections 9 and 11; ``statistics.py`` holds the methods):

- A model is one (member draw, training seed) pair (``sample.draw``, ``seed``); the independent unit is the member
  draw (a draw's models are averaged first; a clean model counts once). Intervals are t-intervals over draws
  (``unit_interval``, coverage checked by simulation; none below 3 draws) or, for k of n models flagged,
  Clopper-Pearson; every table says how many draws and models it rests on. One model is refused: no interval.
- The recipe (``recipe.py``): Algorithm 2's thresholds fitted on each model's own known non-members with a stated
  bound on the partition FPR (``detect/judges/recipe.py``), scored on that model's own non-members (realised FPR) and
  members by dose (TPR); every logit score's conformal threshold on the same known non-members.
- The threshold card (``card.py``): for users with no known non-members, the recipe's thresholds of each
  contaminated model averaged over draws, measured leave-one-draw-out and transferred to other regimes and datasets.
  Not written (one line says why) from one draw, too few known non-members, or a rule with TPR 0.
- Membership within each model (``membership.py``, by regime and dose): each contaminated model's members against
  its own non-members: AUC, TPR at 1% and 0.1% FPR; differences between scores only by paired tests over draws with
  Holm's correction.
- Held-out thresholds fitted on other models (variants): split-conformal thresholds fitted leave-one-draw-out on
  other models' clean cells and the other split (``other_models``) or with their non-members too (``oracle``).
  Platt-calibrated scores, scored the same way.
- Per-model rates: every partition-level rate is computed on one model's cells (a pool is one model's cell) and
  summarised across models.
- Transfer (``regimes.py``): a threshold or calibrated score fitted in one regime and used in another, as an
  equivalence test with its power ("not enough data" where it has none).
- Cross-model numbers (members against every clean instance, the base model's included) are labelled as such; the
  thresholds fitted there in-sample on every negative pooled (``cross_model_thresholds``) are kept to compare, never
  loaded. The "default thresholds" are the lab's threshold judge (ROUGE-L 0.95 / 0.75), not the paper's GPT-4 judge.
"""
