"""The practitioner's recipe: Algorithm 2's exact / near-exact thresholds fitted on the suspect model's own guided
completions of known non-members, with a stated bound on the partition-level false-positive rate (method section 11).

    python -m detect +dataset=synth_nli judge=recipe judge.known_non_members=known.jsonl   # any model, local or served

    fit = fit_recipe(exact_scores, partition_size=10, rule=(1, 2), budget=0.05)          # the math alone
    fit["exact"]["threshold"], fit["near_exact"]["threshold"], fit["bound"]

**Setting.** A suspect model M; n known non-members of the benchmark (instances M cannot have seen: written after
its cut-off, a private split; in the lab, ``sample.n_heldout``); M's guided completions of them, each scored against
its second piece (``exact score``: 1 for a completion equal to the reference after normalisation, else ROUGE-L; the
near-exact score: ROUGE-L or ``semantic``). A partition of m instances (the paper: 10) is judged with Algorithm 2's
rule: contaminated with >= K_e exact or >= K_n near-exact labels (the paper: 1 and 2).

**Thresholds** are order statistics of the n known scores: t = s_(k), the k-th smallest, and an instance is labelled
when its score is strictly above t (exact above t_e; near-exact above t_n and not exact).

**The guarantee.** Assume exchangeability: M's scores on the known non-members and on the instances of a clean
partition are exchangeable (drawn from one distribution, M having seen neither). Then the n + m scores' order is a
uniformly random arrangement of n known and m new ones, and the number X of new scores above s_(k) has

    P(X = x) = C(k - 1 + m - x, m - x) C(n - k + x, x) / C(n + m, m)

(count the new ones after the k-th known one; ties only lower it under strict >). With one score for both labels
(ROUGE-L, the default) the joint law of (exact, near-exact) counts follows from the same arrangement with two cut
ranks k_n <= k_e: the arrangements with a unlabelled, b near-exact and c exact new scores number
C(k_n - 1 + a, a) C(k_e - k_n - 1 + b, b) C(n - k_e + c, c). So P(the rule flags a clean partition) is computed
exactly, and that is the stated bound. With two scores (near-exact on ``semantic``) the stated bound is the union
P(X_e >= K_e) + P(X_n >= K_n). The probability is over the draw of the known non-members and of the partition
together (marginal, as split conformal prediction's): over many suspect models and partitions, at most ``budget``
of the clean ones are flagged.

**Choosing the thresholds: one budget, spent jointly.** The exact part gets its share of the budget
(``exact_share``, default half): its threshold is the lowest order statistic whose exact count stays within it, or,
where n is too small for that, the lowest within the whole budget. The near-exact threshold is then the lowest order
statistic at which the *rule's* false-positive probability (the exact joint law above, or the union with two scores)
stays within the whole budget: the near-exact part spends all the exact part left, not a fixed half. Against
bounding each part within its own share (this lab before issue 45), every threshold is the same or lower at the same
stated bound, and the paper's rule (>= 1 exact or >= 2 near-exact of 10) at 5% needs 190 known non-members, not 390:
one exact label in 10 stays within 5% above the largest of 190 (m / (n + m) <= 0.05). Fewer, and the recipe refuses
in one line with the number (``n_needed``).

**Marginal and training-conditional.** The stated bound is marginal: over the draw of the known non-members and of
the partition together. One user's thresholds, fitted once, have a partition FPR of their own (a random variable over
that draw), which can exceed the budget: at n = 100 with >= 2 near-exact of 10 bounded at 5%, it does with
probability 0.28. ``conditional`` says how often, and the FPR this fit stays under with probability 1 - delta: the
order statistics' coverages are Dirichlet distributed under exchangeability (continuous scores; ties only lower the
FPR), so the conditional FPR's law is sampled from them (200,000 draws, a fixed seed, exact to about +-0.002).

**What "near-exact" then means.** Not a fixed ROUGE-L of 0.75: a completion scoring above the k-th smallest of the
model's own known non-members' scores, a quantile of what this model writes for instances it cannot have seen. Where
the model replays nothing, that quantile can be low (a template's shared words), and a near-exact label says "closer
than this model's known non-members usually get", no more.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Sequence

import numpy as np
from scipy import stats

from detect.datasets import load_split
from detect.errors import InputError
from detect.judges.threshold import exact_score

BUDGET, EXACT_SHARE = 0.05, 0.5
PAPER_RULE = (1, 2)
TOLERANCE = 1e-12  # a bound equal to its budget up to float rounding (4 / (156 + 4) = 0.025) is within it
ASSUMPTION = ("the suspect model's scores on the known non-members and on a clean partition's instances are "
              "exchangeable (one distribution, neither seen by the model)")


def _comb(n: int, k: int) -> int:
    """C(n, k), with C(-1, 0) = 1 (an empty segment closed by the rank it ends on) and 0 outside the triangle."""
    if k < 0:
        return 0
    if n == -1:
        return 1 if k == 0 else 0
    return math.comb(n, k) if 0 <= k <= n else 0


@lru_cache(maxsize=4096)
def exceedances(n: int, m: int, k: int) -> tuple[float, ...]:
    """P(X = x), x = 0..m: X of m new scores exchangeable with n known ones exceed the k-th smallest known one (k in
    1..n; k = n + 1 is "never": nothing exceeds it)."""
    if k > n:
        return (1.0,) + (0.0,) * m
    total = math.comb(n + m, m)
    return tuple(_comb(k - 1 + m - x, m - x) * _comb(n - k + x, x) / total for x in range(m + 1))


def tail(n: int, m: int, k: int, at_least: int | None) -> float:
    """P(X >= at_least) for the threshold at rank k (0 where the count never flags: at_least None)."""
    if at_least is None:
        return 0.0
    return float(sum(exceedances(n, m, k)[at_least:]))


def rule_fpr(n: int, m: int, k_exact: int, k_near: int, rule: tuple[int | None, int | None]) -> float:
    """P(the rule flags a clean partition of m) with both labels on one score: exact above rank k_exact, near-exact
    above rank k_near <= k_exact and not exact (ranks n + 1: never). Exact, from the arrangement counts."""
    k_near = min(k_near, k_exact)
    need_exact, need_near = (m + 1 if k is None else k for k in rule)
    total = math.comb(n + m, m)
    clean = 0
    for c in range(min(need_exact, m + 1)):
        for b in range(min(need_near, m + 1 - c)):
            a = m - b - c
            clean += _comb(k_near - 1 + a, a) * _comb(k_exact - k_near - 1 + b, b) * _comb(n - k_exact + c, c)
    return max(0.0, 1.0 - clean / total)


def _first(low: int, high: int, within) -> int:
    """The smallest integer in [low, high] where ``within`` holds, ``within`` monotone (false, then true)."""
    while low < high:
        middle = (low + high) // 2
        if within(middle):
            high = middle
        else:
            low = middle + 1
    return low


def lowest_rank(n: int, m: int, at_least: int | None, alpha: float) -> int | None:
    """The smallest rank k (the lowest threshold) with P(X >= at_least) <= alpha; n + 1 where the count is not used;
    None where even the largest known score (k = n) exceeds alpha: too few known non-members."""
    if at_least is None:
        return n + 1
    if n == 0 or tail(n, m, n, at_least) > alpha + TOLERANCE:
        return None
    return _first(1, n, lambda k: tail(n, m, k, at_least) <= alpha + TOLERANCE)  # tail decreases in k


def n_needed(m: int, at_least: int | None, alpha: float, *, limit: int = 1_000_000) -> int:
    """The fewest known non-members with which a count of ``at_least`` labels in m can be bounded at ``alpha``
    (the threshold at the largest known score); 0 where the count is not used."""
    if at_least is None:
        return 0
    high = 1
    while tail(high, m, high, at_least) > alpha + TOLERANCE:
        high *= 2
        if high > limit:
            raise InputError(f"no number of known non-members bounds {at_least} labels in {m} at {alpha:g}")
    return _first(1, high, lambda n: tail(n, m, n, at_least) <= alpha + TOLERANCE)


def shares(rule: tuple[int | None, int | None], budget: float, exact_share: float) -> tuple[float, float]:
    """The budget of the exact part and of the near-exact part (all to one where the rule does not use the other)."""
    need_exact, need_near = rule
    if need_exact is None and need_near is None:
        raise InputError("Algorithm 2's rule uses neither exact nor near-exact labels (min_exact and min_near_exact "
                         "both null): it never flags; set at least one")
    if need_exact is None:
        return 0.0, budget
    if need_near is None:
        return budget, 0.0
    return budget * exact_share, budget * (1 - exact_share)


def rule_text(rule: tuple[int | None, int | None], m: int) -> str:
    parts = [f">= {k} {kind}" for k, kind in zip(rule, ("exact", "near-exact")) if k is not None]
    return f"{' or '.join(parts)} of {m}"


def check_settings(budget: float, exact_share: float, partition_size: int) -> None:
    if not 0 < budget < 1:
        raise InputError(f"judge.budget={budget}: the partition-level false-positive budget is a rate in (0, 1), "
                         f"e.g. 0.05")
    if not 0 < exact_share < 1:
        raise InputError(f"judge.exact_share={exact_share}: the exact part's share of the budget is in (0, 1), "
                         f"e.g. 0.5")
    if isinstance(partition_size, bool) or not isinstance(partition_size, int) or partition_size < 1:
        raise InputError(f"the partition size {partition_size} is not a whole number >= 1 (sample.n_detect)")


def _order_statistic(values: Sequence[float], k: int) -> float:
    return math.inf if k > len(values) else float(sorted(values)[k - 1])


def joint_fpr(n: int, m: int, k_exact: int, k_near: int, rule: tuple[int | None, int | None],
              one_score: bool) -> float:
    """The rule's false-positive probability at ranks (k_exact, k_near): the exact joint law with one score for both
    labels, the union of the two parts with two scores."""
    if one_score:
        return rule_fpr(n, m, k_exact, min(k_near, k_exact), rule)
    return tail(n, m, k_exact, rule[0]) + tail(n, m, k_near, rule[1])


def joint_ranks(n: int, m: int, rule: tuple[int | None, int | None], budget: float, exact_share: float,
                one_score: bool) -> tuple[int, int] | None:
    """The thresholds' ranks (k_exact, k_near; n + 1: never): the exact part at its share of the budget (or, where n
    is too small for that, the whole budget), then the lowest near-exact rank the rule's FPR allows within the whole
    budget; None where n is too small for any. A part the rule does not use is never labelled (rank n + 1)."""
    if rule[0] is None and rule[1] is None:
        shares(rule, budget, exact_share)  # the one-line refusal
    if rule[0] is None:
        k_exact = n + 1
    else:
        share = budget * exact_share if rule[1] is not None else budget
        k_exact = lowest_rank(n, m, rule[0], share) or lowest_rank(n, m, rule[0], budget)
        if k_exact is None:
            return None
    if rule[1] is None:
        return k_exact, (k_exact if one_score else n + 1)
    top = k_exact if one_score else n + 1  # one score: near-exact at the exact bar labels nothing; two: never
    if joint_fpr(n, m, k_exact, top, rule, one_score) > budget + TOLERANCE:
        return None
    k_near = _first(1, top, lambda k: joint_fpr(n, m, k_exact, k, rule, one_score) <= budget + TOLERANCE)
    if rule[0] is None and k_near > n:  # a near-exact-only rule whose bar would sit above every known score: too few
        return None
    return k_exact, k_near


def _coverage(n: int, k: int, draws: int, rng: np.random.Generator) -> np.ndarray:
    """``draws`` samples of P(a new score above the k-th smallest of n known ones), Beta(n - k + 1, k) under
    exchangeability; 0 for rank n + 1 (never)."""
    return np.zeros(draws) if k > n else rng.beta(n - k + 1, k, size=draws)


def conditional_fprs(n: int, m: int, k_exact: int, k_near: int, rule: tuple[int | None, int | None], *, draws: int,
                     rng: np.random.Generator) -> np.ndarray:
    """``draws`` samples of one score's fit's partition FPR given its known non-members (see ``conditional``); their
    mean is the marginal ``rule_fpr``."""
    k_near = min(k_near, k_exact)
    if k_exact > n:  # exact never labels: the near-exact coverage alone, a Beta
        p_exact, p_near = np.zeros(draws), _coverage(n, k_near, draws, rng)
    elif k_near == k_exact:  # near-exact labels nothing
        p_exact, p_near = _coverage(n, k_exact, draws, rng), np.zeros(draws)
    else:
        gaps = rng.dirichlet([k_near, k_exact - k_near, n - k_exact + 1], size=draws)
        p_exact, p_near = gaps[:, 2], gaps[:, 1]
    need_exact, need_near = (m + 1 if k is None else k for k in rule)
    clean = np.zeros(draws)
    for c in range(min(need_exact, m + 1)):          # exact labels
        for b in range(min(need_near, m + 1 - c)):   # near-exact labels
            a = m - b - c
            clean += math.comb(m, c) * math.comb(m - c, b) * p_exact ** c * p_near ** b * (1 - p_exact - p_near) ** a
    return np.clip(1 - clean, 0.0, 1.0)


@lru_cache(maxsize=1024)  # a function of the ranks alone, not of the scores: one sample per fit's shape
def conditional(n: int, m: int, k_exact: int, k_near: int, rule: tuple[int | None, int | None], *,
                one_score: bool = True, budget: float = BUDGET, delta: float = 0.1, draws: int = 200_000,
                seed: int = 0) -> dict:
    """The training-conditional view of one fit: its partition FPR given the known non-members it was fitted on, a
    random variable over their draw. Under exchangeability (continuous scores) the coverages of the order statistics
    are Dirichlet: (F(s_(k_near)), F(s_(k_exact)) - F(s_(k_near)), 1 - F(s_(k_exact))) ~ Dir(k_near, k_exact - k_near,
    n - k_exact + 1). Sampled (``draws``, ``seed``): P(the fit's FPR > budget) and its 1 - delta quantile (with
    probability 1 - delta over the known non-members drawn, this fit's partition FPR is at most it). With two scores
    the parts' joint law is unknown: the quantile is the sum of each part's 1 - delta/2 quantile (Bonferroni), and
    P(FPR > budget) is not stated."""
    rng = np.random.default_rng(seed)

    def part(p: np.ndarray, at_least: int | None) -> np.ndarray:
        return np.zeros(draws) if at_least is None else stats.binom.sf(at_least - 1, m, p)

    if not one_score:
        q = float(sum(np.quantile(part(_coverage(n, k, draws, rng), at_least), 1 - delta / 2)
                      for k, at_least in ((k_exact, rule[0]), (k_near, rule[1]))))
        return {"delta": delta, "quantile": q, "p_over_budget": None, "draws": draws,
                "method": "Bonferroni over the two parts' Beta laws (two scores)"}
    fpr = conditional_fprs(n, m, k_exact, k_near, rule, draws=draws, rng=rng)
    return {"delta": delta, "quantile": float(np.quantile(fpr, 1 - delta)),
            "p_over_budget": float(np.mean(fpr > budget + TOLERANCE)), "draws": draws,
            "method": "Dirichlet law of the order statistics' coverages (one score)"}


def fit_recipe(exact_scores: Sequence[float], near_scores: Sequence[float] | None = None, *, partition_size: int,
               rule: tuple[int | None, int | None] = PAPER_RULE, budget: float = BUDGET,
               exact_share: float = EXACT_SHARE, score: str = "rouge_l") -> dict:
    """The recipe's thresholds from n known non-members' scores (``exact_scores``: the exact score of each guided
    completion; ``near_scores``: the near-exact score, None for ROUGE-L, i.e. the exact scores themselves), JSON-ready:
    each part's rank, threshold and bound, the stated (marginal) bound on the rule's partition FPR and the
    training-conditional view of it. Too few known non-members for the budget: a one-line InputError with the number
    needed."""
    check_settings(budget, exact_share, partition_size)
    n, m = len(exact_scores), partition_size
    if near_scores is not None and len(near_scores) != n:
        raise ValueError("one near-exact score per known non-member")
    one_score = near_scores is None
    k_exact, k_near = check_enough(n, m, rule, budget, exact_share, one_score=one_score)
    bound = joint_fpr(n, m, k_exact, k_near, rule, one_score)
    kind = "exact (one score for both labels)" if one_score else "union of the two parts"
    exact_bound = tail(n, m, k_exact, rule[0])
    near_values = exact_scores if one_score else near_scores
    return {"n": n, "partition_size": m, "rule": {"min_exact": rule[0], "min_near_exact": rule[1]},
            "budget": budget, "exact_share": exact_share, "score": score, "split": "joint",
            "exact": {"rank": k_exact, "threshold": _order_statistic(exact_scores, k_exact), "bound": exact_bound},
            "near_exact": {"rank": k_near, "threshold": _order_statistic(near_values, k_near),
                           "bound": tail(n, m, k_near, rule[1])},
            "bound": bound, "bound_kind": kind, "assumption": ASSUMPTION,
            "conditional": dict(conditional(n, m, k_exact, k_near, tuple(rule), one_score=one_score, budget=budget))}


def fit_narrowed(exact_scores: Sequence[float], *, partition_size: int,
                 rule: tuple[int | None, int | None] = PAPER_RULE, budget: float = BUDGET,
                 exact_share: float = EXACT_SHARE) -> dict:
    """``fit_recipe`` on the rule, or, where the known non-members are too few for its exact part but enough for its
    near-exact part alone, on that part (one score, ROUGE-L: a replica scores above the near-exact bar too, so it is
    labelled near-exact), the fit saying so (``narrowed``: the rule asked and the known non-members it needs). Too few
    for either: the rule's own refusal, which names both numbers."""
    settings = {"partition_size": partition_size, "budget": budget, "exact_share": exact_share}
    try:
        return fit_recipe(exact_scores, rule=rule, **settings)
    except InputError as refusal:
        if None in rule:  # already one part: nothing to narrow to
            raise
        try:
            fit = fit_recipe(exact_scores, rule=(None, rule[1]), **settings)
        except InputError:
            raise refusal from None
    return {**fit, "narrowed": {"rule": {"min_exact": rule[0], "min_near_exact": rule[1]},
                                "needs": rule_needs(partition_size, rule, budget)}}


def rule_needs(m: int, rule: tuple[int | None, int | None], budget: float) -> int:
    """The fewest known non-members with which the recipe fits the rule (``joint_ranks`` is not None): its exact part
    alone within the whole budget at the largest known score (the near-exact part can then label above the exact bar's
    rank only), or, for a near-exact-only rule, that part; with one score or two alike."""
    return n_needed(m, rule[0] if rule[0] is not None else rule[1], budget)


def too_few_message(n: int, m: int, rule: tuple[int | None, int | None], budget: float, exact_share: float) -> str:
    """Why n known non-members cannot bound the rule, and how many it needs: the exact part within the whole budget
    (the near-exact part can then label above the exact bar's rank only), or, for a near-exact-only rule, that part."""
    shares(rule, budget, exact_share)
    part = "exact" if rule[0] is not None else "near-exact"
    need = rule_needs(m, rule, budget)
    fallback = ""
    if rule[0] is not None and rule[1] is not None:
        fallback = (f", or judge near-exact labels only (detect.detectors.alg2.min_exact=null: "
                    f"{n_needed(m, rule[1], budget)} at {budget:g})")
    return (f"{n} known non-members are too few to bound Algorithm 2's rule ({rule_text(rule, m)}) at a partition "
            f"FPR of {budget:g}: its {part} part alone needs {need}; give at least {need} known non-members, raise "
            f"judge.budget{fallback}")


def check_enough(n: int, partition_size: int, rule: tuple[int | None, int | None], budget: float,
                 exact_share: float, *, one_score: bool = True) -> tuple[int, int]:
    """The thresholds' ranks (``joint_ranks``); one line (with the number needed) where n known non-members cannot
    bound the rule at the budget."""
    ranks = joint_ranks(n, partition_size, rule, budget, exact_share, one_score)
    if ranks is None:
        raise InputError(too_few_message(n, partition_size, rule, budget, exact_share))
    return ranks


def label(fit: dict, exact_score: float, near_score: float) -> str:
    """exact / near_exact / none for one completion under fitted thresholds (strictly above each)."""
    if exact_score > fit["exact"]["threshold"]:
        return "exact"
    return "near_exact" if near_score > fit["near_exact"]["threshold"] else "none"


def fit_line(fit: dict) -> str:
    """The recipe in one line, as a report or the console says it."""
    exact, near = fit["exact"], fit["near_exact"]

    def bar(part: dict, score: str) -> str:
        return "never" if math.isinf(part["threshold"]) else f"{score} > {part['threshold']:.3f}"

    rule = rule_text((fit["rule"]["min_exact"], fit["rule"]["min_near_exact"]), fit["partition_size"])
    fitted, bars = f"the recipe on {fit['n']} known non-members", f"near-exact {bar(near, fit['score'])}"
    narrowed = fit.get("narrowed")
    if narrowed:  # the rule asked needs more known non-members than the run has: its near-exact part alone
        asked = rule_text((narrowed["rule"]["min_exact"], narrowed["rule"]["min_near_exact"]), fit["partition_size"])
        fitted += f", its near-exact part alone (the rule {asked} needs {narrowed['needs']})"
    else:
        bars = f"exact {bar(exact, 'exact score')}, {bars}"
    return (f"{fitted}: {bars}; rule {rule}; partition FPR <= {fit['bound']:.4f} (budget {fit['budget']:g}, "
            f"{fit['bound_kind']}; assuming exchangeability){conditional_text(fit.get('conditional'), fit['budget'])}")


def conditional_text(found: dict | None, budget: float) -> str:
    """"; this fit's own FPR: over 0.05 with probability 0.28, at most 0.081 with probability 0.9" (or nothing)."""
    if not found:
        return ""
    over = "" if found["p_over_budget"] is None else f"over {budget:g} with probability {found['p_over_budget']:.2f}, "
    return f"; this fit's own FPR: {over}at most {found['quantile']:.3f} with probability {1 - found['delta']:g}"


class RecipeJudge:
    """``judge=recipe``: Algorithm 2's labels with thresholds fitted on the suspect model's own guided completions of
    known non-members (``known_non_members``: a JSONL/CSV/Parquet file of instances in the dataset's fields).
    ``python -m detect`` generates those completions with the model under test and calls ``fit_on`` before judging;
    until then it cannot label."""
    name = "recipe"

    def __init__(self, known_non_members: str | None = None, budget: float = BUDGET, exact_share: float = EXACT_SHARE,
                 score: str = "rouge_l", precheck: str | bool = "auto") -> None:
        from pathlib import Path

        if known_non_members is None:
            raise InputError("judge=recipe fits its thresholds on known non-members: set judge.known_non_members=<a "
                             "JSONL, CSV or Parquet file of instances the model cannot have seen, in the dataset's "
                             "fields>")
        if not Path(str(known_non_members)).is_file():
            raise InputError(f"judge.known_non_members={known_non_members}: no such file; give a JSONL, CSV or "
                             f"Parquet file of instances the model cannot have seen")
        if score not in ("rouge_l", "semantic"):
            raise InputError(f"judge.score={score}: the near-exact score is rouge_l or semantic")
        check_settings(budget, exact_share, 1)
        if precheck not in ("auto", True, False):
            raise InputError(f"judge.precheck={precheck}: use auto (where detect.reference_model gives a model that "
                             f"saw neither pool), true or false")
        self.known_non_members, self.budget, self.exact_share, self.score = str(known_non_members), budget, \
            exact_share, score
        # the A/A pre-check (detect/exchangeability.py): the known non-members against the judged split under a
        # model that saw neither; auto runs it where detect.reference_model names one, true insists on it
        self.precheck = precheck
        self.fit: dict | None = None
        # set by python -m detect from the run (detect.pipeline.recipe_known): Algorithm 2's rule, the partition's size
        self.rule, self.partition_size = PAPER_RULE, None

    def known(self, dataset, split: str) -> list:
        """The known non-members, read with the dataset's fields (its labels written as the partition's)."""
        from omegaconf import OmegaConf

        local = OmegaConf.create(OmegaConf.to_container(dataset, resolve=True))
        local.path = self.known_non_members
        return load_split(local, split)

    def fit_on(self, rows: Sequence[dict], *, partition_size: int, rule: tuple[int | None, int | None]) -> dict:
        """Fit on the model's guided rows of the known non-members (reference, completion, rouge_l, semantic)."""
        if self.score == "semantic" and any(row.get("semantic") is None for row in rows):
            raise InputError("judge.score=semantic needs the semantic score; set detect.semantic_model (the default "
                             "packaged-minilm) or use judge.score=rouge_l")
        exact = [exact_score(row["reference"], row["completion"], row["rouge_l"]) for row in rows]
        near = None if self.score == "rouge_l" else [row["semantic"] for row in rows]
        self.fit = fit_recipe(exact, near, partition_size=partition_size, rule=rule, budget=self.budget,
                              exact_share=self.exact_share, score=self.score)
        return self.fit

    def describe(self) -> dict:
        return {"name": self.name, "known_non_members": self.known_non_members, "budget": self.budget,
                "exact_share": self.exact_share, "score": self.score, "precheck": self.precheck, "fit": self.fit,
                "line": None if self.fit is None else fit_line(self.fit)}

    def label_row(self, row) -> str:
        if self.fit is None:
            raise RuntimeError("the recipe judge labels after fit_on (python -m detect fits it on the model's own "
                               "completions of the known non-members)")
        return label(self.fit, exact_score(row["reference"], row["completion"], row["rouge_l"]), row[self.score])

    def __call__(self, rows: Sequence[dict]) -> list[str]:
        return [self.label_row(row) for row in rows]
