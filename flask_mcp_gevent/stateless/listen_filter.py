"""The filter of a subscriptions/listen request (MCP 2026-07-28): what of it this server honours, and its bounds.

A listen stream keeps its request for as long as it stays open, so the request is bounded in bytes
(MCP_LISTEN_MAX_BYTES, its filter and `_meta` included), each URI and task id in bytes, and the task ids,
each read once in the store, in number. A request past a bound is refused with -32602 naming the setting.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.encoding import dumps, utf8_size
from flask_mcp_gevent.errors import INVALID_PARAMS, RpcError
from flask_mcp_gevent.tasks.shapes import missing_extension

__all__ = ["FLAGS", "RESOURCE_SUBSCRIPTIONS", "TASK_IDS", "ListenLimits", "check_request_bytes", "honoured_filter"]

# The filter's flags, each with the one notification it lets through.
FLAGS = {
    "toolsListChanged": "notifications/tools/list_changed",
    "promptsListChanged": "notifications/prompts/list_changed",
    "resourcesListChanged": "notifications/resources/list_changed",
}
RESOURCE_SUBSCRIPTIONS = "resourceSubscriptions"
# The tasks extension's filter member: notifications/tasks for these tasks (of the stream's own principal).
TASK_IDS = "taskIds"
# A filter naming more URIs than this is refused: each is checked against every update.
MAX_RESOURCE_SUBSCRIPTIONS = 1000


@dataclass(frozen=True)
class ListenLimits:
    """How large one listen request may be: its params as JSON, each URI, each task id, how many task ids."""

    max_bytes: int
    uri_max_bytes: int
    task_id_max_bytes: int
    max_task_ids: int

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> ListenLimits:
        """The limits the settings name (the defaults without settings)."""
        settings = Settings() if settings is None else settings
        return cls(settings.listen_max_bytes, settings.listen_uri_max_bytes, settings.listen_task_id_max_bytes,
                   settings.listen_max_task_ids)


def check_request_bytes(params: Any, limits: ListenLimits) -> None:
    """Refuse (-32602) a listen request whose params, as JSON, pass MCP_LISTEN_MAX_BYTES."""
    size = len(dumps(params))
    if size > limits.max_bytes:
        raise RpcError(INVALID_PARAMS, f"Invalid params: this subscriptions/listen request's params are {size} "
                       f"bytes of JSON; the limit is {limits.max_bytes} (MCP_LISTEN_MAX_BYTES), because a stream "
                       "keeps its request while it is open: name fewer resources or tasks, or open several streams")


def check_strings(member: str, values: object, what: str) -> list[str]:
    """The member's list of strings, or RpcError(-32602) when it is not one."""
    if not (isinstance(values, list) and all(isinstance(value, str) for value in values)):
        raise RpcError(INVALID_PARAMS, f"Invalid params: notifications.{member} must be a list of {what} strings")
    return values


def check_lengths(member: str, values: list[str], limit: int, setting: str) -> None:
    """Refuse (-32602) a member with a string longer than limit bytes, naming the setting."""
    for value in values:
        if utf8_size(value) > limit:
            raise RpcError(INVALID_PARAMS, f"Invalid params: an entry of notifications.{member} is longer than "
                           f"{limit} bytes ({setting})")


def honoured_uris(requested: object, may_read: Callable[[str], bool], limits: ListenLimits) -> list[str]:
    """The URIs of resourceSubscriptions the principal may read, in order, once each; -32602 past a bound."""
    uris = check_strings(RESOURCE_SUBSCRIPTIONS, requested, "URI")
    if len(uris) > MAX_RESOURCE_SUBSCRIPTIONS:
        raise RpcError(INVALID_PARAMS, f"Invalid params: notifications.{RESOURCE_SUBSCRIPTIONS} may name at most "
                       f"{MAX_RESOURCE_SUBSCRIPTIONS} URIs")
    check_lengths(RESOURCE_SUBSCRIPTIONS, uris, limits.uri_max_bytes, "MCP_LISTEN_URI_MAX_BYTES")
    return [uri for uri in dict.fromkeys(uris) if may_read(uri)]


def requested_task_ids(requested: object, tasks: bool, limits: ListenLimits) -> list[str]:
    """The distinct taskIds asked for, in order; -32602 past a bound, -32021 without the tasks extension."""
    task_ids = list(dict.fromkeys(check_strings(TASK_IDS, requested, "task id")))
    if len(task_ids) > limits.max_task_ids:
        raise RpcError(INVALID_PARAMS, f"Invalid params: notifications.{TASK_IDS} may name at most "
                       f"{limits.max_task_ids} tasks (MCP_LISTEN_MAX_TASK_IDS); open another stream for more")
    check_lengths(TASK_IDS, task_ids, limits.task_id_max_bytes, "MCP_LISTEN_TASK_ID_MAX_BYTES")
    if not tasks:
        raise missing_extension(f"notifications.{TASK_IDS}")
    # Each is looked up once when the stream opens (subscriptions.keep_known_tasks): unknown ids are dropped then.
    return task_ids


def honoured_filter(requested: object, may_read: Callable[[str], bool], tasks: bool = False,
                    limits: ListenLimits | None = None) -> dict[str, Any]:
    """Return the subset of a SubscriptionFilter this server honours; RpcError(-32602) for a malformed one.

    Flags set to true are kept; resourceSubscriptions keeps only the URIs the principal may read, in order;
    taskIds needs the tasks extension declared (tasks; else -32021). Members this server does not know are
    left out, which tells the client they are not served. Past a bound of limits: -32602 naming its setting.
    """
    limits = ListenLimits.from_settings() if limits is None else limits
    if requested is None:
        requested = {}
    if not isinstance(requested, dict):
        raise RpcError(INVALID_PARAMS, "Invalid params: notifications must be an object (a SubscriptionFilter)")
    honoured: dict[str, Any] = {}
    for flag in FLAGS:
        value = requested.get(flag)
        if value is not None and not isinstance(value, bool):
            raise RpcError(INVALID_PARAMS, f"Invalid params: notifications.{flag} must be a boolean")
        if value:
            honoured[flag] = True
    if requested.get(RESOURCE_SUBSCRIPTIONS) is not None:
        honoured[RESOURCE_SUBSCRIPTIONS] = honoured_uris(requested[RESOURCE_SUBSCRIPTIONS], may_read, limits)
    if requested.get(TASK_IDS) is not None:
        honoured[TASK_IDS] = requested_task_ids(requested[TASK_IDS], tasks, limits)
    return honoured
