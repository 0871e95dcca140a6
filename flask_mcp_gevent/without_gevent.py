"""Serving without gevent: a server that is not gevent's (`flask run`, gunicorn's gthread or sync worker) runs each
request in a thread of its own, with the standard library unpatched.

Such a request is served whole in its thread, on that thread's gevent hub: its greenlets, its own SSE stream, and an
answer another thread sets on an AsyncResult all work. Nothing another request puts on one of its queues wakes it,
though, and nothing runs on its hub once it is over. So what waits for other requests' messages (the legacy SSE
stream and its POSTs, the Streamable HTTP GET stream, subscriptions/listen) and a question to the client that only
the GET stream could carry are refused at once, naming the gevent worker; a tool that may run as a task runs at
once instead, and one that runs only as a task is refused. ConnectionLimit asks its first request what serves
the app (server_without_gevent), marks the thread of each request there (SERVED) and, when the request is over,
destroys the store it made (end_request): a thread-per-connection server would otherwise keep a loop, and two file
descriptors, per connection.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import gevent.monkey
from gevent._hub_local import get_hub_if_exists

from flask_mcp_gevent.errors import SERVER_UNAVAILABLE, RpcError

__all__ = ["GEVENT_WORKER", "LEGACY_NEEDS_GEVENT", "ONE_THREAD", "SERVED", "STREAM_NEEDS_GEVENT", "THREADS", "ServedBy",
           "begin_request", "end_request", "patched_for_gevent", "question_refusal", "server_without_gevent",
           "task_needs_gevent"]

GEVENT_WORKER = "gunicorn's gevent worker: flask --app APP mcp serve, or gunicorn -k gevent"
STREAM_NEEDS_GEVENT = f"This request holds an event stream, which needs {GEVENT_WORKER}"
LEGACY_NEEDS_GEVENT = (f"A legacy SSE (2024-11-05) message is answered on its session's event stream, which needs "
                       f"{GEVENT_WORKER}; or use Streamable HTTP (POST initialize to /mcp)")

# What serves a request, when it is not gevent: a server with threads, or one with a single thread (where a stream
# would hold all of it).
THREADS = "threads"
ONE_THREAD = "one thread"


if TYPE_CHECKING:
    ThreadLocal = threading.local
else:
    # The thread's own local, even where gevent has patched threading.local into a greenlet's: only a server that is
    # not gevent's marks its threads, and a greenlet-local gave every greenlet that read it, each connection's among
    # them, a dict and two weakref callbacks for its whole life (0.4 KiB per idle stream).
    ThreadLocal = gevent.monkey.get_original("threading", "local")


class ServedBy(ThreadLocal):
    """The request this thread is on: without_gevent is THREADS or ONE_THREAD while a server that is not gevent's
    serves it, None otherwise. An attribute, so the requests gevent serves read it without a call."""

    without_gevent: str | None = None


SERVED = ServedBy()
_patched: bool | None = None


def patched_for_gevent() -> bool:
    """Whether the standard library's sockets are gevent's (gunicorn's gevent worker, app.py), read once."""
    # Read at the first request, not at import: gunicorn's --preload imports the app before its worker patches.
    global _patched
    if _patched is None:
        _patched = gevent.monkey.is_module_patched("socket")
    return _patched


def server_without_gevent(environ: Mapping[str, Any]) -> str | None:
    """THREADS or ONE_THREAD when a server that is not gevent's serves this request, else None.

    Every way of serving with gevent patched the sockets first (gunicorn's gevent worker, app.py). Unpatched, a
    server says wsgi.multithread when it has threads (flask run, gthread), and its name when it has one thread
    (gunicorn's sync worker, flask run --without-threads: there a stream would hold the whole server). Flask's
    test client says neither: the tests serve streams on its one thread, with nothing else waiting.
    """
    if patched_for_gevent():
        return None
    if environ.get("wsgi.multithread"):
        return THREADS
    return ONE_THREAD if "SERVER_SOFTWARE" in environ else None


def begin_request(server: str) -> None:
    """Mark this thread as serving a request on a server that is not gevent's (server: THREADS or ONE_THREAD)."""
    SERVED.without_gevent = server


def end_request() -> None:
    """The request is over: unmark the thread and destroy the gevent hub the request made, if any."""
    SERVED.without_gevent = None
    hub = get_hub_if_exists()
    if hub is not None:
        hub.destroy(destroy_loop=True)


def question_refusal(method: str, own_stream: bool) -> RpcError | None:
    """Why a request to the client (method) could never be answered here; None when it can.

    It goes out on the asking request's own stream, or else on the session's GET stream, refused here. Its answer
    comes in another POST: a threaded server takes that on another thread (an AsyncResult wakes the asker), a
    server with one thread cannot while the asker holds it.
    """
    kind = SERVED.without_gevent
    if kind is None or (kind == THREADS and own_stream):
        return None
    if kind == ONE_THREAD:
        why = ("its answer would come in another request, which this server cannot take while this one holds its "
               f"only thread: serve with a threaded server (flask run, gunicorn -k gthread) or {GEVENT_WORKER}")
    else:
        why = (f"from a request answered as JSON (a batch, or Accept without text/event-stream) it goes out on the "
               f"session's GET stream, which needs {GEVENT_WORKER}; or send the request alone with "
               "'Accept: application/json, text/event-stream' so that it gets a stream of its own")
    return RpcError(SERVER_UNAVAILABLE, f"Cannot send {method} to the client: {why}")


def task_needs_gevent(tool_name: str) -> RpcError:
    """The refusal of a tool that runs only as a task: a task runs on after its request, which needs gevent."""
    return RpcError(SERVER_UNAVAILABLE, f"Tool '{tool_name}' runs only as a task, which goes on after its request "
                    f"and so needs {GEVENT_WORKER}")
