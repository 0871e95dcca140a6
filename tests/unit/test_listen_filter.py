"""subscriptions/listen's filter bounds: the request's bytes, each URI's and task id's bytes, how many task ids."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.config import ConfigError, Settings
from flask_mcp_gevent.errors import INVALID_PARAMS, RpcError
from flask_mcp_gevent.stateless.listen_filter import ListenLimits, check_request_bytes, honoured_filter

LIMITS = ListenLimits(max_bytes=1000, uri_max_bytes=20, task_id_max_bytes=10, max_task_ids=3)


def everyone(uri: str) -> bool:
    """A principal that may read every resource."""
    return True


def refusal(requested: object) -> RpcError:
    """The RpcError honoured_filter raises for requested (with the tasks extension declared)."""
    with pytest.raises(RpcError) as raised:
        honoured_filter(requested, everyone, tasks=True, limits=LIMITS)
    return raised.value


def test_filters_within_every_bound_are_honoured():
    requested = {"resourceSubscriptions": ["u" * 20, "é" * 10], "taskIds": ["t" * 10, "a", "b", "a"]}
    assert honoured_filter(requested, everyone, tasks=True, limits=LIMITS) == requested | {"taskIds": ["t" * 10,
                                                                                                       "a", "b"]}


@pytest.mark.parametrize(("requested", "setting"), [
    ({"resourceSubscriptions": ["u" * 21]}, "MCP_LISTEN_URI_MAX_BYTES"),
    ({"resourceSubscriptions": ["é" * 11]}, "MCP_LISTEN_URI_MAX_BYTES"),  # 11 characters, 22 bytes
    ({"taskIds": ["t" * 11]}, "MCP_LISTEN_TASK_ID_MAX_BYTES"),
    ({"taskIds": ["a", "b", "c", "d"]}, "MCP_LISTEN_MAX_TASK_IDS"),
])
def test_a_filter_past_a_bound_is_invalid_params_naming_the_setting(requested, setting):
    refused = refusal(requested)
    assert refused.code == INVALID_PARAMS and setting in refused.message


def test_a_task_ids_bound_is_checked_before_the_extension():
    with pytest.raises(RpcError) as raised:
        honoured_filter({"taskIds": ["a", "b", "c", "d"]}, everyone, tasks=False, limits=LIMITS)
    assert raised.value.code == INVALID_PARAMS


def test_request_params_past_the_byte_bound_are_invalid_params_naming_the_setting():
    check_request_bytes({"notifications": {}, "junk": "x" * 900}, LIMITS)
    with pytest.raises(RpcError) as raised:
        check_request_bytes({"notifications": {}, "junk": "x" * 1000}, LIMITS)
    assert raised.value.code == INVALID_PARAMS and "MCP_LISTEN_MAX_BYTES" in raised.value.message


def test_limits_come_from_the_settings_and_must_be_positive():
    settings = Settings.from_mapping({"MCP_LISTEN_MAX_BYTES": "2048", "MCP_LISTEN_MAX_TASK_IDS": "5"})
    limits = ListenLimits.from_settings(settings)
    assert (limits.max_bytes, limits.max_task_ids) == (2048, 5)
    assert ListenLimits.from_settings() == ListenLimits.from_settings(Settings())
    with pytest.raises(ConfigError, match="MCP_LISTEN_URI_MAX_BYTES"):
        Settings.from_mapping({"MCP_LISTEN_URI_MAX_BYTES": "0"})
