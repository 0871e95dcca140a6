"""subscriptions/listen's registry: the honoured filter, the tags, the bounds and the graceful end."""

from __future__ import annotations

import gevent
import pytest

from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.errors import INVALID_PARAMS, SERVER_UNAVAILABLE, RpcError
from flask_mcp_gevent.stateless.listen import (
    ACKNOWLEDGED,
    SHUTTING_DOWN,
    ListenRegistry,
    honoured_filter,
    listen_messages,
)
from flask_mcp_gevent.store.memory import MemoryStore
from tests.support.stores import serve

TAG = "io.modelcontextprotocol/subscriptionId"


def everyone(uri: str) -> bool:
    """A principal that may read every resource."""
    return True


def drain(stream, count):
    """The next count messages of a stream (after its acknowledgment), failing on a timeout."""
    messages = listen_messages(stream, 0.05)
    assert next(messages)["method"] == ACKNOWLEDGED
    found = []
    for message in messages:
        if message is None:
            break
        found.append(message)
        if len(found) == count:
            break
    return found


def test_filter_keeps_true_flags_and_readable_uris_only():
    requested = {"toolsListChanged": True, "promptsListChanged": False, "unknownMember": ["t"],
                 "resourceSubscriptions": ["file:///a", "secret://b", "file:///a"]}
    assert honoured_filter(requested, lambda uri: not uri.startswith("secret:")) == {
        "toolsListChanged": True, "resourceSubscriptions": ["file:///a"]}
    assert honoured_filter(None, everyone) == {}


def test_task_ids_are_kept_with_the_tasks_extension_and_refused_without_it():
    assert honoured_filter({"taskIds": ["a", "b", "a"]}, everyone, tasks=True) == {"taskIds": ["a", "b"]}
    with pytest.raises(RpcError) as raised:
        honoured_filter({"taskIds": ["a"]}, everyone)
    assert raised.value.code == -32021
    with pytest.raises(RpcError) as raised:
        honoured_filter({"taskIds": "a"}, everyone, tasks=True)
    assert raised.value.code == INVALID_PARAMS


@pytest.mark.parametrize("bad", [[], {"toolsListChanged": "yes"}, {"resourceSubscriptions": "file:///a"},
                                 {"resourceSubscriptions": [1]}])
def test_malformed_filter_is_invalid_params(bad):
    with pytest.raises(RpcError) as raised:
        honoured_filter(bad, everyone)
    assert raised.value.code == INVALID_PARAMS


def test_acknowledgment_comes_first_with_the_id_as_sent():
    registry = ListenRegistry(10, 10_000, 5)
    for listen_id in (7, "listen-7"):
        stream = registry.open(listen_id, None, {"toolsListChanged": True}, everyone)
        ack = next(listen_messages(stream, 0.01))
        assert ack == {"jsonrpc": "2.0", "method": ACKNOWLEDGED,
                       "params": {"_meta": {TAG: listen_id}, "notifications": {"toolsListChanged": True}}}


def test_only_what_the_filter_asked_for_arrives_tagged():
    registry = ListenRegistry(10, 10_000, 5)
    prompts = registry.open(1, None, {"promptsListChanged": True}, everyone)
    resources = registry.open("r", None, {"resourceSubscriptions": ["file:///a"]}, everyone)
    registry.deliver({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    registry.deliver({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"})
    registry.deliver({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "file:///b"}})
    registry.deliver({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "file:///a"}})
    registry.deliver({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1}})
    assert drain(prompts, 5) == [{"jsonrpc": "2.0", "method": "notifications/prompts/list_changed",
                                  "params": {"_meta": {TAG: 1}}}]
    assert drain(resources, 5) == [{"jsonrpc": "2.0", "method": "notifications/resources/updated",
                                    "params": {"uri": "file:///a", "_meta": {TAG: "r"}}}]


def test_a_stream_that_does_not_read_is_cut_off():
    registry = ListenRegistry(3, 10_000, 5)
    stream = registry.open(1, None, {"toolsListChanged": True}, everyone)
    cut = []
    stream.on_cut_off = lambda: cut.append(True)
    for _ in range(4):
        registry.deliver({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    assert stream.reason == "slow consumer" and cut == [True]
    assert len(drain(stream, 10)) == 3  # what was queued, then the end


def test_listens_per_principal_are_bounded_and_freed_on_close():
    registry = ListenRegistry(10, 10_000, 2)
    first = registry.open(1, "alice", {}, everyone)
    registry.open(2, "alice", {}, everyone)
    registry.open(3, "bob", {}, everyone)
    with pytest.raises(RpcError) as raised:
        registry.open(4, "alice", {}, everyone)
    assert raised.value.code == SERVER_UNAVAILABLE
    first.close()
    registry.open(5, "alice", {}, everyone)
    assert len(registry) == 3


def test_shutdown_ends_every_stream_with_its_result():
    registry = ListenRegistry(10, 10_000, 5)
    stream = registry.open("s", None, {"toolsListChanged": True}, everyone)
    messages = listen_messages(stream, 5.0)
    next(messages)
    gevent.spawn_later(0.01, registry.shutdown)
    assert next(messages) == {"jsonrpc": "2.0", "id": "s",
                              "result": {"resultType": "complete", "_meta": {TAG: "s"}}}
    assert list(messages) == []
    assert stream.reason == SHUTTING_DOWN
    with pytest.raises(RpcError):
        registry.open("late", None, {}, everyone)


def test_a_server_on_the_memory_store_hands_list_changes_and_updates_to_its_listen_streams():
    server = serve(MemoryStore(Settings.from_mapping({})))
    registry = server.listeners
    stream = registry.open(9, None, {"toolsListChanged": True, "resourceSubscriptions": ["file:///x"]}, everyone)
    server.announce_list_changed("tool")
    server.resource_updated("file:///x")
    assert [m["method"] for m in drain(stream, 2)] == ["notifications/tools/list_changed",
                                                       "notifications/resources/updated"]


class Send:
    """A transport's send for one request: what it got, and a cut-off (reason) once it has taken `room` messages."""

    def __init__(self, room: int = 1000) -> None:
        self.sent: list[dict] = []
        self.room = room
        self.reason = None

    def __call__(self, message: dict) -> None:
        if len(self.sent) >= self.room:
            self.reason = "slow consumer"
            return
        self.sent.append(message)


def context(registry: ListenRegistry, send: Send, request_id=3, notifications=None, services=None):
    """The few parts of a RequestContext subscriptions_listen reads."""
    from types import SimpleNamespace

    return SimpleNamespace(services=services or SimpleNamespace(listeners=registry), request_id=request_id,
                           principal=None, permits=lambda kind, name: True,
                           settings=SimpleNamespace(keepalive_s=0.05), send=send,
                           session=SimpleNamespace(client_capabilities={}),
                           params={"notifications": notifications, "_meta": {}})


def test_the_handler_sends_the_ack_and_notifications_then_its_result_at_shutdown():
    from flask_mcp_gevent.stateless.listen import subscriptions_listen

    registry, send = ListenRegistry(10, 10_000, 5), Send()
    running = gevent.spawn(subscriptions_listen, context(registry, send), {"toolsListChanged": True})
    gevent.sleep(0.01)
    registry.deliver({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    gevent.sleep(0.01)
    registry.shutdown()
    result = running.get(timeout=5)
    assert [m["method"] for m in send.sent] == [ACKNOWLEDGED, "notifications/tools/list_changed"]
    assert result._value.result == {"resultType": "complete", "_meta": {TAG: 3}}
    assert len(registry) == 0


def test_the_handler_ends_a_stream_its_transport_cut_off():
    from flask_mcp_gevent.stateless.listen import subscriptions_listen

    registry, send = ListenRegistry(4, 10_000, 5), Send(room=1)
    running = gevent.spawn(subscriptions_listen, context(registry, send), {"toolsListChanged": True})
    gevent.sleep(0.01)
    registry.deliver({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    running.join(timeout=5)
    assert isinstance(running.exception, RpcError) and "slow consumer" in running.exception.message
    assert [m["method"] for m in send.sent] == [ACKNOWLEDGED] and len(registry) == 0


class Runner:
    """A TaskRunner's look_at: the live tasks among those asked (an id left out is unknown), and every look."""

    def __init__(self, statuses: dict[str, str]) -> None:
        self.statuses = statuses
        self.looks: list[list[str]] = []

    def look_at(self, principal, task_ids):
        self.looks.append(list(task_ids))
        return {task_id for task_id in task_ids if self.statuses.get(task_id) in ("working", "input_required")}


def test_task_ids_are_looked_up_once_and_only_live_tasks_are_kept_and_read_again():
    from types import SimpleNamespace

    from flask_mcp_gevent.stateless.listen import subscriptions_listen
    from flask_mcp_gevent.tasks.shapes import TASKS_EXTENSION

    registry, send = ListenRegistry(10, 10_000, 5), Send()
    runner = Runner({"live": "working", "asks": "input_required", "done": "completed"})
    ctx = context(registry, send, services=SimpleNamespace(listeners=registry, tasks=runner))
    ctx.session.client_capabilities = {"extensions": {TASKS_EXTENSION: {}}}
    running = gevent.spawn(subscriptions_listen, ctx, {"taskIds": ["unknown", "live", "done", "asks"]})
    try:
        gevent.sleep(0.01)
        assert send.sent[0]["params"]["notifications"] == {"taskIds": ["live", "asks"]}
        assert runner.looks == [["unknown", "live", "done", "asks"]]
        gevent.sleep(0.12)  # two keepalives: only the live tasks are read again
        assert runner.looks[1:3] == [["asks", "live"], ["asks", "live"]]
        del runner.statuses["live"]  # its TTL ran out
        runner.statuses["asks"] = "cancelled"
        gevent.sleep(0.12)
        looks = len(runner.looks)
        gevent.sleep(0.12)
        assert len(runner.looks) == looks  # neither is read again
    finally:
        running.kill()
    assert len(registry) == 0
