"""Real servers the tests talk to (`transformers serve`, llama-cpp-python's server): each started on loopback, its
output in a file, and, if it dies while a test talks to it, the test's failure led by the server's own last lines
(its crash trace, not the client's bare connection error). tests/conftest.py registers the hook."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest

RUNNING: list[tuple[str, subprocess.Popen, Path]] = []  # (name, process, log) of the servers up now
TAIL = 2000  # characters of a dead server's log a failure shows


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def dead(process: subprocess.Popen) -> bool:
    """Whether the server has died (a second's grace: its client can see the socket close before it is reaped)."""
    try:
        process.wait(timeout=1)
    except subprocess.TimeoutExpired:
        return False
    return True


def last_words(name: str, process: subprocess.Popen, log_path: Path) -> str:
    return f"{name} exited with {process.returncode}; its last lines ({log_path}):\n{log_path.read_text()[-TAIL:]}"


@contextlib.contextmanager
def serving(name: str, command: list[str], port: int, ready: str, log_dir: Path) -> Iterator[str]:
    """A server process on loopback, up once ``ready`` (a path) answers; stopped afterwards. Its output goes to a
    file, not a pipe: a full pipe would block the server."""
    log_path = Path(log_dir) / f"{name}.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        RUNNING.append((name, server, log_path))
        try:
            for _ in range(240):
                if server.poll() is not None:
                    pytest.fail(last_words(name, server, log_path))
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}{ready}", timeout=1)
                    break
                except OSError:
                    time.sleep(0.5)
            else:
                pytest.fail(f"{name} did not come up in 120 s")
            try:
                yield f"http://127.0.0.1:{port}/v1"
            except Exception as error:  # the server used inside a test's own ``with``: the same as the hook's
                if dead(server):
                    pytest.fail(f"{last_words(name, server, log_path)}\n\n{type(error).__name__}: {error}")
                raise
        finally:
            RUNNING.remove((name, server, log_path))
            server.terminate()
            server.wait(timeout=30)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test during which a server died: its failure begins with the server's last lines."""
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    words = [last_words(*server) for server in RUNNING if dead(server[1])]
    if words:
        report.longrepr = "\n\n".join([*words, str(report.longrepr)])
