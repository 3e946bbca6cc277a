"""Greedy generation over an OpenAI-compatible API: OpenAI itself, vLLM, ``transformers serve``, llama.cpp, Ollama.

    python -m detect +dataset=synth_nli generation=openai generation.model=gpt-4o-mini    # OPENAI_API_KEY set
    transformers serve --port 8000 <model folder> &                                      # a local server
    python -m detect +dataset=synth_nli generation=openai generation.base_url=http://127.0.0.1:8000/v1 \
        generation.model=<model folder> generation.api_key_env=null

``OpenAIGenerator(model=..., base_url=...)(prompts) -> completions``: temperature 0, ``max_tokens``, an optional
seed; ``concurrency`` requests in flight; the SDK's own retries (429, 5xx, dropped connections, with backoff)
and timeout. ``prompt_format="chat"`` sends each prompt as one user message to /chat/completions (the server
applies the model's chat template); ``"raw"`` sends it as is to /completions (base models; local servers).

The key is read from the environment variable named by ``api_key_env`` and is never stored or written. Every
completion is appended to a cache file as it arrives (``cache_path``), keyed by the request, so a run that
fails half-way (a 5xx after the retries, a quota) keeps what it paid for, and a rerun sends only the rest.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Sequence

from detect.cache import digest
from detect.errors import InputError

API_PROMPT_FORMATS = ("chat", "raw")
# A quiet console: Hydra logs at INFO, where the HTTP client writes one line per request above the progress bars.
for _logger in ("httpx", "httpx2", "httpcore", "httpcore2", "openai"):
    logging.getLogger(_logger).setLevel(logging.WARNING)


class OpenAIGenerator:
    def __init__(self, *, model: str, base_url: str | None = None, api_key_env: str | None = "OPENAI_API_KEY",
                 prompt_format: str = "chat", max_tokens: int = 256, seed: int | None = None,
                 concurrency: int = 8, timeout: float = 120.0, max_retries: int = 5,
                 cache_path: str | Path | None = None, client=None) -> None:
        if prompt_format == "auto":
            prompt_format = "chat"  # an API model is a chat model unless told otherwise
        if prompt_format not in API_PROMPT_FORMATS:
            raise InputError(f"prompt_format '{prompt_format}' over an API; use one of {', '.join(API_PROMPT_FORMATS)}")
        if not model:
            raise InputError("generation=openai needs generation.model=<the served model's id>")
        self.model, self.base_url, self.prompt_format = model, base_url, prompt_format
        self.max_tokens, self.seed, self.concurrency = max_tokens, seed, max(1, concurrency)
        if client is None:
            from openai import OpenAI

            client = OpenAI(api_key=api_key_from_env(api_key_env), base_url=base_url, timeout=timeout,
                            max_retries=max_retries)
        self.client = client
        self.cache_path = Path(cache_path) if cache_path else None
        self._lock = threading.Lock()
        self.cached = self._load_cache()

    def _load_cache(self) -> dict:
        if self.cache_path is None or not self.cache_path.is_file():
            return {}
        cached = {}
        for line in self.cache_path.read_text().splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:  # a line cut by a kill mid-write: that request is sent again
                continue
            cached[record["key"]] = record["completion"] if "completion" in record else record["value"]
        return cached

    def _key(self, prompt: str, max_tokens: int) -> str:
        return digest([self.base_url, self.model, self.prompt_format, max_tokens, self.seed, prompt])

    def _request(self, prompt: str, max_tokens: int) -> str:
        common = {"model": self.model, "temperature": 0, "max_tokens": max_tokens}
        if self.seed is not None:
            common["seed"] = self.seed
        if self.prompt_format == "chat":
            response = self.client.chat.completions.create(messages=[{"role": "user", "content": prompt}], **common)
            text = response.choices[0].message.content or ""
        else:
            response = self.client.completions.create(prompt=prompt, **common)
            text = response.choices[0].text or ""
        return text

    def cached_call(self, key: str, request, field: str = "value"):
        """``request()``'s answer, from the cache file when this key was answered before; a new answer is appended
        to the file as it arrives (JSON: a completion, or a text's log-probabilities)."""
        if key in self.cached:
            return self.cached[key]
        value = request()
        with self._lock:
            self.cached[key] = value
            if self.cache_path is not None:
                self.cache_path.parent.mkdir(parents=True, exist_ok=True)
                with open(self.cache_path, "a") as file:
                    file.write(json.dumps({"key": key, field: value}) + "\n")
        return value

    def map(self, function, items: Sequence) -> list:
        """``function`` over ``items`` with ``concurrency`` requests in flight; an API error after the SDK's
        retries is one line saying what failed and what was kept."""
        import openai

        try:
            with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
                return list(pool.map(function, items))
        except openai.APIError as error:
            raise InputError(self._failure(error)) from None

    def __call__(self, prompts: Sequence[str], shapes: Sequence | None = None,
                 max_new_tokens: int | None = None) -> list[str]:
        """Completions of ``prompts``. ``shapes`` (an ``AnswerShape``, detect/detectors/time_travel/stopping.py, per
        prompt, or None) cut each to the length the local backend keeps, so both give the same cleaned completions;
        the server has no line rule, so it generates up to ``max_tokens`` (the cached text is the server's, uncut)."""
        max_tokens = max_new_tokens or self.max_tokens

        def complete(prompt: str) -> str:
            return self.cached_call(self._key(prompt, max_tokens), lambda: self._request(prompt, max_tokens),
                                    field="completion")

        texts = self.map(complete, prompts)
        return texts if shapes is None else [shape.cut(t) if shape else t for t, shape in zip(texts, shapes)]

    def sample(self, prompts: Sequence[str], n: int, *, temperature: float, max_new_tokens: int | None = None,
               seed: int = 0) -> list[list[str]]:
        """``n`` completions of each prompt at ``temperature`` (top_p 1), asked with OpenAI's ``n`` and ``seed``; a
        server that returns fewer choices than asked is asked again for the rest (with seed + 1, + 2, ... so that a
        server that honours the seed does not repeat itself), as CDD's own client asks in batches. Cached like the
        greedy completions, under the sampling settings."""
        max_tokens = max_new_tokens or self.max_tokens

        def request(prompt: str) -> list[str]:
            texts: list[str] = []
            for attempt in range(n):  # at least one choice an answer, so n requests at most
                common = {"model": self.model, "temperature": temperature, "top_p": 1.0, "max_tokens": max_tokens,
                          "n": n - len(texts), "seed": seed + attempt}
                if self.prompt_format == "chat":
                    response = self.client.chat.completions.create(
                        messages=[{"role": "user", "content": prompt}], **common)
                    texts += [choice.message.content or "" for choice in response.choices]
                else:
                    response = self.client.completions.create(prompt=prompt, **common)
                    texts += [choice.text or "" for choice in response.choices]
                if len(texts) >= n:
                    return texts[:n]
            raise InputError(f"the server at {self.base_url or 'api.openai.com'} returned {len(texts)} of {n} samples "
                             f"in {n} requests: it does not sample; turn off the detectors that sample (cdd)")

        def samples(prompt: str) -> list[str]:
            key = digest([self.base_url, self.model, self.prompt_format, max_tokens, "sample", n, temperature, seed,
                          prompt])
            return self.cached_call(key, lambda: request(prompt))

        return self.map(samples, prompts)

    def _failure(self, error) -> str:
        """One line: what failed, what to check, and what was kept. The SDK has already retried what it retries."""
        import openai

        where = self.base_url or "api.openai.com"
        detail = getattr(error, "message", str(error))
        if isinstance(error, openai.AuthenticationError):
            return (f"the server at {where} rejected the API key (401): check the key in the environment variable "
                    f"named by generation.api_key_env ({detail})")
        if isinstance(error, openai.NotFoundError):
            return (f"model '{self.model}' not found at {where} (404): check generation.model and generation.base_url "
                    f"({detail})")
        if isinstance(error, openai.APIConnectionError):
            problem = (f"cannot reach {where} after the retries: is the server running, and does generation.base_url "
                       f"end in /v1?")
        elif isinstance(error, openai.RateLimitError):
            problem = f"rate limit or quota at {where} (429) after the retries: {detail}; rerun later."
        elif isinstance(error, openai.APIStatusError):
            problem = f"{where} answered {error.status_code} after the retries: {detail}."
        else:
            problem = f"the request to {where} failed: {detail}."
        if self.cache_path is None:
            return f"{problem} {len(self.cached)} completions received before the failure are not kept (no cache)."
        return (f"{problem} The {len(self.cached)} completions received are kept in {self.cache_path}; a rerun "
                f"sends the rest.")


def api_key_from_env(variable: str | None) -> str:
    """The key from the environment. None: a local server that checks no key."""
    if variable is None:
        return "no-key"
    key = os.environ.get(variable)
    if not key:
        raise InputError(f"the API key variable {variable} is not set: export {variable}=<key> (for a local server "
                         f"that checks no key, set generation.api_key_env=null)")
    return key
