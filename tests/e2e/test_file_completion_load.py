"""File completion under load on a real gunicorn: bounded work per call, and other clients' requests keep flowing.

The root holds 30,000 empty files in one directory, more than MCP_COMPLETION_SCAN_MAX.
Completions that name that directory run concurrently with another client's pings:
each answer shows the bound (100 values, hasMore, no total; a narrow prefix is cut
short too), and every ping is answered within a generous timeout.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from flask_mcp_gevent.config import Settings
from tests.e2e.raw_clients import StreamableSession, request
from tests.e2e.server_process import ServerProcess

pytestmark = pytest.mark.e2e

FILES = 30_000
COMPLETERS = 20
ROUNDS = 3
MAX_PINGS = 500
# Generous: a ping takes milliseconds; before the bound, 20 completions held one up for seconds.
PING_TIMEOUT_S = 10.0


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """A files root whose many/ directory holds FILES empty files, f00000 to f29999."""
    root = tmp_path_factory.mktemp("many-files").resolve()
    many = root / "many"
    many.mkdir()
    for n in range(FILES):
        os.close(os.open(many / f"f{n:05d}", os.O_CREAT | os.O_WRONLY, 0o644))
    return root


@pytest.fixture(scope="module")
def files_server(root):
    """A gunicorn serving that root, with the default completion bound."""
    assert Settings().completion_scan_max < FILES  # the directory is bigger than one completion may read
    with ServerProcess(env={"MCP_FILES_ROOT": str(root)}) as process:
        yield process


def complete(session: StreamableSession, typed: str) -> dict:
    """The completion result for the file template's path."""
    answer = session.call(request("completion/complete", {"ref": {"type": "ref/resource", "uri": "file://{+path}"},
                                                          "argument": {"name": "path", "value": typed}}))
    return answer["result"]["completion"]


def test_a_completion_reads_a_bounded_part_of_a_big_directory(files_server, root):
    with httpx.Client(timeout=30.0) as http:
        session = StreamableSession(http, files_server.url)
        broad = complete(session, f"{root}/many/")
        narrow = complete(session, f"{root}/many/f2999")
    assert (len(broad["values"]), broad["hasMore"], "total" in broad) == (100, True, False)
    assert all(value.startswith(f"{root}/many/f") for value in broad["values"])
    # Ten files match, but finding them all would mean reading the whole directory: the answer says it stopped.
    assert set(narrow["values"]) <= {f"{root}/many/f2999{n}" for n in range(10)}
    assert (narrow["hasMore"], "total" in narrow) == (True, False)


def test_pings_of_another_client_are_answered_while_completions_run(files_server, root):
    done = threading.Event()
    pings: list[dict] = []
    failures: list[Exception] = []

    def ping_until_done() -> None:
        """Ping on a session of its own until the completions are over (bounded by MAX_PINGS)."""
        with httpx.Client(timeout=httpx.Timeout(PING_TIMEOUT_S, connect=5.0)) as http:
            session = StreamableSession(http, files_server.url)
            try:
                while not done.is_set() and len(pings) < MAX_PINGS:
                    pings.append(session.call(request("ping")))
            except httpx.TimeoutException as late:
                failures.append(late)

    with httpx.Client(timeout=60.0, limits=httpx.Limits(max_connections=COMPLETERS)) as http:
        sessions = [StreamableSession(http, files_server.url) for _ in range(COMPLETERS)]
        pinger = threading.Thread(target=ping_until_done)
        pinger.start()
        try:
            with ThreadPoolExecutor(COMPLETERS) as pool:
                answers = list(pool.map(lambda s: complete(s, f"{root}/many/"), sessions * ROUNDS))
        finally:
            done.set()
            pinger.join(PING_TIMEOUT_S * 2)
    assert not pinger.is_alive()
    assert failures == [], f"a ping waited more than {PING_TIMEOUT_S} s"
    assert len(answers) == COMPLETERS * ROUNDS
    assert all((len(a["values"]), a["hasMore"]) == (100, True) for a in answers)
    assert pings and all(ping["result"] == {} for ping in pings)
