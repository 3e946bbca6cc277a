"""The one model interface: what every detector, judge and the study ask of a model, whatever serves it.

    model.generate(prompts, stop=shapes, max_new_tokens=None) -> completions     (greedy; ``stop_reasons`` kept)
    model.sample(prompts, n, temperature=0.8, max_new_tokens=None, seed=0) -> [[n sampled completions], ...]
    model.token_logprobs(texts, moments=True) -> [{"logp": [...], "ids": [...], "mu": [...], "sigma": [...]}]
    model.continuation_logprobs([(context, text), ...]) -> the same, for the tokens of ``text`` after ``context``
    model.choice_logprobs([(context, [" A", " B"]), ...]) -> each choice's summed log-probability after the context
    model.prefetch([(texts, moments), ...])         # one batched pass for every request a cell will make

As lm-evaluation-harness has one ``LM`` class per backend, each backend is one subclass (``detect/models/hf.py``:
transformers in this process; ``detect/models/server.py``: an OpenAI-compatible server) built by one factory from
the ``generation`` config group (``detect/models/__init__.py``). Per text, ``token_logprobs`` gives the
log-probability of each token given its prefix (``logp``; the first token has no context and is not scored), the
token ids where the backend has them (``ids``) and, with ``moments``, the mean and standard deviation of log p
under the model's next-token distribution at each position (``mu``, ``sigma``: what Min-K%++ standardises by).

What a backend cannot give is said, not failed: ``no_logprobs`` / ``no_moments`` / ``no_token_ids`` /
``no_sampling`` hold the reason (None where it can), and a detector that needs it is skipped with that line.

Both answers are memoised per model: a prompt (with its stop rule) is generated once, a text scored once (a
request without moments is served by a result with them). In a study the same prompts and texts are asked for
more than once: ChatGPT-Cheat?'s prompt by the two cells of one model and split; the clean model's statistics of
the members by its own cell and, as the reference model, by the contaminated model's cell.
"""

from __future__ import annotations

from typing import Iterable, Sequence


class LanguageModel:
    name: str = ""          # the model's name in rows and summaries
    path: str = ""          # its folder, hub id or server
    prompt_format: str = "raw"
    tokenizer = None        # a transformers tokenizer where the backend has one (DC-PDD counts corpus tokens with it)
    no_logprobs: str | None = None   # why token_logprobs cannot run here (None: it can)
    no_moments: str | None = None    # why the next-token moments cannot be had (None: they can)
    no_token_ids: str | None = None  # why token ids cannot be had (None: they can)
    # why temperature sampling cannot be had (None: it can); a backend that implements ``_sample`` sets None
    no_sampling: str | None = "this model backend does not sample (it implements greedy generation only)"
    # why a prompt cannot be continued as the exact text given (``generate(raw=True)``: no chat template around it)
    no_raw_generation: str | None = None

    def __init__(self) -> None:
        self._completions: dict[tuple, tuple[str, str | None]] = {}
        self._samples: dict[tuple, tuple[str, ...]] = {}
        self._logprobs: dict[str, dict] = {}
        self.stop_reasons: list[str | None] = []
        self.generated_tokens = 0  # tokens produced so far (local backends count them)
        self.scored_tokens = 0     # tokens scored so far (padding excluded)

    # ---------------------------------------------------------------------------------------------- generation
    @property
    def prompt_formats(self) -> tuple[str, ...]:
        """The prompt formats a call may ask for (``generate(prompt_format=...)``), this model's own first: a local
        model with a chat template both chat and raw; a served model the one its endpoint takes."""
        return (self.prompt_format,)

    def generate(self, prompts: Sequence[str], stop: Sequence | None = None,
                 max_new_tokens: int | None = None, *, raw: bool = False,
                 prompt_format: str | None = None) -> list[str]:
        """Greedy completions of ``prompts``. ``stop`` (an ``AnswerShape``, detect/detectors/time_travel/stopping.py,
        or None per prompt) ends each completion once its answer is done and cuts it to the kept length;
        ``stop_reasons`` then says, per prompt, why it stopped where the backend knows. ``max_new_tokens``
        overrides the model's. ``raw``: each prompt is the exact text to continue, whatever ``prompt_format`` (a
        leaked document as it was trained, chat template included where it had one); ``no_raw_generation`` says
        where a backend cannot. ``prompt_format``: this call's (one of ``prompt_formats``), else the model's."""
        if raw and self.no_raw_generation:
            raise RuntimeError(f"{self.name}: {self.no_raw_generation}")
        if prompt_format is not None and prompt_format not in self.prompt_formats:
            raise RuntimeError(f"{self.name}: asked in prompt format {prompt_format}; it takes "
                               f"{', '.join(self.prompt_formats)}")
        own = prompt_format in (None, self.prompt_format) or raw  # as the model is prompted (a raw text: any way)
        keys = [(prompt, shape, max_new_tokens, raw) if own else (prompt, shape, max_new_tokens, raw, prompt_format)
                for prompt, shape in zip(prompts, stop if stop is not None else [None] * len(prompts))]
        missing = [key for key in dict.fromkeys(keys) if key not in self._completions]
        if missing:
            asked = ([p for p, *_ in missing], [s for _, s, *_ in missing], max_new_tokens)
            options = {"raw": True} if raw else {} if own else {"prompt_format": prompt_format}
            texts, reasons = self._generate(*asked, **options)
            self._completions.update(zip(missing, zip(texts, reasons)))
        self.stop_reasons = [self._completions[key][1] for key in keys]
        return [self._completions[key][0] for key in keys]

    def _generate(self, prompts: list[str], stop: list, max_new_tokens: int | None,
                  raw: bool = False, prompt_format: str | None = None) -> tuple[list[str], list]:
        """(completions, stop reasons) of prompts not asked before (``raw``: as given, no chat template;
        ``prompt_format``: one of ``prompt_formats`` other than the model's own)."""
        raise NotImplementedError

    def sample(self, prompts: Sequence[str], n: int, *, temperature: float = 0.8, max_new_tokens: int | None = None,
               seed: int = 0) -> list[list[str]]:
        """``n`` completions of each prompt sampled at ``temperature`` (no top-k, no top-p: the whole distribution),
        up to ``max_new_tokens`` each (None: the model's). Seeded: the same (prompt, n, temperature, max_new_tokens,
        seed) gives the same samples whatever else is asked with it (a local backend seeds each prompt by the seed
        and the prompt's text; a server gets ``seed``, which it honours as far as it can). Memoised like
        ``generate``."""
        if self.no_sampling:
            raise RuntimeError(f"{self.name}: {self.no_sampling}")
        keys = [(prompt, n, temperature, max_new_tokens, seed) for prompt in prompts]
        missing = [key for key in dict.fromkeys(keys) if key not in self._samples]
        if missing:
            found = self._sample([key[0] for key in missing], n, temperature, max_new_tokens, seed)
            self._samples.update((key, tuple(texts)) for key, texts in zip(missing, found))
        return [list(self._samples[key]) for key in keys]

    def _sample(self, prompts: list[str], n: int, temperature: float, max_new_tokens: int | None,
                seed: int) -> list[list[str]]:
        """``n`` sampled completions of each prompt not asked before."""
        raise NotImplementedError

    # ---------------------------------------------------------------------------------------------- log-probabilities
    def _missing(self, requests: Iterable[tuple[Sequence[str], bool]]) -> dict[str, bool]:
        wanted: dict[str, bool] = {}
        for texts, moments in requests:
            for text in texts:
                known = self._logprobs.get(text)
                if known is None or (moments and "mu" not in known):
                    wanted[text] = wanted.get(text, False) or moments
        return wanted

    def prefetch(self, requests: Iterable[tuple[Sequence[str], bool]]) -> None:
        """Compute, in one pass, every (texts, moments) request not known yet."""
        if self.no_logprobs:
            raise RuntimeError(f"{self.name}: {self.no_logprobs}")
        wanted = self._missing(requests)
        if wanted:
            texts = list(wanted)
            for text, stats in zip(texts, self._token_logprobs(texts, [wanted[t] for t in texts])):
                self._logprobs[text] = stats

    def token_logprobs(self, texts: Sequence[str], *, moments: bool = False) -> list[dict]:
        self.prefetch([(texts, moments)])
        return [self._logprobs[text] for text in texts]

    def continuation_logprobs(self, requests: Sequence[tuple[str, str]], *, moments: bool = False) -> list[dict]:
        """lm-evaluation-harness's ``loglikelihood(context, continuation)``, token by token: the statistics of the
        tokens of ``context + text`` that start inside ``text`` (the tokens a format trains: an instruction's answer
        after its prompt, a dump line after its header). With an empty context it is ``token_logprobs``."""
        found = self.token_logprobs([context + text for context, text in requests], moments=moments)
        return [continuation(stats, len(context)) for stats, (context, _) in zip(found, requests)]

    def choice_logprobs(self, requests: Sequence[tuple[str, Sequence[str]]]) -> list[list[float]]:
        """lm-evaluation-harness's multiple choice: per (context, choices), each choice's summed log-probability
        after the context. Here through ``continuation_logprobs``; a backend may answer single-token choices from
        one pass over the context (``HFModel``)."""
        found = iter(self.continuation_logprobs([(context, c) for context, choices in requests for c in choices]))
        return [[float(sum(next(found)["logp"])) for _ in choices] for _, choices in requests]

    def _token_logprobs(self, texts: list[str], moments: list[bool]) -> list[dict]:
        """Per text, its statistics (see the module docstring); ``moments[i]``: with ``mu`` and ``sigma``."""
        raise NotImplementedError

    # ---------------------------------------------------------------------------------------------- provenance
    def counters(self) -> dict[str, int]:
        return {"generated_tokens": self.generated_tokens, "scored_tokens": self.scored_tokens}

    def placement(self) -> dict | None:
        """Where the model really is (device or device map, dtype); None for a server."""
        return None


def continuation(stats: dict, start: int) -> dict:
    """The per-token statistics of the tokens that start at or after character ``start`` (every list sliced alike).
    A token that straddles ``start`` belongs to the context, as a prompt's last token does in training."""
    if start == 0:
        return stats
    first = next((i for i, offset in enumerate(stats["offsets"]) if offset >= start), len(stats["offsets"]))
    return {key: value[first:] if isinstance(value, list) else value for key, value in stats.items()}
