"""Calibration from ground truth, as a library: how good each detector is, and the judge's thresholds chosen from data.

    python -m contaminate.calibrate runs/dose_response/<time>                 # a multirun folder, or study folders
    python -m contaminate.calibrate runs/contaminate/a runs/contaminate/b --exact-fpr 0.005 --near-exact-fpr 0.03

Reads every finished study under the folders (``results.jsonl`` + ``manifest.json``) and writes to ``--out``
(default ``<first folder>/calibration``): ``calibration.json`` (the thresholds; ``judge.calibration=<path>``
loads them into any detection), ``calibration.md``, ``dose_response.csv``/``.md`` and PNG plots.

Ground truth: an instance is positive when it was trained into the model it is detected on (the
contaminated x members cell); every other instance (the clean base model's, the contaminated model's
non-members and other split) is negative.

- Instance level, every score of the guided completion (``rouge_l``, ``semantic``) and its gain over the
  general completion (``rouge_l_gain``: an instance-level Algorithm 1): ROC, AUC with a 95% bootstrap interval,
  TPR at 1% and 5% FPR.
- Thresholds: ``exact_threshold`` is the lowest ROUGE-L whose exact labels stay within ``--exact-fpr`` of the
  negatives; ``near_exact_threshold`` (per score) the lowest whose exact-or-near-exact labels stay within
  ``--near-exact-fpr``. With several seeds, the partition-level numbers for "calibrated" use thresholds fitted
  on the other seeds (cross-fitting), so they are not scored on the data that chose them.
- Every detector ranked by AUC (``ranking``): instance scores (also the logit scores, and each also on the
  contaminated model alone), and partition statistics over study cells (Algorithm 1: 1 - p; Algorithm 2: the
  replica count; ChatGPT-Cheat?: the best replica ROUGE-L; the sharded likelihood test: 1 - p).
- Partition level: a pool is one cell of one condition (every setting but the seed), pooled over seeds. The
  rate at which a rule flags a random 10-instance sample of a pool is exact for Algorithm 2 (a multivariate
  hypergeometric sum over the pool's exact / near-exact / none counts) and Monte Carlo for Algorithm 1 (the
  paired bootstrap test on sampled instances). TPR is the mean rate over positive pools, FPR over negative
  pools, with 95% intervals from resampling pools; the binomial FPR is what the rule implies if instances
  were independent draws at the negatives' instance-level rates. ChatGPT-Cheat? (strict, lenient) and the sharded
  test are rated as the studies ran them, on whole pools: a pool's rate is the share of its studies flagged.
- By regime (``regimes.py``; calibration.json ``by_regime``): studies grouped by format / background / backend;
  per detector the AUC with its interval, TPR at 1% / 5% FPR, the lowest exposure detected at a partition FPR
  within budget, the blind baseline; Algorithm 2 calibrated per regime and the rule that holds in every regime;
  each threshold fitted in one regime and applied in every other (transfer); what a half-finished sweep lacks.
"""
