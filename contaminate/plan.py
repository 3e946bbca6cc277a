"""Plan a study before training it: the smallest effect a design can tell (issue 47).

    python -m contaminate.plan --members 8 --runs 6                   # the CPU profile's design: AUC >= 0.69 or so
    python -m contaminate.plan --members 24 --non-members 68 --runs 10 --contrasts 4
    python -m contaminate.plan --members 24 --runs 10 --auc 0.6       # the power at an expected AUC

A design is ``members`` instances a dose against ``non_members`` of the same model (the never-planted group, with the
known non-members where they are AUC negatives), over ``runs`` independent member draws (a run's seeds sit inside
it; a clean model counts once). Printed, at a two-sided ``alpha`` and the ``power`` asked:

- **one AUC**: the standard error of one model's within-model AUC (Hanley & McNeil 1982; at 0.5 it is the exact
  null, sqrt((m + n + 1) / (12 m n)): 0.149 at 8 v 8), and of the mean over the runs;
- **the minimum detectable AUC**: the smallest true mean AUC that a t-test of the runs' AUCs against 0.5 finds at
  ``alpha`` with ``power`` (noncentral t over runs - 1 degrees of freedom; the runs' spread is each AUC's sampling
  spread plus ``run_sd``, a between-run spread the design cannot know: 0 gives a lower bound);
- **the minimum detectable difference** between two detectors, paired over the runs, at ``alpha / contrasts``
  (Holm's first step, where the primary contrasts are ``contrasts``): the runs' differences have standard deviation
  ``difference_sd`` where given (the CPU profile's at x1: 0.065-0.107), else the one two AUCs of the expected value
  with correlation ``correlation`` across the runs' instances would have (an assumption, printed as one);
- **a sign-flip floor**: the smallest two-sided p an exact sign-flip (permutation) test over ``runs`` can give,
  2 / 2^runs, and the runs it needs to reach ``alpha / contrasts`` at all;
- **known non-members**: how many the recipe (Algorithm 2's rule, ``detect/judges/recipe.py``) needs at
  ``partition_size`` instances a partition, and how many a conformal threshold needs at each FPR (n >= 1/FPR - 1).

``tests/test_plan.py`` checks the power and the minimum detectable effects against simulated studies.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass
from typing import Sequence

from scipy.stats import nct
from scipy.stats import t as student_t

from detect.errors import InputError

FPRS = (0.05, 0.01)  # the conformal thresholds' FPRs the plan sizes the known non-members for


def auc_sd(auc: float, members: int, non_members: int) -> float:
    """The sampling standard deviation of one AUC of ``members`` against ``non_members`` (Hanley & McNeil 1982); at
    0.5 the exact null of the Mann-Whitney statistic without ties."""
    m, n = members, non_members
    if abs(auc - 0.5) < 1e-12:
        return math.sqrt((m + n + 1) / (12 * m * n))
    q1, q2 = auc / (2 - auc), 2 * auc ** 2 / (1 + auc)
    return math.sqrt(max(0.0, auc * (1 - auc) + (m - 1) * (q1 - auc ** 2) + (n - 1) * (q2 - auc ** 2)) / (m * n))


def t_power(effect: float, sd: float, runs: int, alpha: float) -> float:
    """The power of a two-sided one-sample t-test over ``runs`` values of mean ``effect`` and spread ``sd``."""
    if sd <= 0:
        return 1.0 if effect != 0 else alpha
    df, critical = runs - 1, float(student_t.ppf(1 - alpha / 2, runs - 1))
    shift = abs(effect) * math.sqrt(runs) / sd  # symmetric: the far tail's share is the same either way
    far, near = float(nct.sf(critical, df, shift)), float(nct.cdf(-critical, df, shift))
    return min(1.0, (far if math.isfinite(far) else 1.0) + (near if math.isfinite(near) else 0.0))  # scipy: nan far out


def auc_power(auc: float, members: int, non_members: int, runs: int, *, alpha: float = 0.05,
              run_sd: float = 0.0) -> float:
    """The power of the runs' t-test against chance where every run's true AUC is ``auc`` (plus ``run_sd``)."""
    sd = math.hypot(auc_sd(auc, members, non_members), run_sd)
    return t_power(auc - 0.5, sd, runs, alpha)


def _smallest(power_of, target: float, high: float) -> float | None:
    """The smallest effect in (0, high] whose power reaches ``target`` (power increasing in it), or None."""
    if power_of(high) < target:
        return None
    low = 0.0
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (low, middle) if power_of(middle) >= target else (middle, high)
    return high


def minimum_detectable_auc(members: int, non_members: int, runs: int, *, alpha: float = 0.05, power: float = 0.8,
                           run_sd: float = 0.0) -> float | None:
    """The smallest true mean AUC the runs' t-test tells from 0.5 at ``alpha`` with ``power``; None where not even
    1.0 is (the between-run spread too large for the runs)."""
    found = _smallest(lambda d: auc_power(0.5 + d, members, non_members, runs, alpha=alpha, run_sd=run_sd), power,
                      0.5 - 1e-9)
    return None if found is None else 0.5 + found


def minimum_detectable_difference(difference_sd: float, runs: int, *, alpha: float = 0.05, power: float = 0.8,
                                  contrasts: int = 1) -> float:
    """The smallest mean paired difference a t-test over ``runs`` finds at ``alpha / contrasts`` with ``power``."""
    return _smallest(lambda d: t_power(d, difference_sd, runs, alpha / contrasts), power, 10 * difference_sd + 1)


def sign_flip_floor(runs: int) -> float:
    """The smallest two-sided p of an exact sign-flip test over ``runs`` paired differences: every difference of
    one sign, 2 of the 2^runs sign patterns as extreme."""
    return min(1.0, 2.0 / 2 ** runs)


def runs_for_sign_flip(alpha: float, contrasts: int = 1) -> int:
    """The fewest runs with which an exact sign-flip test can reach ``alpha / contrasts``."""
    return max(1, math.ceil(math.log2(2 * contrasts / alpha) - 1e-12))


def conformal_needs(fpr: float) -> int:
    """The fewest clean scores for which a split-conformal threshold at ``fpr`` is finite: ceil((1 - fpr)(n + 1))
    <= n (contaminate/calibration/statistics.py ``conformal_threshold``)."""
    n = 1
    while math.ceil((1 - fpr) * (n + 1) - 1e-9) > n:
        n += 1
    return n


@dataclass(frozen=True)
class StudyDesign:
    members: int                  # instances a dose, a run
    non_members: int              # the same model's negatives a run (the never-planted group, known non-members)
    runs: int                     # independent member draws
    auc: float | None = None      # an expected AUC: its power and the difference's spread
    alpha: float = 0.05
    power: float = 0.8
    contrasts: int = 1            # primary contrasts under Holm
    run_sd: float = 0.0           # the runs' spread beyond each AUC's sampling spread
    difference_sd: float | None = None  # the runs' paired differences' spread, where known
    correlation: float = 0.5      # two detectors' AUCs across a run's instances, where difference_sd is not known
    partition_size: int = 10      # instances in one of Algorithm 2's partitions (the recipe's)
    budget: float = 0.05          # the recipe's partition FPR

    def check(self) -> StudyDesign:
        if isinstance(self.runs, bool) or not isinstance(self.runs, int) or self.runs < 2:
            raise InputError(f"--runs {self.runs}: a plan needs at least 2 independent runs (member draws), the "
                             f"interval over runs is a t with runs - 1 degrees of freedom; give --runs 2 or more")
        for name in ("members", "non_members", "contrasts", "partition_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"--{name.replace('_', '-')} {value}: give a whole number >= 1")
        if self.auc is not None and not 0.5 <= self.auc < 1:
            raise InputError(f"--auc {self.auc}: give the expected AUC of a dose, in [0.5, 1)")
        for name in ("alpha", "power", "budget"):
            if not 0 < getattr(self, name) < 1:
                raise InputError(f"--{name} {getattr(self, name)}: give a number in (0, 1)")
        if not -1 <= self.correlation < 1:
            raise InputError(f"--correlation {self.correlation}: give a number in [-1, 1)")
        for name in ("run_sd", "difference_sd"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise InputError(f"--{name.replace('_', '-')} {value}: give a standard deviation >= 0")
        return self


def plan(design: StudyDesign) -> dict:
    """Everything the plan prints, as a record (``--json``)."""
    from detect.judges.recipe import rule_needs

    d = design.check()
    m, n, runs = d.members, d.non_members, d.runs
    null_sd = auc_sd(0.5, m, n)
    at = d.auc if d.auc is not None else 0.5
    if d.difference_sd is not None:
        difference_sd, difference_from = d.difference_sd, "given"
    else:
        one = math.hypot(auc_sd(at, m, n), d.run_sd)
        difference_sd = one * math.sqrt(2 * (1 - d.correlation))
        difference_from = (f"assumed: two AUCs of {at:g} with correlation {d.correlation:g} "
                           f"({one:.3f} each a run)")
    return {
        "design": asdict(d),
        "one_auc_null_sd": null_sd,
        "mean_auc_null_se": math.hypot(null_sd, d.run_sd) / math.sqrt(runs),
        "minimum_detectable_auc": minimum_detectable_auc(m, n, runs, alpha=d.alpha, power=d.power, run_sd=d.run_sd),
        "power_at_auc": (auc_power(d.auc, m, n, runs, alpha=d.alpha, run_sd=d.run_sd) if d.auc is not None
                         else None),
        "difference_sd": difference_sd, "difference_sd_from": difference_from,
        "minimum_detectable_difference": minimum_detectable_difference(difference_sd, runs, alpha=d.alpha,
                                                                       power=d.power, contrasts=d.contrasts),
        "sign_flip_floor": sign_flip_floor(runs),
        "sign_flip_runs_needed": runs_for_sign_flip(d.alpha, d.contrasts),
        "recipe_known_needed": rule_needs(d.partition_size, (1, 2), d.budget),
        "conformal_known_needed": {f"{fpr:g}": conformal_needs(fpr) for fpr in FPRS},
    }


def plan_text(found: dict) -> str:
    """The plan as the command prints it."""
    d = found["design"]
    level = d["alpha"] / d["contrasts"]
    mda = found["minimum_detectable_auc"]
    lines = [
        f"design: {d['members']} members v {d['non_members']} non-members a model, {d['runs']} independent runs; "
        f"two-sided alpha {d['alpha']:g}, power {d['power']:g}"
        + (f", between-run SD {d['run_sd']:g}" if d["run_sd"] else " (no between-run spread: a lower bound)"),
        f"one AUC at chance: SE {found['one_auc_null_sd']:.3f}; the mean over {d['runs']} runs: SE "
        f"{found['mean_auc_null_se']:.3f}",
        "minimum detectable mean AUC: " + (f"{mda:.3f}" if mda is not None else "none (not even 1.0)")
        + " (t over runs against 0.5)",
    ]
    if found["power_at_auc"] is not None:
        lines.append(f"power at a mean AUC of {d['auc']:g}: {found['power_at_auc']:.2f}")
    lines += [
        f"minimum detectable difference between two detectors: {found['minimum_detectable_difference']:.3f} "
        f"(paired t over runs at {level:.3g} = alpha / {d['contrasts']} primary contrast"
        f"{'s' * (d['contrasts'] != 1)}; SD of the runs' differences {found['difference_sd']:.3f}, "
        f"{found['difference_sd_from']})",
        f"exact sign-flip test: smallest p {found['sign_flip_floor']:.3g} at {d['runs']} runs"
        + (f", above {level:.3g}: no contrast can pass it; it needs {found['sign_flip_runs_needed']} runs"
           if found["sign_flip_floor"] > level else f"; {level:.3g} is reachable"),
        f"known non-members: the recipe needs {found['recipe_known_needed']} (Algorithm 2's rule at "
        f"{d['partition_size']} instances a partition, partition FPR {d['budget']:g}); a conformal threshold "
        + ", ".join(f"{n} at FPR {fpr}" for fpr, n in found["conformal_known_needed"].items()),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m contaminate.plan", description=__doc__.split("\n")[0])
    parser.add_argument("--members", type=int, required=True, help="instances a dose, a run")
    parser.add_argument("--non-members", type=int, help="the same model's negatives a run (default: --members)")
    parser.add_argument("--runs", type=int, required=True, help="independent member draws")
    parser.add_argument("--auc", type=float, help="an expected mean AUC: its power")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--power", type=float, default=0.8)
    parser.add_argument("--contrasts", type=int, default=1, help="primary contrasts under Holm")
    parser.add_argument("--run-sd", type=float, default=0.0, help="the runs' AUC spread beyond sampling")
    parser.add_argument("--difference-sd", type=float, help="the runs' paired differences' SD, where known")
    parser.add_argument("--correlation", type=float, default=0.5,
                        help="two detectors' AUC correlation, where --difference-sd is not given")
    parser.add_argument("--partition-size", type=int, default=10, help="instances in one of Algorithm 2's partitions")
    parser.add_argument("--budget", type=float, default=0.05, help="the recipe's partition FPR")
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    args = parser.parse_args(argv)
    design = StudyDesign(args.members, args.non_members if args.non_members is not None else args.members, args.runs,
                    args.auc, args.alpha, args.power, args.contrasts, args.run_sd, args.difference_sd,
                    args.correlation, args.partition_size, args.budget)
    try:
        found = plan(design)
    except InputError as error:
        sys.exit(f"error: {error}")
    print(json.dumps(found, indent=1) if args.json else plan_text(found))
    return found


if __name__ == "__main__":
    main()
