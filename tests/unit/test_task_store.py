"""The task store's contract, on both backends: MemoryTaskStore, and RedisTaskStore on a real redis-server.

Every step checks the state it starts from; a task is found only under its own principal; TTL and leases end;
changes started together never both win.
TTLs are made to end soon by back-dating a task's creation, so both stores see it on their own clocks.
"""

from __future__ import annotations

from dataclasses import replace

import gevent
import gevent.event
import pytest

from flask_mcp_gevent.conditions import StoreUnavailable
from flask_mcp_gevent.tasks.record import CANCELLED, COMPLETED, FAILED, INPUT_REQUIRED, WORKING, TaskRecord, now_ms

LAPSED = ("lease lapsed", '{"code": -32603, "message": "lease lapsed"}')
HOUR_MS = 3_600_000


def new_task(task_id: str = "t1", principal: str | None = "alice", ttl_ms: int = HOUR_MS, created_ms: int | None = None,
             owner: str = "w1", lease_ms: int = 60_000) -> TaskRecord:
    """A working task held by owner."""
    created = now_ms() if created_ms is None else created_ms
    return TaskRecord(task_id=task_id, principal=principal, status=WORKING, created_ms=created, updated_ms=created,
                      ttl_ms=ttl_ms, request='{"name": "slow"}', lease_owner=owner,
                      lease_until_ms=now_ms() + lease_ms)


def get(store, task_id: str = "t1", principal: str | None = "alice", now: int | None = None):
    """The task as a reader sees it now."""
    return store.get(principal, task_id, now_ms() if now is None else now, LAPSED)


def test_a_created_task_loads_with_its_fields(task_store):
    assert task_store.create(new_task(), limit=10) is True
    record, failed_now = get(task_store)
    assert (record.task_id, record.principal, record.status, record.request, record.lease_owner, failed_now) == (
        "t1", "alice", WORKING, '{"name": "slow"}', "w1", False)


def test_another_principal_and_an_unknown_id_find_nothing(task_store):
    task_store.create(new_task(), limit=10)
    assert get(task_store, principal="mallory") == (None, False)
    assert get(task_store, principal=None) == (None, False)
    assert get(task_store, task_id="t2") == (None, False)
    assert task_store.cancel("mallory", "t1", "no", now_ms()) is None
    assert get(task_store)[0].status == WORKING


def test_a_principal_holds_at_most_limit_tasks_and_expired_ones_do_not_count(task_store):
    assert task_store.create(new_task("old", created_ms=now_ms() - HOUR_MS - 1000), limit=2) is True
    assert task_store.create(new_task("a"), limit=2) is True
    assert task_store.create(new_task("b"), limit=2) is True
    assert task_store.create(new_task("c"), limit=2) is False
    assert task_store.create(new_task("c", principal="bob"), limit=2) is True
    assert get(task_store, "c") == (None, False)


def test_a_task_is_gone_after_its_ttl(task_store):
    # Two seconds of life left: enough for a loaded machine to read it back before it ends.
    task_store.create(new_task(ttl_ms=HOUR_MS, created_ms=now_ms() - HOUR_MS + 2000), limit=10)
    assert get(task_store)[0] is not None
    gevent.sleep(2.5)
    assert get(task_store) == (None, False)


def test_a_working_task_whose_lease_ran_out_is_failed_once(task_store):
    task_store.create(new_task(lease_ms=1000), limit=10)
    record, failed_now = get(task_store, now=now_ms() + 2000)
    assert (record.status, record.status_message, record.error, record.lease_owner, failed_now) == (
        FAILED, LAPSED[0], LAPSED[1], "", True)
    record, failed_now = get(task_store, now=now_ms() + 3000)
    assert (record.status, failed_now) == (FAILED, False)
    assert task_store.finish("alice", "t1", "w1", COMPLETED, now_ms(), result="{}") is False


def test_only_the_lease_holder_parks_renews_or_finishes_a_task(task_store):
    task_store.create(new_task(), limit=10)
    now = now_ms()
    assert task_store.renew("alice", "t1", "w2", now + 5000) is False
    assert task_store.park("alice", "t1", "w2", {"q": '{"method": "roots/list"}'}, now) is False
    assert task_store.finish("alice", "t1", "w2", COMPLETED, now, result="{}") is False
    assert task_store.renew("alice", "t1", "w1", now + 5000) is True
    assert get(task_store)[0].lease_until_ms == now + 5000
    assert task_store.finish("alice", "t1", "w1", COMPLETED, now, result='{"content": []}') is True
    record = get(task_store)[0]
    assert (record.status, record.result, record.lease_owner) == (COMPLETED, '{"content": []}', "")
    assert task_store.renew("alice", "t1", "w1", now + 5000) is False


def test_answers_resume_a_parked_task_only_when_none_is_left_open(task_store):
    task_store.create(new_task(), limit=10)
    now = now_ms()
    assert task_store.park("alice", "t1", "w1", {"a": '{"method": "x"}', "b": '{"method": "y"}'}, now) is True
    record = get(task_store)[0]
    assert (record.status, record.open_asks(), record.lease_owner) == (
        INPUT_REQUIRED, {"a": '{"method": "x"}', "b": '{"method": "y"}'}, "")
    assert task_store.answer("alice", "t1", {"a": '{"n": 1}', "never-asked": '{"n": 9}'}, "w2", now + 9000,
                             now) is False
    record = get(task_store)[0]
    assert (record.status, sorted(record.open_asks()), record.answers) == (INPUT_REQUIRED, ["b"], {"a": '{"n": 1}'})
    # An answer already given stands: the later one for the same key is ignored.
    assert task_store.answer("alice", "t1", {"a": '{"n": 2}', "b": '{"n": 3}'}, "w2", now + 9000, now) is True
    record = get(task_store)[0]
    assert (record.status, record.lease_owner, record.lease_until_ms, record.asks, record.answers) == (
        WORKING, "w2", now + 9000, {}, {"a": '{"n": 1}', "b": '{"n": 3}'})
    assert task_store.answer("alice", "t1", {"b": '{"n": 4}'}, "w3", now + 9000, now) is False
    assert get(task_store)[0].lease_owner == "w2"


def test_cancel_ends_a_task_not_yet_ended_and_leaves_an_ended_one(task_store):
    task_store.create(new_task("running"), limit=10)
    task_store.create(new_task("done"), limit=10)
    now = now_ms()
    task_store.finish("alice", "done", "w1", COMPLETED, now, result="{}")
    assert task_store.cancel("alice", "running", "by the client", now) is True
    assert task_store.cancel("alice", "running", "again", now) is False
    assert task_store.cancel("alice", "done", "too late", now) is False
    assert task_store.cancel("alice", "unknown", "?", now) is None
    cancelled, done = get(task_store, "running")[0], get(task_store, "done")[0]
    assert (cancelled.status, cancelled.status_message) == (CANCELLED, "by the client")
    assert done.status == COMPLETED
    assert task_store.finish("alice", "running", "w1", COMPLETED, now, result="{}") is False
    assert task_store.renew("alice", "running", "w1", now + 1000) is False


def test_anonymous_and_a_principal_named_like_the_anonymous_key_are_apart(task_store):
    task_store.create(new_task(principal=None), limit=10)
    assert get(task_store, principal=None)[0] is not None
    assert get(task_store, principal="-")[0] is None


def racing(store, monkeypatch, racers: int) -> None:
    """Hold the store's first reads until racers of them are done, so that the changes racing all read one version."""
    load = store.load
    loaded: list[object] = []
    all_loaded = gevent.event.Event()

    def load_together(principal, task_id):
        record = load(principal, task_id)
        if not all_loaded.is_set():
            loaded.append(record)
            if len(loaded) == racers:
                all_loaded.set()
            assert all_loaded.wait(timeout=5)
        return record

    monkeypatch.setattr(store, "load", load_together)


def test_two_finishers_of_one_task_never_both_win(task_store, monkeypatch):
    task_store.create(new_task(), limit=10)
    racing(task_store, monkeypatch, racers=3)
    now = now_ms()
    finishers = [gevent.spawn(task_store.finish, "alice", "t1", "w1", status, now, result=result)
                 for status, result in ((COMPLETED, '{"n": 1}'), (FAILED, ""), (COMPLETED, '{"n": 3}'))]
    gevent.joinall(finishers, raise_error=True)
    outcomes = [finisher.value for finisher in finishers]
    assert sorted(outcomes) == [False, False, True]
    record = get(task_store)[0]
    winner = outcomes.index(True)
    assert (record.status, record.result) == ((COMPLETED, '{"n": 1}'), (FAILED, ""), (COMPLETED, '{"n": 3}'))[winner]


def test_a_cancel_and_a_finish_of_one_task_never_both_win(task_store, monkeypatch):
    task_store.create(new_task(), limit=10)
    racing(task_store, monkeypatch, racers=2)
    now = now_ms()
    cancel = gevent.spawn(task_store.cancel, "alice", "t1", "by the client", now)
    finish = gevent.spawn(task_store.finish, "alice", "t1", "w1", COMPLETED, now, result="{}")
    gevent.joinall([cancel, finish], raise_error=True)
    assert sorted([cancel.value, finish.value]) == [False, True]
    assert get(task_store)[0].status == (CANCELLED if cancel.value else COMPLETED)


def test_two_workers_giving_the_last_answer_resume_the_task_once(task_store, monkeypatch):
    task_store.create(new_task(), limit=10)
    now = now_ms()
    task_store.park("alice", "t1", "w1", {"a": '{"method": "x"}'}, now)
    racing(task_store, monkeypatch, racers=2)
    answerers = [gevent.spawn(task_store.answer, "alice", "t1", {"a": f'{{"n": {n}}}'}, f"w{n}", now + 9000, now)
                 for n in (2, 3)]
    gevent.joinall(answerers, raise_error=True)
    outcomes = [answerer.value for answerer in answerers]
    assert sorted(outcomes) == [False, True]
    record = get(task_store)[0]
    winner = ("w2", "w3")[outcomes.index(True)]
    assert (record.status, record.lease_owner, record.answers) == (WORKING, winner, {"a": f'{{"n": {winner[1]}}}'})


def test_a_change_that_keeps_losing_its_race_gives_up_as_an_outage(task_store, monkeypatch):
    task_store.create(new_task(), limit=10)
    monkeypatch.setattr(task_store, "save", lambda record: False)
    with pytest.raises(StoreUnavailable):
        task_store.finish("alice", "t1", "w1", COMPLETED, now_ms(), result="{}")
    assert get(task_store)[0].status == WORKING


def test_texts_survive_the_store_exactly(task_store):
    texts = ['{"s": "\\u00e9\\ud83d\\ude00 é😀 \\" \\\\ \\n"}', "é😀\n\t\"\\\x00", ""]
    task_store.create(replace(new_task(), request=texts[0], answers={texts[1]: texts[0], "k": texts[2]}), limit=10)
    task_store.park("alice", "t1", "w1", {texts[0]: texts[1]}, now_ms())
    record = get(task_store)[0]
    assert (record.request, record.answers, record.asks) == (texts[0], {texts[1]: texts[0], "k": ""},
                                                              {texts[0]: texts[1]})
