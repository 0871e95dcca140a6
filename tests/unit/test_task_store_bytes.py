"""The in-memory task store's bound in bytes (MCP_TASKS_MAX_BYTES): every principal's tasks together, counted through
every change, and the memory with them."""

from __future__ import annotations

import tracemalloc

from flask_mcp_gevent.tasks.record import COMPLETED, WORKING, TaskRecord
from flask_mcp_gevent.tasks.store import RECORD_BYTES, MemoryTaskStore

HOUR_MS = 3_600_000
LAPSED = ("lease lapsed", '{"code": -32603, "message": "lease lapsed"}')


class Clock:
    """Milliseconds that move only when the test says so."""

    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        """The current time, in ms."""
        return self.now


def new_task(task_id: str, principal: str, request: str = '{"name": "slow"}', ttl_ms: int = HOUR_MS,
             now: int = 1_000_000) -> TaskRecord:
    """A working task held by w1 until an hour from now."""
    return TaskRecord(task_id=task_id, principal=principal, status=WORKING, created_ms=now, updated_ms=now,
                      ttl_ms=ttl_ms, request=request, lease_owner="w1", lease_until_ms=now + HOUR_MS)


def counted(store: MemoryTaskStore) -> int:
    """What the store's tasks take, counted afresh."""
    return sum(RECORD_BYTES + record.size() for record in store.tasks.values())


def test_the_kept_bytes_follow_every_change_and_expiry():
    clock = Clock()
    store = MemoryTaskStore(1 << 20, clock)
    store.create(new_task("t1", "alice"), limit=10)
    store.create(new_task("t2", "bob", ttl_ms=1000), limit=10)
    store.create(new_task("t3", "bob"), limit=10)
    now = clock.now
    steps = [
        lambda: store.park("alice", "t1", "w1", {"q": '{"method": "elicitation/create"}' * 50}, now),
        lambda: store.answer("alice", "t1", {"q": '{"action": "accept"}' * 200}, "w2", now + 1000, now),
        lambda: store.finish("alice", "t1", "w2", COMPLETED, now, result='{"content": []}' * 200, message="done"),
        lambda: store.cancel("bob", "t3", "by the client " * 20, now),
        lambda: store.get("bob", "t2", now + 2 * HOUR_MS, LAPSED),
    ]
    sizes = [store.held_bytes]
    for step in steps:
        step()
        assert store.held_bytes == counted(store)
        sizes.append(store.held_bytes)
    # Questions, answers (longer than the questions they replace) and a result each add to the count.
    assert sizes[1] > sizes[0] and sizes[2] > sizes[1] and sizes[3] > sizes[2]
    clock.now += 2000  # t2's TTL ends
    assert store.get("bob", "t2", clock.now, LAPSED) == (None, False)
    assert store.held_bytes == counted(store) == 2 * RECORD_BYTES + store.tasks[("alice", "t1")].size() + \
        store.tasks[("bob", "t3")].size()
    clock.now += HOUR_MS
    store.create(new_task("t4", "carol", now=clock.now), limit=10)  # drops every expired task on the way
    assert list(store.tasks) == [("carol", "t4")] and store.held_bytes == counted(store)


def test_a_create_past_the_bound_is_refused_whoever_makes_it_and_room_comes_back_with_expiry():
    clock = Clock()
    request = '{"note": "' + "n" * 3000 + '"}'
    store = MemoryTaskStore(3 * (RECORD_BYTES + new_task("t", "p", request).size()), clock)
    for number in range(3):
        assert store.create(new_task(f"t{number}", f"principal-{number}", request, ttl_ms=1000), limit=100)
    refused = new_task("t9", "principal-9", request)
    assert store.has_room(refused) is False
    assert store.create(refused, limit=100) is False
    clock.now += 1000
    assert store.create(refused, limit=100) is True and store.held_bytes == counted(store)


def test_the_store_stays_near_its_bound_in_memory_when_offered_far_more():
    max_bytes = 4 << 20
    store = MemoryTaskStore(max_bytes)
    kept = 0
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for number in range(1000):  # about 50 MB offered, by 100 principals
            # Every other request has one wide character, which makes Python keep each of its characters in 4 bytes.
            wide = "\U0001f600" if number % 2 else ""
            request = '{"note": "' + wide + "n" * (20_000 + number) + '"}'
            record = new_task(f"t{number}", f"principal-{number % 100}", request, now=store.now())
            kept += store.create(record, limit=100)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert 0 < kept < 1000
    assert store.held_bytes <= max_bytes
    assert grown < 1.25 * max_bytes, grown  # the requests, plus what the records and the dict cost around them
