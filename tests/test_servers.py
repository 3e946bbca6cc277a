"""tests/servers.py: a server that dies while a test talks to it fails that test with the server's own last lines
(a segmentation fault's trace from faulthandler, as llama.cpp's crash on AMX gave), not a bare connection error."""

pytest_plugins = ["pytester"]

CRASHING_SERVER = '''
import http.server, os, signal, sys

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/crash":  # what a native crash does: the process dies mid-request
            os.kill(os.getpid(), signal.SIGSEGV)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
'''

TALKS_TO_IT = '''
import sys, urllib.request
from pathlib import Path
import pytest
from servers import free_port, serving

def crashing(port, folder):
    script = str(Path(__file__).parent / "crashing_server.py")
    return serving("crashing server", [sys.executable, "-X", "faulthandler", script, str(port)], port, "/up", folder)

@pytest.fixture(scope="module")
def server(tmp_path_factory):  # as tests/conftest.py serves llama.cpp: a fixture the test outlives
    port = free_port()
    with crashing(port, tmp_path_factory.mktemp("server")):
        yield port

def test_through_a_fixture(server):
    urllib.request.urlopen(f"http://127.0.0.1:{server}/up", timeout=5)
    urllib.request.urlopen(f"http://127.0.0.1:{server}/crash", timeout=5)

def test_in_its_own_with(tmp_path):
    port = free_port()
    with crashing(port, tmp_path):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/crash", timeout=5)
'''


def test_a_server_that_dies_mid_test_fails_it_with_its_last_lines(pytester):
    pytester.makeconftest("from servers import pytest_runtest_makereport  # noqa: F401")
    pytester.makepyfile(crashing_server=CRASHING_SERVER, test_talks=TALKS_TO_IT)
    result = pytester.runpytest()
    result.assert_outcomes(failed=2)
    failures = result.stdout.str().split("= FAILURES =")[1].split("short test summary")[0]
    for test in ("test_through_a_fixture", "test_in_its_own_with"):  # each failure led by the server's words
        section = failures.split(f"_ {test} _")[1].split("\n___")[0]
        assert section.lstrip("_\n").startswith("crashing server exited with -11; its last lines"), section[:500]
        assert "Fatal Python error: Segmentation fault" in section and "in do_GET" in section
        assert "RemoteDisconnected" in section  # the client's error follows them
