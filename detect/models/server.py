"""A model behind an OpenAI-compatible server (``generation=openai``): OpenAI itself, vLLM, llama.cpp's server,
``transformers serve``, Ollama.

    python -m detect +dataset=synth_nli generation=openai generation.model=gpt-4o-mini          # OPENAI_API_KEY set
    python -m llama_cpp.server --model model.gguf --port 8000 &                                # a local server
    python -m detect +dataset=synth_nli generation=openai generation.base_url=http://127.0.0.1:8000/v1 \
        generation.model=<served id> generation.api_key_env=null detect.prompt_format=raw

Generation is ``detect/generation/openai.py`` (temperature 0, cached as it arrives, one-line errors). The logit
detectors run too where the server scores a prompt's own tokens: ``logprobs: echo`` asks ``/completions`` for
``echo=true, logprobs=0, max_tokens=1``, as GPT-3's API answered it and vLLM still does; the prompt's tokens come
back with their log-probabilities, and the one generated token is dropped.

The first request is a probe, and a check: a passage written three times. A model that reads its context copies
the third copy almost surely (the embedded SmolLM2-135M: mean log p -0.35 a token, where the first copy scores
-7.6), so a mean below ``COPY_CHECK`` (-2) says the numbers are not the prompt tokens' log-probabilities. Measured
on the servers that run offline here: llama-cpp-python 0.3.36 returns each token's log-probability under the
*next* position's distribution (-15.6 on the same passage; abetlen/llama-cpp-python#1983) and ``transformers
serve`` ignores ``echo`` and ``logprobs``; llama.cpp's own server returns none for the prompt, by its issue tracker
(ggml-org/llama.cpp#27174).
A server that refuses or fails the check leaves ``no_logprobs`` set to its one-line reason, and the logit
detectors are skipped with it; vLLM's ``/completions`` answers as OpenAI's did.

A server gives the chosen tokens' log-probabilities only, never the whole next-token distribution: Min-K%++
(which standardises by its moments) and DC-PDD (which counts corpus tokens with the model's tokenizer) are skipped.
Each text's log-probabilities are cached beside the completions, so a rerun asks for nothing it has.
"""

from __future__ import annotations

from pathlib import Path

from detect.cache import cache_dir, digest
from detect.errors import InputError
from detect.generation.openai import OpenAIGenerator
from detect.models.base import LanguageModel
from detect.models.loading import ModelRef
from detect.validate import Range

LOGPROB_METHODS = ("echo", None)
COPY_PASSAGE = "Mara Quell repaired fourteen looms in Dunhollow before the spring fair."
COPY_CHECK = -2.0  # mean log p of the third copy below this: not the prompt tokens' log-probabilities


class ServerModel(LanguageModel):
    no_moments = ("a server returns the chosen tokens' log-probabilities, not the next-token distribution whose "
                  "moments Min-K%++ standardises by")
    no_token_ids = "a server returns token strings, not the ids DC-PDD counts against its corpus"
    no_sampling = None  # OpenAI's n, temperature and seed (detect/generation/openai.py); reproducible as far as the
    # server honours the seed, and cached once answered

    def __init__(self, generator: OpenAIGenerator, *, logprobs: str | None = "echo") -> None:
        super().__init__()
        self.generator = generator
        self.name, self.path = generator.model, generator.base_url or "https://api.openai.com/v1"
        self.prompt_format = generator.prompt_format
        if logprobs not in LOGPROB_METHODS:
            raise InputError(f"generation.logprobs={logprobs}: use echo (prompt log-probabilities from /completions) "
                             f"or null (never ask; the logit detectors are skipped)")
        self._no_logprobs = None if logprobs else "generation.logprobs is null: prompt log-probabilities not asked for"
        self._probed = logprobs is None

    @property
    def no_raw_generation(self) -> str | None:
        """A chat-served model is asked through /chat/completions, which wraps every prompt in its chat template."""
        if self.prompt_format == "chat":
            return ("it is asked through /chat/completions (detect.prompt_format=chat), which wraps every prompt in "
                    "its chat template, so a text cannot be continued as given; detect.prompt_format=raw asks "
                    "/completions where the server has it")
        return None

    def _generate(self, prompts: list[str], stop: list, max_new_tokens: int | None,
                  raw: bool = False) -> tuple[list[str], list]:
        # raw: the prompts go to /completions as they are, which prompt_format=raw already does
        texts = self.generator(prompts, stop if any(stop) else None, max_new_tokens=max_new_tokens)
        return texts, [None] * len(prompts)

    def _sample(self, prompts: list[str], n: int, temperature: float, max_new_tokens: int | None,
                seed: int) -> list[list[str]]:
        return self.generator.sample(prompts, n, temperature=temperature, max_new_tokens=max_new_tokens, seed=seed)

    @property
    def no_logprobs(self) -> str | None:
        """Why the logit detectors cannot run here, or None; the first call probes the server with one short text."""
        if not self._probed:
            self._probed = True
            try:
                copied = self._echo(" ".join([COPY_PASSAGE] * 3))["logp"]
            except Exception as error:  # noqa: BLE001 (a refusal; an outage or a bad key stops the run instead)
                self._no_logprobs = self._refusal(error)
                return self._no_logprobs
            third = copied[len(copied) - len(copied) // 3:]  # the last third of the scored tokens
            if not third:
                self._no_logprobs = (f"the server at {self.path} echoes the prompt without its tokens' "
                                     f"log-probabilities")
                return self._no_logprobs
            third = sum(third) / len(third)
            if third < COPY_CHECK:
                self._no_logprobs = (f"the server at {self.path} returns prompt log-probabilities that fail the copy "
                                     f"check (a passage's third copy scored {third:.1f} a token, below {COPY_CHECK}): "
                                     f"misaligned, as llama-cpp-python's echo is off by one token")
        return self._no_logprobs

    def _refusal(self, error: Exception) -> str:
        """The one-line reason for a server that will not echo prompt log-probabilities; a server that cannot be
        reached, rejects the key, or is rate-limited or failing (after the SDK's retries) stops the run instead, so
        that a passing outage is never recorded as "this server gives none" in a cached cell."""
        import openai

        transient = isinstance(error, (openai.APIConnectionError, openai.AuthenticationError,
                                       openai.RateLimitError)) or \
            (isinstance(error, openai.APIStatusError) and error.status_code >= 500 and error.status_code != 501)
        if transient:
            raise InputError(self.generator._failure(error)) from None
        reason = " ".join(str(getattr(error, "message", error)).split())[:160]
        return (f"the server at {self.path} does not return prompt log-probabilities (/completions with echo and "
                f"logprobs: {reason})")

    def _echo(self, text: str) -> dict:
        def request() -> dict:
            response = self.generator.client.completions.create(
                model=self.generator.model, prompt=text, max_tokens=1, temperature=0, echo=True, logprobs=0)
            found = response.choices[0].logprobs
            if found is None or not found.token_logprobs:
                raise InputError("no logprobs in the answer")
            return prompt_logprobs(text, list(found.tokens), list(found.token_logprobs), list(found.text_offset))

        key = digest([self.generator.base_url, self.generator.model, "echo-logprobs-offsets", text])
        return self.generator.cached_call(key, request)

    def _token_logprobs(self, texts: list[str], moments: list[bool]) -> list[dict]:
        found = self.generator.map(self._echo, texts)
        self.scored_tokens += sum(len(stats["logp"]) for stats in found)
        return found


def prompt_logprobs(text: str, tokens: list[str], logprobs: list, offsets: list[int]) -> dict:
    """The scored tokens of ``text`` from an echoed completion: the tokens that start inside the text and have a
    log-probability. Where the text starts among the tokens is found from the token strings themselves (a start
    token the server adds, "<s>", shifts vLLM's offsets by its length); the server's ``text_offset`` is the
    fallback where the strings are not the text (byte tokens). The first position has no log-probability (no
    context): the first text token without a start token, the start token with one, whose first text token is then
    scored, as the local path scores a tokenizer that adds one."""
    joined, starts, position = "".join(tokens), [], 0
    for token in tokens:
        starts.append(position)
        position += len(token)
    begin = joined.find(text) if text else -1
    if begin < 0:  # the strings are not the text: trust the server's offsets
        starts, begin = list(offsets), 0
    inside = [i for i, start in enumerate(starts) if begin <= start < begin + len(text)]
    scored = [i for i in inside if logprobs[i] is not None]
    return {"logp": [float(logprobs[i]) for i in scored], "tokens": [tokens[i] for i in scored],
            "offsets": [starts[i] - begin for i in scored]}


class OpenAIServer:
    """The ``generation=openai`` backend: connection settings; ``open`` serves one model id from them."""
    reads_model_group = False  # it serves a model by id; the `model` group's weights are not loaded
    ranges = {"concurrency": Range(1, hint="requests in flight"), "timeout": Range(0, None, "()"),
              "max_retries": Range(0)}

    def __init__(self, name: str = "openai", model: str | None = None, base_url: str | None = None,
                 api_key_env: str | None = "OPENAI_API_KEY", seed: int | None = None, concurrency: int = 8,
                 timeout: float = 120.0, max_retries: int = 5, logprobs: str | None = "echo",
                 prompt_format: str | None = None, cache_path: str | None = None) -> None:
        self.name, self.model, self.base_url, self.api_key_env = name, model, base_url, api_key_env
        self.seed, self.concurrency, self.timeout, self.max_retries = seed, concurrency, timeout, max_retries
        # prompt_format: fixed by the backend (a fine-tune served as it was trained), else the run's detect setting
        self.logprobs, self.prompt_format, self.cache_path = logprobs, prompt_format, cache_path

    def open(self, ref: ModelRef | None, settings, placement=None) -> ServerModel:
        """The served model ``ref.name`` (a study's fine-tuned id), else ``generation.model``."""
        model = ref.name if ref is not None else self.model
        if not model:
            raise InputError("generation=openai needs generation.model=<the served model's id>")
        # auto is sent as chat (a served model is a chat model); the cache file is named by the setting as given
        request = {"model": model, "base_url": self.base_url, "prompt_format": self.prompt_format or
                   settings.prompt_format, "max_tokens": settings.max_new_tokens, "seed": self.seed}
        # one cache file per server, model and generation settings, unless the caller names one
        cache_path = Path(self.cache_path).expanduser() if self.cache_path else \
            cache_dir() / "api" / f"{digest(request)}.jsonl"
        generator = OpenAIGenerator(**request, api_key_env=self.api_key_env, concurrency=self.concurrency,
                                    timeout=self.timeout, max_retries=self.max_retries, cache_path=cache_path)
        return ServerModel(generator, logprobs=self.logprobs)
