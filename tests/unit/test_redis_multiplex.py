"""store/redis_multiplex.py on a real redis-server: all greenlets' commands on one connection, each reply to its
asker."""

from __future__ import annotations

import functools
import itertools
import time

import gevent
import gevent.event
import gevent.monkey
import pytest
import redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from flask_mcp_gevent.conditions import StoreUnavailable
from flask_mcp_gevent.store.redis_connection import CooperativeConnection
from flask_mcp_gevent.store.redis_keys import call_slots_key
from flask_mcp_gevent.store.redis_link import multiplexer_for
from flask_mcp_gevent.store.redis_multiplex import Multiplexer, pack
from tests.support.stores import new_session
from tests.support.waiting import wait_until

pytestmark = pytest.mark.redis

NAME = "mux-under-test"


@pytest.fixture
def muxes(redis_server):
    """Multiplexers made as the store makes its own: multiplexer_for over a BlockingConnectionPool of gevent sockets."""
    redis_server.client().flushdb()
    made: list[tuple[Multiplexer, redis.BlockingConnectionPool]] = []

    def make(timeout_s: float = 5.0) -> Multiplexer:
        pool = redis.BlockingConnectionPool.from_url(
            redis_server.url, connection_class=CooperativeConnection, client_name=NAME, protocol=2,
            socket_timeout=timeout_s, socket_connect_timeout=timeout_s, timeout=timeout_s, max_connections=8)
        mux = multiplexer_for(redis.Redis(connection_pool=pool))
        assert isinstance(mux, Multiplexer)
        made.append((mux, pool))
        return mux

    yield make
    for mux, pool in made:
        mux.close()
        pool.disconnect()


def cooperative_admin(server) -> redis.Redis:
    """A client on gevent sockets: while it waits for Redis, the multiplexer's greenlets keep running."""
    return redis.Redis(connection_pool=redis.ConnectionPool.from_url(
        server.url, connection_class=CooperativeConnection, socket_timeout=5, protocol=2))


def connections_named(server, name: str = NAME) -> list[int]:
    """The ids of the client connections Redis has with this name."""
    return [client["id"] for client in server.client().client_list() if client.get("name") == name]


def blocked_clients(server) -> int:
    """How many connections wait in a blocking command (BLPOP)."""
    return int(server.client().info("clients")["blocked_clients"])


def test_200_greenlets_get_their_own_replies_over_one_connection(muxes, redis_server):
    mux = muxes()

    def work(n: int) -> int:
        key, counter = f"key:{n}", f"counter:{n}"
        for round_ in range(5):
            value = f"{n}/{round_}".encode()
            assert mux.execute("SET", key, value) == b"OK"
            assert mux.execute("GET", key) == value
            gevent.sleep(0)
            assert mux.execute("INCRBY", counter, n + 1) == (round_ + 1) * (n + 1)
            assert [mux.execute("GET", key), mux.execute("GET", counter), mux.execute("STRLEN", key)] == [
                value, b"%d" % ((round_ + 1) * (n + 1)), len(value)]
        return n

    greenlets = [gevent.spawn(work, n) for n in range(200)]
    gevent.joinall(greenlets, timeout=30)
    failures = [greenlet.exception for greenlet in greenlets if not greenlet.successful()]
    assert not failures, failures[:3]
    assert [greenlet.value for greenlet in greenlets] == list(range(200))
    # 4000 commands from 200 greenlets, and Redis saw one client: none came from the pool.
    assert len(connections_named(redis_server)) == 1


def test_the_stores_per_call_commands_open_no_connection_of_their_own(redis_stores, redis_server):
    store = redis_stores()
    session = new_session(store)
    assert isinstance(store.link.multiplexer, Multiplexer)
    assert store.sessions.peek_session(session.id) is not None
    name = "mcp-" + store.link.worker_id
    before = connections_named(redis_server, name)

    def call(n: int) -> None:
        assert store.sessions.peek_session(session.id).id == session.id
        token = store.sessions.take_call_slot(session.id, 1000)
        assert token is not None
        store.sessions.give_back_call_slot(session.id, token)

    greenlets = [gevent.spawn(call, n) for n in range(100)]
    gevent.joinall(greenlets, raise_error=True, timeout=30)
    assert connections_named(redis_server, name) == before
    assert store.link.client.zcard(call_slots_key(session.id)) == 0


def recorded_writes(mux, monkeypatch) -> list[bytes]:
    """Every write the multiplexer's connected socket makes from now on, as the bytes written."""
    sock = mux._sock
    writes: list[bytes] = []
    original = type(sock).sendall

    def counted(self, data, *args):
        if self is sock:
            writes.append(bytes(data))
        return original(self, data, *args)

    monkeypatch.setattr(type(sock), "sendall", counted)
    return writes


def test_commands_queued_in_one_turn_of_the_loop_go_out_in_one_write(muxes, monkeypatch):
    mux = muxes()
    assert mux.execute("PING") == b"PONG"  # connected: the handshake's writes are redis-py's
    writes = recorded_writes(mux, monkeypatch)
    greenlets = [gevent.spawn(mux.execute, "INCR", "n") for _ in range(100)]
    gevent.joinall(greenlets, raise_error=True, timeout=10)
    assert sorted(greenlet.value for greenlet in greenlets) == list(range(1, 101))
    assert sum(map(len, writes)) == 100 * len(pack(("INCR", "n")))  # every command went through the counted writes
    assert len(writes) <= 3, writes  # 100 commands, one write (a few at most)


def test_an_error_reply_is_raised_to_its_own_greenlet_and_the_others_get_theirs(muxes, redis_server):
    mux = muxes()
    assert mux.execute("SET", "text", "not a number") == b"OK"

    def good(n: int) -> list:
        return [mux.execute("INCR", f"n:{n}"), mux.execute("GET", f"n:{n}")]

    def bad() -> None:
        mux.execute("INCR", "text")

    greenlets = [gevent.spawn(good, n) for n in range(20)] + [gevent.spawn(bad)] + \
                [gevent.spawn(good, n) for n in range(20, 40)]
    gevent.joinall(greenlets, timeout=10)
    failing = greenlets.pop(20)
    assert type(failing.exception) is ResponseError and "not an integer" in str(failing.exception)
    assert all(greenlet.successful() and greenlet.value == [1, b"1"] for greenlet in greenlets)
    assert mux.execute("PING") == b"PONG"
    assert len(connections_named(redis_server)) == 1  # no reconnection: an error reply is no failure


def test_a_script_redis_forgot_is_loaded_and_runs_exactly_once(muxes, redis_server):
    mux = muxes()
    client = redis_server.client()
    script = client.register_script("return redis.call('INCR', KEYS[1])")
    client.script_flush()
    # NOSCRIPT: the script did not run; loaded, it runs once.
    assert mux.run(script, ["runs"], []) == 1
    assert client.get("runs") == b"1"
    assert client.script_exists(script.sha) == [True]
    assert mux.run(script, ["runs"], []) == 2
    # Greenlets that all meet NOSCRIPT at once: each call still runs it once.
    client.script_flush()
    greenlets = [gevent.spawn(mux.run, script, ["many"], []) for _ in range(10)]
    gevent.joinall(greenlets, raise_error=True, timeout=10)
    assert sorted(greenlet.value for greenlet in greenlets) == list(range(1, 11))
    assert client.get("many") == b"10"


def test_a_script_error_other_than_noscript_is_raised(muxes, redis_server):
    mux = muxes()
    script = redis_server.client().register_script("return redis.error_reply('no way')")
    with pytest.raises(ResponseError, match="no way"):
        mux.run(script, [], [])
    assert mux.execute("PING") == b"PONG"


def test_a_connection_redis_kills_fails_what_waits_and_the_next_command_reconnects(muxes, redis_server):
    mux = muxes(timeout_s=5)
    assert mux.execute("PING") == b"PONG"
    (first,) = connections_named(redis_server)
    waiting = [gevent.spawn(mux.execute, "BLPOP", f"list:{n}", 4) for n in range(5)]
    wait_until(lambda: blocked_clients(redis_server) == 1, what="the first BLPOP blocking in Redis")
    started = time.monotonic()
    redis_server.client().client_kill_filter(_id=first)
    gevent.joinall(waiting, timeout=10)
    # Each waiting command fails as a connection failure, at once (not at the 5 s timeout).
    assert all(type(greenlet.exception) is RedisConnectionError for greenlet in waiting), \
        [greenlet.exception for greenlet in waiting]
    assert time.monotonic() - started < 2.0
    # The next command connects again; replies go to their own callers on the new connection.
    assert mux.execute("PING") == b"PONG"
    assert [mux.execute("RPUSH", "list:0", "a"), mux.execute("LPOP", "list:0")] == [1, b"a"]
    (second,) = connections_named(redis_server)
    assert second != first


def test_through_the_store_a_killed_connection_is_unavailable_and_the_next_command_works(redis_stores, redis_server):
    store = redis_stores(MCP_REDIS_TIMEOUT_S=5)
    session = new_session(store)
    assert store.sessions.peek_session(session.id) is not None
    port = store.link.multiplexer._sock.getsockname()[1]

    def waiting() -> None:
        with store.link.guard:
            store.link.execute("BLPOP", "nothing", 4)

    greenlet = gevent.spawn(waiting)
    wait_until(lambda: blocked_clients(redis_server) == 1, what="the BLPOP blocking in Redis")
    admin = redis_server.client()
    (mux_id,) = [client["id"] for client in admin.client_list() if client["addr"] == f"127.0.0.1:{port}"]
    admin.client_kill_filter(_id=mux_id)
    greenlet.join(3)
    assert type(greenlet.exception) is StoreUnavailable
    assert store.sessions.peek_session(session.id).id == session.id


def connection_blocked_in(admin: redis.Redis, command: str) -> str | None:
    """The id of the multiplexer's connection when Redis reports it blocked in this command (by name), else None."""
    for client in admin.client_list():
        if client.get("name") == NAME and "b" in client["flags"] and client["cmd"] == command:
            return client["id"]
    return None


def test_replies_never_reach_the_wrong_caller_while_redis_kills_the_connection_again_and_again(muxes, redis_server):
    mux = muxes(timeout_s=5)
    assert mux.execute("PING") == b"PONG"
    admin = cooperative_admin(redis_server)
    running = True
    misdelivered: list[tuple[bytes, object]] = []
    # Each caller's last ask, numbered in order with the held BRPOPs' from one sequence.
    sequence = itertools.count(1)
    asked_at = [0] * 21
    answered = [0] * 21
    failed = [0] * 21

    def caller(n: int) -> None:
        while running:
            token = f"{n}:{answered[n]}:{failed[n]}".encode()
            # Caller 0's BLPOP holds the connection in Redis a while: between kills, the others' commands pile up.
            commands = [("ECHO", token), ("BLPOP", "empty", "0.05")] if n == 0 else [("ECHO", token)]
            expected = [token, None, token + b"!"] if n == 0 else [token, token + b"!"]
            reply = []
            try:
                for command in [*commands, ("ECHO", token + b"!")]:
                    asked_at[n] = next(sequence)
                    reply.append(mux.execute(*command))
            except RedisConnectionError:
                failed[n] += 1
                continue
            if reply != expected:
                misdelivered.append((token, reply))
            answered[n] += 1

    callers = [gevent.spawn(caller, n) for n in range(21)]
    killed: set[str] = set()
    held_outcomes: list[object] = []
    held_at = [0]

    def hold() -> object:
        """BRPOP a list nobody pushes to, in the callers' numbering; its reply, or the connection error that cut it."""
        # Numbered right before it is queued (connected, nothing yields in between): later numbers queue behind it.
        held_at[0] = next(sequence)
        try:
            return mux.execute("BRPOP", "never-pushed", 4)
        except RedisConnectionError as cut_off:
            return cut_off

    def all_answered_since(before: list[int]) -> bool:
        """Whether every caller has had an answer since these counts."""
        return all(now > then for now, then in zip(answered, before, strict=True))

    rounds = 6
    try:
        for _ in range(rounds):
            # A BRPOP (not the callers' BLPOP) that blocks in Redis until the kill: every kill finds it on its way,
            # whatever the machine's speed.
            held = gevent.spawn(hold)
            connection = wait_until(lambda: connection_blocked_in(admin, "brpop"),
                                    what="the held BRPOP blocking the multiplexer's connection in Redis")
            # Those who asked before it are answered and ask again: then every caller's commands wait behind it.
            wait_until(lambda: min(asked_at) > held_at[0], what="every caller's commands queued behind the held BRPOP")
            answered_at_kill = list(answered)
            killed.add(connection)
            admin.client_kill_filter(_id=connection)
            held.join(5)
            held_outcomes.append(held.value if held.successful() else held.exception or "still waiting")
            # Every caller gets answers again on the next connection.
            wait_until(functools.partial(all_answered_since, answered_at_kill),
                       what="every caller answered after the kill")
    finally:
        running = False
        gevent.joinall(callers, timeout=10)
        admin.connection_pool.disconnect()
    assert all(greenlet.successful() for greenlet in callers), [greenlet.exception for greenlet in callers][:3]
    assert not misdelivered, misdelivered[:5]
    assert len(killed) == rounds  # it connected again after each kill
    # Each kill cut off the command it caught blocking, and every caller's commands queued behind it.
    assert all(type(failure) is RedisConnectionError for failure in held_outcomes), held_outcomes
    assert all(count >= rounds for count in failed), failed
    assert mux.execute("ECHO", "last") == b"last"


def test_a_stalled_redis_fails_waiting_commands_with_timeout_and_the_next_one_succeeds(muxes, redis_server):
    mux = muxes(timeout_s=0.3)
    assert mux.execute("PING") == b"PONG"
    redis_server.client().execute_command("CLIENT", "PAUSE", 1500, "ALL")
    paused_until = time.monotonic() + 1.5
    started = time.monotonic()
    waiting = [gevent.spawn(mux.execute, "INCR", "x") for _ in range(10)]
    gevent.joinall(waiting, timeout=10)
    elapsed = time.monotonic() - started
    assert all(type(greenlet.exception) is RedisTimeoutError for greenlet in waiting), \
        [greenlet.exception or greenlet.value for greenlet in waiting]
    assert elapsed < 1.4, elapsed  # the timeout (0.3 s) and the watchdog's interval, not the 1.5 s pause
    gevent.sleep(max(0.0, paused_until - time.monotonic()) + 0.2)
    assert mux.execute("PING") == b"PONG"
    assert len(connections_named(redis_server)) == 1


def test_redis_gone_is_unavailable_at_once_and_commands_succeed_when_it_returns(redis_stores, redis_server):
    store = redis_stores(MCP_REDIS_TIMEOUT_S=3)
    session = new_session(store)
    assert store.sessions.peek_session(session.id) is not None

    def blocked() -> None:
        with store.link.guard:
            store.link.execute("BLPOP", "nothing", 10)

    def peek() -> str:
        try:
            store.sessions.peek_session(session.id)
        except StoreUnavailable:
            return "unavailable"
        return "answered"

    waiting = [gevent.spawn(blocked) for _ in range(3)]
    wait_until(lambda: blocked_clients(redis_server) == 1, what="the first BLPOP blocking in Redis")
    redis_server.stop()
    try:
        started = time.monotonic()
        gevent.joinall(waiting, timeout=10)
        assert all(type(greenlet.exception) is StoreUnavailable for greenlet in waiting)
        later = [gevent.spawn(peek) for _ in range(10)]
        gevent.joinall(later, timeout=10)
        assert [greenlet.value for greenlet in later] == ["unavailable"] * 10
        assert time.monotonic() - started < 1.5  # refused, not waited out (the timeout is 3 s)
    finally:
        redis_server.start()
    assert store.sessions.peek_session(session.id) is None  # the restarted Redis kept nothing
    counted = [gevent.spawn(store.link.execute, "INCR", "back") for _ in range(10)]
    gevent.joinall(counted, raise_error=True, timeout=10)
    assert sorted(greenlet.value for greenlet in counted) == list(range(1, 11))


def test_close_fails_what_waits_and_a_later_command_connects_again(muxes, redis_server):
    mux = muxes(timeout_s=5)
    assert mux.execute("PING") == b"PONG"
    (first,) = connections_named(redis_server)
    waiting = gevent.spawn(mux.execute, "BLPOP", "never", 4)
    wait_until(lambda: blocked_clients(redis_server) == 1, what="the BLPOP blocking in Redis")
    started = time.monotonic()
    mux.close()
    waiting.join(3)
    assert type(waiting.exception) is RedisConnectionError
    assert time.monotonic() - started < 1.0
    assert mux.execute("PING") == b"PONG"
    assert wait_until(lambda: (ids := connections_named(redis_server)) and len(ids) == 1 and ids[0] != first,
                      what="only the new connection left")


def test_a_writer_killed_before_it_wrote_costs_no_other_greenlet_its_reply(muxes):
    mux = muxes(timeout_s=1.0)
    assert mux.execute("PING") == b"PONG"
    go = gevent.event.Event()

    def command(key: str) -> int:
        go.wait()
        return mux.execute("INCR", key)

    writer, other = gevent.spawn(command, "writer"), gevent.spawn(command, "other")
    gevent.sleep(0.01)  # both wait for go
    # Woken in this order: writer queues its INCR and yields once before writing (so that others join the
    # write); other queues its INCR behind it; then writer is cancelled (a tool call's cancellation, say).
    go.set()
    writer.kill(block=False)
    other.join(5)
    assert writer.dead
    assert other.successful(), other.exception  # fails: TimeoutError after timeout_s, and its INCR never ran
    assert other.value == 1


def test_a_writer_interrupted_mid_write_costs_no_other_greenlet_its_reply(muxes, redis_server, monkeypatch):
    mux = muxes(timeout_s=1.5)
    assert mux.execute("PING") == b"PONG"
    sock = mux._sock
    original = type(sock).sendall
    write = ["not started"]

    def watched(self, data, *args):
        if self is not sock:
            return original(self, data, *args)
        write[0] = "under way"
        try:
            original(self, data, *args)
        except BaseException:
            write[0] = "cut short"
            raise
        write[0] = "done"

    monkeypatch.setattr(type(sock), "sendall", watched)
    blocked: list[bool] = []
    redis_server.pause()  # Redis reads nothing: a big command fills the socket's buffers and its write blocks
    try:
        def big() -> None:
            try:
                with gevent.Timeout(0.3):
                    mux.execute("SET", "big", b"x" * (32 << 20))
            except gevent.Timeout:
                blocked.append(write[0] != "done")  # the command was not all written when its caller gave up
                raise

        writer = gevent.spawn(big)
        gevent.sleep(0.1)
        other = gevent.spawn(mux.execute, "INCR", "other")
        writer.join(5)
        assert isinstance(writer.exception, gevent.Timeout)
    finally:
        redis_server.resume()
    if blocked != [True]:
        pytest.skip("the socket's buffers took the whole command: nothing was left to interrupt")
    other.join(5)
    assert other.successful(), other.exception  # fails: TimeoutError (Redis waits for the rest of the SET)
    assert other.value == 1


# a call slot's release: free before the call's answer can be seen
def raw_reply(server, *command: str) -> bytes:
    """One command over a plain blocking socket: this greenlet never yields, so no other greenlet runs meanwhile."""
    blocking_socket = gevent.monkey.get_original("socket", "socket")
    with blocking_socket() as sock:
        sock.settimeout(5)
        sock.connect(("127.0.0.1", server.port))
        sock.sendall(pack(command))
        return sock.recv(1024)


def test_through_the_store_a_slot_is_free_before_the_call_s_answer_can_be_seen(redis_stores, redis_server):
    store = redis_stores()
    session = new_session(store)
    token = store.sessions.take_call_slot(session.id, 1)
    assert token and store.sessions.take_call_slot(session.id, 1) is None
    store.sessions.give_back_call_slot(session.id, token)
    # Without a yield in between, as when the HTTP answer is written right after: Redis has the release already.
    assert raw_reply(redis_server, "ZCARD", call_slots_key(session.id)) == b":0\r\n"
