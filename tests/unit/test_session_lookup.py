"""http_io.lookup_session: 400 for what is no session id, 404 for an id never issued, without asking the store."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.server import Server
from flask_mcp_gevent.session import SESSION_ID_MAX_CHARS, new_session_id
from flask_mcp_gevent.store.memory import MemoryStore
from flask_mcp_gevent.transports.http_io import HttpProblem, lookup_session
from mcp_tools import Registry


def status_of(session_id: str) -> tuple[int, int]:
    """The HTTP status lookup_session refuses session_id with, and how many times it asked the store."""
    settings = Settings.from_mapping({})
    store = MemoryStore(settings)
    lookups: list[str] = []
    get_own_session = store.sessions.get_own_session

    def counted(session_id: str, transport: str, principal: str | None):
        """Count the lookup, then ask the store (which knows no session)."""
        lookups.append(session_id)
        return get_own_session(session_id, transport, principal)

    # Counted before the server is built, so whatever of the store's methods the server binds is the counted one.
    store.sessions.get_own_session = counted
    server = Server(settings, registry=Registry(), store=store)
    with pytest.raises(HttpProblem) as refused:
        lookup_session(server, session_id, "streamable", None, request_id=7)
    return refused.value.status, len(lookups)


FOREIGN_IDS = ["nope-nope-nope-nope-nope-nope", "A" * 32, "0" * 31, "~" * SESSION_ID_MAX_CHARS]
MALFORMED_IDS = ["", "a b", "tab\there", "caf\u00e9", "nul\x00", "0" * (SESSION_ID_MAX_CHARS + 1)]


@pytest.mark.parametrize("session_id", FOREIGN_IDS)
def test_a_visible_ascii_id_not_of_our_shape_is_404_without_a_store_lookup(session_id):
    assert status_of(session_id) == (404, 0)


def test_an_id_ending_in_a_newline_is_malformed():
    # `$` would match before a final newline; the check matches the whole id.
    assert status_of(new_session_id() + "\n") == (400, 0)


@pytest.mark.parametrize("session_id", MALFORMED_IDS)
def test_an_id_outside_visible_ascii_or_over_the_bound_is_400(session_id):
    assert status_of(session_id) == (400, 0)


def test_an_id_of_our_shape_is_looked_up_and_404_when_unknown():
    assert status_of(new_session_id()) == (404, 1)
