"""session: ids clients cannot guess, and a round trip through storage."""

from __future__ import annotations

import re

from flask_mcp_gevent.session import Session, new_session_id


def test_session_ids_carry_128_random_bits_as_visible_ascii():
    ids = {new_session_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)


def test_a_session_is_negotiated_once_it_has_a_version():
    session = Session()
    assert not session.negotiated and not session.initialized
    session.protocol_version = "2025-06-18"
    assert session.negotiated


def test_a_session_survives_storage_and_ignores_unknown_fields():
    session = Session(principal="ada", protocol_version="2025-03-26", client_capabilities={"roots": {}})
    data = session.to_dict()
    data["field_from_a_newer_version"] = 1
    restored = Session.from_dict(data)
    assert restored == session


def test_a_copy_changes_freely_without_touching_the_original():
    session = Session(client_info={"name": "c"}, client_capabilities={"roots": {}}, subscriptions=["file:///a"])
    twin = session.copy()
    assert twin == session and twin is not session
    twin.subscriptions.append("file:///b")
    twin.client_info["name"] = "d"
    twin.client_capabilities.clear()
    twin.protocol_version = "2025-06-18"
    assert session == Session(id=session.id, client_info={"name": "c"}, client_capabilities={"roots": {}},
                              subscriptions=["file:///a"], created_at=session.created_at)
