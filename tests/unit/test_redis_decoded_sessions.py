"""The Redis hub's memo of decoded sessions: an unchanged session is copied, never shared, and the memo is bounded."""

from __future__ import annotations

from flask_mcp_gevent.hub import redis_codec
from flask_mcp_gevent.hub.redis_codec import DecodedSessions, session_json
from flask_mcp_gevent.session import SSE, Session


def stored(**fields) -> tuple[Session, bytes]:
    """A session and the JSON the hub stores for it."""
    session = Session(transport=SSE, principal="alice", protocol_version="2025-06-18",
                      client_info={"name": "c"}, client_capabilities={"roots": {}}, subscriptions=["a://1"], **fields)
    return session, session_json(session)


def count_decodes(monkeypatch) -> list[bytes]:
    """Record every full decode the memo makes."""
    decoded: list[bytes] = []
    real = redis_codec.session_from_json
    monkeypatch.setattr(redis_codec, "session_from_json", lambda data: decoded.append(data) or real(data))
    return decoded


def test_the_same_json_is_decoded_once_and_read_back_equal(monkeypatch):
    decoded = count_decodes(monkeypatch)
    memo = DecodedSessions()
    session, data = stored()
    first = memo.decode(session.id, data)
    again = memo.decode(session.id, bytes(data))  # Redis hands back new bytes every time
    assert first == session and again == session
    assert first is not again
    assert len(decoded) == 1


def test_changing_a_session_read_back_changes_no_later_read(monkeypatch):
    memo = DecodedSessions()
    session, data = stored()
    first = memo.decode(session.id, data)
    first.subscriptions.append("a://2")
    first.client_info["name"] = "changed"
    first.client_capabilities["sampling"] = {}
    first.log_level = "debug"
    again = memo.decode(session.id, data)
    assert again == session
    again.subscriptions.append("a://3")
    assert memo.decode(session.id, data).subscriptions == ["a://1"]


def test_new_json_for_a_session_is_decoded_afresh(monkeypatch):
    decoded = count_decodes(monkeypatch)
    memo = DecodedSessions()
    session, data = stored()
    memo.decode(session.id, data)
    session.log_level = "error"
    changed = session_json(session)
    assert memo.decode(session.id, changed).log_level == "error"
    assert len(decoded) == 2


def test_a_forgotten_session_and_a_full_memo_are_decoded_again(monkeypatch):
    decoded = count_decodes(monkeypatch)
    memo = DecodedSessions(limit=2)
    sessions = [stored() for _ in range(3)]
    for session, data in sessions:
        memo.decode(session.id, data)
    assert len(memo._known) <= 2  # the third forgot the first two
    memo.decode(sessions[0][0].id, sessions[0][1])
    memo.forget(sessions[0][0].id)
    memo.decode(sessions[0][0].id, sessions[0][1])
    assert len(decoded) == 5
