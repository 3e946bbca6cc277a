"""The calibration's targets and grids: what a clean partition may cost, and the rules searched."""

from __future__ import annotations

from detect.judges.threshold import ThresholdJudge

SAMPLE_SIZE = 10                      # the paper's partition sample
# Default instance-level targets: at 0.2% exact and 2% exact-or-near-exact among clean instances, the paper's
# rule (>= 1 exact or >= 2 near-exact of 10) flags a clean partition with probability 0.033 under the binomial
# model (alg2_binomial_rate), inside a 5% partition budget; 1% / 5% would give 0.149.
EXACT_FPR, NEAR_EXACT_FPR, PARTITION_FPR = 0.002, 0.02, 0.05
FPR_POINTS = (0.01, 0.05)             # TPR reported at these instance-level FPRs
RULE_GRID = [(k_exact, k_near) for k_exact in (1, 2, 3, None) for k_near in (1, 2, 3, 4, 5, None)
             if (k_exact, k_near) != (None, None)]    # None: that count never flags
PAPER_RULE = (1, 2)
# The lab's threshold judge at its defaults (exact >= 0.95, near-exact >= 0.75 ROUGE-L): "default thresholds". Not
# the paper's judge: Time Travel labelled replicas with a GPT-4 few-shot judge (judge=llm), not score thresholds.
DEFAULT_JUDGE = ThresholdJudge()
TRANSFER_TOLERANCE = 0.05             # a transferred threshold holds if its FPR is within budget + this (equivalence)
