"""jsonrpc_dispatch: one classified message through jsonrpcserver's dispatch steps, as the server takes them."""

from __future__ import annotations

from jsonrpcserver import Success

from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.messages import parse_body
from flask_mcp_gevent.protocol.request_context import guarded
from flask_mcp_gevent.server import jsonrpc_dispatch

SEEN: list[dict] = []


@guarded
def echo_params(ctx, **params):
    """Answer with the params the handler received."""
    SEEN.append(params)
    return Success(params)


def strict(ctx, value):
    """An unguarded handler: jsonrpcserver binds its params and refuses what does not fit."""
    return Success({"value": value})


class RefusingTable(dict):
    """A method table whose lookup fails, as a broken library would."""

    def get(self, name, default=None):
        raise RuntimeError("lookup broke")

    def __getitem__(self, name):
        raise RuntimeError("lookup broke")


def message(body: dict):
    """The classified message for a request or notification body."""
    return parse_body(dumps(body)).messages[0]


def test_a_guarded_handler_gets_params_without_meta_and_answers_with_the_id():
    SEEN.clear()
    answer = jsonrpc_dispatch({"x": echo_params}, None, message(
        {"jsonrpc": "2.0", "id": 3, "method": "x", "params": {"a": 1, "_meta": {"progressToken": "p"}}}))
    assert answer == {"jsonrpc": "2.0", "id": 3, "result": {"a": 1}}
    assert SEEN == [{"a": 1}]


def test_a_notification_runs_and_gets_no_answer():
    SEEN.clear()
    assert jsonrpc_dispatch({"x": echo_params}, None, message({"jsonrpc": "2.0", "method": "x"})) is None
    assert SEEN == [{}]


def test_an_unknown_method_is_method_not_found_with_the_id():
    answer = jsonrpc_dispatch({}, None, message({"jsonrpc": "2.0", "id": "k", "method": "nope"}))
    assert answer["id"] == "k" and answer["error"]["code"] == -32601


def test_an_unguarded_handler_is_still_bound_by_jsonrpcserver():
    table = {"strict": strict}
    ok = jsonrpc_dispatch(table, None, message({"jsonrpc": "2.0", "id": 1, "method": "strict",
                                                "params": {"value": 2}}))
    assert ok["result"] == {"value": 2}
    refused = jsonrpc_dispatch(table, None, message({"jsonrpc": "2.0", "id": 2, "method": "strict",
                                                     "params": {"other": 2}}))
    assert refused["id"] == 2 and refused["error"]["code"] == -32602


def test_a_failure_of_the_library_is_a_server_error_that_names_nothing_inside():
    answer = jsonrpc_dispatch(RefusingTable(), None, message({"jsonrpc": "2.0", "id": 9, "method": "x"}))
    assert answer["id"] == 9 and answer["error"]["code"] == -32000
    assert "lookup broke" not in dumps(answer).decode()
