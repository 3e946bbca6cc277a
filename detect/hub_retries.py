"""The hub clients' retry warnings, said once. Where the hub does not answer, huggingface_hub and datasets warn at
every retry of every request (45 lines before one unreachable model's one-line error; 22 for one background
corpus): while the lab loads from the hub, that run of warnings is one line, and the client's other records pass.

    with retries_said_once("model someone/model"):
        tokenizer = AutoTokenizer.from_pretrained("someone/model")
"""

from __future__ import annotations

import contextlib
import logging
import sys

HUB_LOGGERS = ("huggingface_hub", "datasets", "fsspec", "urllib3")
# "Retrying in 1s [Retry 1/5].", "Retrying in 5sec [1/20]", and the failed request each retry follows:
# "'[Errno -2] Name or service not known' thrown while requesting HEAD https://huggingface.co/..."
_NOISE = ("retry", "thrown while requesting")


class _SayRetriesOnce(logging.Filter):
    """Lets one line through for a run of retry warnings and drops the rest; other records pass."""

    def __init__(self, what: str) -> None:
        super().__init__()
        self.what, self.said = what, False

    def filter(self, record: logging.LogRecord) -> bool:
        if not any(noise in record.getMessage().lower() for noise in _NOISE):
            return True
        if not self.said:
            self.said = True
            print(f"{self.what}: the hub does not answer; retrying quietly (one line for all retries)",
                  file=sys.stderr)
        return False


@contextlib.contextmanager
def retries_said_once(what: str):
    """While ``what`` loads from the hub, its clients' retry warnings are one line (``_SayRetriesOnce``): the filter
    sits on the clients' loggers and on every handler a record of theirs reaches (the root's: Hydra's console and
    log file)."""
    found = _SayRetriesOnce(what)
    loggers = [logging.getLogger(logger) for logger in HUB_LOGGERS]
    handlers = [handler for logger in loggers for handler in logger.handlers] + logging.getLogger().handlers
    for target in (*loggers, *handlers):
        target.addFilter(found)
    try:
        yield found
    finally:
        for target in (*loggers, *handlers):
            target.removeFilter(found)
