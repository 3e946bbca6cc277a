"""Algorithm 2's judge as published: a few-shot prompt asks an LLM whether each guided completion is an exact or
near-exact replica of the reference (paper section 3.1.2; method section 5).

    python -m detect +dataset=rte judge=llm judge.generator.model=gpt-4o                 # OPENAI_API_KEY set
    python -m detect +dataset=synth_nli judge=llm_with_no ...                            # a "No" demonstration too
    python -m detect +dataset=synth_nli judge=llm judge.generator.base_url=http://127.0.0.1:8000/v1 \
        judge.generator.model=<served id> judge.generator.api_key_env=null               # any compatible server
    python -m detect +dataset=synth_nli judge=llm generation@judge.generator=local judge.generator.model=<folder>

The instruction is the paper's, verbatim; the demonstrations live in the judge's config (the paper's four were
drawn from the partitions it evaluated, so the lab writes its own). Answers are read as ``Yes (exact match)`` ->
``exact``, ``Yes (near-exact match)`` -> ``near_exact``, ``No`` -> ``none``; a bare ``Yes`` claims a replica
without saying which kind and is read as the weaker claim, ``near_exact``. Anything else is asked again (up to
``retries`` times, with a reminder of the allowed answers) and then recorded as ``unparseable``, which counts
neither as a replica nor as a "No". Each row gets the raw answer in ``judge_answer``.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from detect.errors import InputError
from detect.models import GenerationSettings, build_backend
from detect.runtime import from_config as placement_from

INSTRUCTION = """INSTRUCTION:
You are provided with a reference text and a candidate text.
The candidate text is a generated replica of the reference text.
Your task is to determine if the candidate text is an exact or near-exact match of the reference text.
Near-exact match candidates must PRECISELY match the reference candidates in terms of sentence structure, overlap, and contextual similarity.
Respond only with 'Yes' or 'No'."""  # noqa: E501 (verbatim)
ANSWERS = {"exact": "Yes (exact match)", "near_exact": "Yes (near-exact match)", "none": "No"}
REMINDER = "Answer with exactly one of: 'Yes (exact match)', 'Yes (near-exact match)', 'No'."


def build_judge_prompt(reference: str, candidate: str, demonstrations: Sequence[Mapping[str, str]]) -> str:
    """The instruction, the ``---``-separated demonstrations, and the query last with an empty ANSWER."""
    examples = [*demonstrations, {"reference": reference, "candidate": candidate, "answer": ""}]
    blocks = [f"Example {k}:\n\nREFERENCE TEXT:\n{e['reference']}\n\nCANDIDATE TEXT:\n{e['candidate']}\n\n"
              f"ANSWER: {e['answer']}".rstrip(" ") for k, e in enumerate(examples, start=1)]
    return INSTRUCTION + "\n\n---\n\n" + "\n\n---\n\n".join(blocks)


def parse_answer(text: str) -> str | None:
    """``exact`` / ``near_exact`` / ``none`` from the judge's answer; None if it is neither Yes nor No."""
    first = text.strip().splitlines()[0].strip().lower() if text.strip() else ""
    first = first.removeprefix("answer:").strip().strip("*'\"` ")
    if first.startswith("no") and not first.startswith(("not ", "none")):
        return "none"
    if first.startswith("yes"):
        return "near_exact" if "near" in first or "exact" not in first else "exact"
    return None


class LLMJudge:
    name = "llm"

    def __init__(self, generate: Callable[[list[str]], list[str]], demonstrations: Sequence[Mapping[str, str]], *,
                 retries: int = 2, model: str = "", variant: str = "", placement: dict | None = None) -> None:
        for demo in demonstrations:
            if set(demo) != {"reference", "candidate", "answer"} or demo["answer"] not in ANSWERS.values():
                raise InputError(f"a judge demonstration needs reference, candidate and an answer among "
                                 f"{', '.join(ANSWERS.values())}; got {dict(demo)}")
        self.generate, self.demonstrations, self.retries = generate, list(demonstrations), retries
        self.model, self.variant, self.placement = model, variant, placement

    @classmethod
    def from_config(cls, generator, demonstrations, extra_demonstrations=(), retries: int = 2, variant: str = "",
                    max_tokens: int = 8, runtime=None) -> "LLMJudge":
        """From ``conf/judge/llm*.yaml``: ``generator`` is a ``generation`` node (an OpenAI-compatible server by
        default; ``generation@judge.generator=local judge.generator.model=<folder or hub id>`` runs it here),
        opened by the one model factory on the run's ``runtime`` policy."""
        backend = build_backend(generator, where="judge.generator")
        if getattr(backend, "cache_path", "") is None:  # a server judge's answers keep the file they always had
            from detect.cache import cache_dir

            backend.cache_path = str(cache_dir() / "api" / "judge.jsonl")
        settings = GenerationSettings(prompt_format="auto", max_new_tokens=max_tokens, progress=False)
        model = backend.open(None, settings, placement_from(runtime) if runtime else None)
        return cls(model.generate, [dict(d) for d in [*demonstrations, *extra_demonstrations]], retries=retries,
                   model=model.name, variant=variant, placement=model.placement())

    def describe(self) -> dict:
        described = {"name": self.name, "model": self.model, "variant": self.variant,
                     "demonstrations": len(self.demonstrations), "retries": self.retries}
        return {**described, "placement": self.placement} if self.placement else described

    def __call__(self, rows: Sequence[dict]) -> list[str]:
        """Labels for rows with ``reference`` and ``completion``; writes each raw answer to ``judge_answer``."""
        prompts = [build_judge_prompt(r["reference"], r["completion"], self.demonstrations) for r in rows]
        answers = self.generate(prompts)
        labels = [parse_answer(a) for a in answers]
        for _ in range(self.retries):
            pending = [i for i, label in enumerate(labels) if label is None]
            if not pending:
                break
            retried = self.generate([prompts[i] + f"\n\n{REMINDER}\nANSWER:" for i in pending])
            for i, answer in zip(pending, retried):
                answers[i], labels[i] = answer, parse_answer(answer)
        for row, answer in zip(rows, answers):
            row["judge_answer"] = answer
        return [label or "unparseable" for label in labels]
