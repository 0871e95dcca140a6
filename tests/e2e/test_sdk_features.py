"""The official SDK client against the real server, over legacy SSE and Streamable HTTP: tools and their extras.

Content, progress, logging and its level, cancellation, list_changed and tools/list pages,
each checked payload by payload so that an unknown-tool error can never pass for a result.
"""

from __future__ import annotations

import re
import uuid

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from tests.conformance.fixtures import RED_PIXEL_PNG, TINY_WAV
from tests.e2e.sdk_sessions import (
    PAGE_SIZE,
    ProgressLog,
    b64,
    dump,
    expected_registry,
    feature_env,
    list_every_page,
    session_to,
)
from tests.e2e.server_process import ServerProcess
from tests.support.waiting import wait_until_async

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.anyio,
    # The SDK marks logging/setLevel and resources/subscribe deprecated for 2026-07-28; they are 2025-11-25 features.
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]


@pytest.fixture(scope="module")
def feature_server():
    """A gunicorn with the conformance fixtures and the feature tools, two items per list page."""
    with ServerProcess(env=feature_env()) as process:
        yield process


# initialize
async def test_initialize_advertises_exactly_the_implemented_capabilities(feature_server, transport):
    async with session_to(feature_server, transport) as (session, _):
        result = session.initialize_result
    assert result.protocol_version == "2025-11-25"
    assert dump(result.capabilities) == {
        "tools": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "prompts": {"listChanged": True},
        "logging": {},
        "completions": {},
    }


# tool content
async def test_a_text_tool_returns_its_exact_text(feature_server, transport):
    async with session_to(feature_server, transport) as (session, _):
        result = await session.call_tool("test_simple_text", {})
    assert result.is_error is False
    assert dump(result.content) == [{"type": "text", "text": "This is a simple text response for testing."}]


async def test_a_failing_tool_returns_its_own_error_text_not_an_unknown_tool_error(feature_server, transport):
    async with session_to(feature_server, transport) as (session, _):
        result = await session.call_tool("test_error_handling", {})
        with pytest.raises(MCPError) as unknown:
            await session.call_tool("test_no_such_tool", {})
    assert result.is_error is True
    assert dump(result.content) == [{"type": "text", "text": "This tool intentionally returns an error for testing"}]
    # An unknown tool is a protocol error, which the SDK raises: it can never pass for the result above.
    assert unknown.value.error.code == -32602
    assert "test_no_such_tool" in unknown.value.error.message


async def test_an_image_tool_returns_the_exact_png(feature_server, transport):
    async with session_to(feature_server, transport) as (session, _):
        result = await session.call_tool("test_image_content", {})
    assert result.is_error is False
    assert dump(result.content) == [{"type": "image", "data": b64(RED_PIXEL_PNG), "mimeType": "image/png"}]


async def test_an_audio_tool_returns_the_exact_wav(feature_server, transport):
    async with session_to(feature_server, transport) as (session, _):
        result = await session.call_tool("test_audio_content", {})
    assert dump(result.content) == [{"type": "audio", "data": b64(TINY_WAV), "mimeType": "audio/wav"}]


async def test_a_tool_embeds_a_resource_and_mixes_content_types(feature_server, transport):
    async with session_to(feature_server, transport) as (session, _):
        embedded = await session.call_tool("test_embedded_resource", {})
        mixed = await session.call_tool("test_multiple_content_types", {})
    assert dump(embedded.content) == [{
        "type": "resource",
        "resource": {"uri": "test://embedded-resource", "mimeType": "text/plain",
                     "text": "This is an embedded resource content."},
    }]
    assert dump(mixed.content) == [
        {"type": "text", "text": "Multiple content types test:"},
        {"type": "image", "data": b64(RED_PIXEL_PNG), "mimeType": "image/png"},
        {"type": "resource", "resource": {"uri": "test://mixed-content-resource", "mimeType": "application/json",
                                          "text": '{"test":"data","value":123}'}},
    ]


async def test_a_tool_with_structured_output_returns_it(feature_server, transport):
    async with session_to(feature_server, transport) as (session, _):
        result = await session.call_tool("add", {"a": 2, "b": 40})
    assert result.is_error is False
    assert result.structured_content == {"result": 42}
    assert dump(result.content) == [{"type": "text", "text": "42"}]


# progress
async def test_progress_arrives_as_0_50_100_of_100(feature_server, transport):
    progress = ProgressLog()
    async with session_to(feature_server, transport) as (session, _):
        result = await session.call_tool("test_tool_with_progress", {}, progress_callback=progress)
        await wait_until_async(lambda: len(progress.updates) >= 3, "three progress notifications")
    assert dump(result.content) == [{"type": "text", "text": "Progress test completed."}]
    assert progress.updates == [(0, 100, None), (50, 100, None), (100, 100, None)]


async def test_count_down_reports_progress_with_messages_and_a_log_line_per_step(feature_server, transport):
    progress = ProgressLog()
    async with session_to(feature_server, transport) as (session, recorder):
        result = await session.call_tool("count_down", {"steps": 3}, progress_callback=progress)
        await wait_until_async(lambda: len(progress.updates) >= 3 and len(recorder.logs) >= 3, "progress and logs")
    assert dump(result.content) == [{"type": "text", "text": "Counted down from 3."}]
    assert progress.updates == [(1, 3, "2 to go"), (2, 3, "1 to go"), (3, 3, "0 to go")]
    assert recorder.logs == [
        {"level": "info", "logger": "count_down", "data": {"step": step, "of": 3}} for step in (1, 2, 3)
    ]


async def test_no_progress_is_sent_without_a_progress_token(feature_server, transport):
    async with session_to(feature_server, transport) as (session, recorder):
        await session.call_tool("test_tool_with_progress", {})
        # A log sent after the call is the sentinel: progress would have arrived before it.
        await session.call_tool("log_entries", {"entries": [{"level": "error", "data": "sentinel"}]})
        await wait_until_async(lambda: recorder.logs, "the sentinel log")
    assert "notifications/progress" not in recorder.methods()


# logging
async def test_tool_logs_arrive_in_order_with_level_logger_and_data(feature_server, transport):
    async with session_to(feature_server, transport) as (session, recorder):
        result = await session.call_tool("test_tool_with_logging", {})
        await wait_until_async(lambda: len(recorder.logs) >= 3, "three log messages")
    assert dump(result.content) == [{"type": "text", "text": "Logging test completed."}]
    assert recorder.logs == [
        {"level": "info", "logger": "conformance", "data": "Tool execution started"},
        {"level": "info", "logger": "conformance", "data": "Tool processing data"},
        {"level": "info", "logger": "conformance", "data": "Tool execution completed"},
    ]
    # The message handler sees the same notifications.
    assert [n["data"] for n in recorder.of("notifications/message")] == [log["data"] for log in recorder.logs]


async def test_set_level_filters_messages_below_it_and_debug_lets_everything_through(feature_server, transport):
    entries = [{"level": level, "data": f"at {level}"} for level in ("debug", "info", "warning", "emergency")]
    async with session_to(feature_server, transport) as (session, recorder):
        await session.set_logging_level("warning")
        await session.call_tool("log_entries", {"entries": entries})
        # emergency is the last entry: once it is in, anything that passed the filter is in.
        await wait_until_async(lambda: any(log["data"] == "at emergency" for log in recorder.logs), "the emergency log")
        filtered = list(recorder.logs)
        recorder.logs.clear()
        await session.set_logging_level("debug")
        await session.call_tool("log_entries", {"entries": entries})
        await wait_until_async(lambda: len(recorder.logs) >= 4, "all four logs")
    assert filtered == [
        {"level": "warning", "logger": "feature", "data": "at warning"},
        {"level": "emergency", "logger": "feature", "data": "at emergency"},
    ]
    assert recorder.logs == [{"level": e["level"], "logger": "feature", "data": e["data"]} for e in entries]


async def test_set_level_warning_then_an_info_only_tool_sends_nothing(feature_server, transport):
    async with session_to(feature_server, transport) as (session, recorder):
        await session.set_logging_level("warning")
        result = await session.call_tool("test_tool_with_logging", {})
        # Nothing passes the filter, so a later warning must be the first and only message.
        await session.call_tool("log_entries", {"entries": [{"level": "warning", "data": "sentinel"}]})
        await wait_until_async(lambda: recorder.logs, "the sentinel log")
    assert result.is_error is False
    assert recorder.logs == [{"level": "warning", "logger": "feature", "data": "sentinel"}]


# cancellation
async def call_state(session, key: str) -> dict:
    """What the server's wait_until_cancelled call under key is doing."""
    return (await session.call_tool("call_state", {"key": key})).structured_content


async def wait_for_state(session, key: str, state: str) -> dict:
    """Poll call_state until the call under key is in state; return its record."""
    with anyio.fail_after(15):
        while (record := await call_state(session, key)).get("state") != state:
            await anyio.sleep(0.02)
    return record


async def wait_for_log_line(server, pattern: str) -> None:
    """Wait until the server's log has a line matching pattern."""
    await wait_until_async(lambda: re.search(pattern, server.read_log()), f"a log line matching {pattern!r}")


async def test_cancelling_a_call_in_the_sdk_kills_it_on_the_server(feature_server, transport):
    key = f"sdk-cancel-{transport}-{uuid.uuid4().hex[:8]}"
    async with session_to(feature_server, transport) as (session, _):
        outcome: list[str] = []
        async with anyio.create_task_group() as group:
            scope = anyio.CancelScope()

            async def call() -> None:
                with scope:
                    await session.call_tool("wait_until_cancelled", {"key": key})
                    outcome.append("answered")

            group.start_soon(call)
            record = await wait_for_state(session, key, "running")
            # The SDK sends notifications/cancelled for a call whose task is cancelled.
            scope.cancel()
        record = await wait_for_state(session, key, "cancelled")
        assert outcome == []
        # The session keeps working after the cancellation.
        after = await session.call_tool("test_simple_text", {})
        assert after.content[0].text == "This is a simple text response for testing."
    await wait_for_log_line(
        feature_server,
        rf"rpc method=tools/call id={record['requestId']} session={record['session']} status=cancelled",
    )


async def test_a_cancel_notification_for_a_call_means_no_response_ever_comes(feature_server, transport):
    key = f"raw-cancel-{transport}-{uuid.uuid4().hex[:8]}"
    async with session_to(feature_server, transport) as (session, _):
        outcome: list[object] = []
        async with anyio.create_task_group() as group:

            async def call() -> None:
                try:
                    outcome.append(await session.call_tool("wait_until_cancelled", {"key": key}))
                except MCPError as error:
                    outcome.append(error)

            group.start_soon(call)
            record = await wait_for_state(session, key, "running")
            await session.send_notification(types.CancelledNotification(
                params=types.CancelledNotificationParams(request_id=record["requestId"], reason="test")))
            await wait_for_state(session, key, "cancelled")
            # A request sent after the cancel is answered; the cancelled one still is not.
            await session.send_ping()
            if transport == "sse":
                # Every answer shares the one stream, in order: the ping's came, so none is coming for the call.
                assert outcome == []
                group.cancel_scope.cancel()
            else:
                # The call's POST gets an event stream that ends without a JSON-RPC response (the spec's way to
                # answer a cancelled request on Streamable HTTP), which the SDK reports as an error.
                await wait_until_async(lambda: outcome, "the call's POST to end")
        if transport == "streamable":
            (error,) = outcome
            assert isinstance(error, MCPError)
            assert "without a response" in error.error.message
        after = await session.call_tool("test_simple_text", {})
        assert after.is_error is False
    await wait_for_log_line(
        feature_server,
        rf"rpc method=tools/call id={record['requestId']} session={record['session']} status=cancelled",
    )


async def test_cancelling_an_unknown_request_is_ignored(feature_server, transport):
    async with session_to(feature_server, transport) as (session, _):
        await session.send_notification(types.CancelledNotification(
            params=types.CancelledNotificationParams(request_id=987654, reason="never sent")))
        result = await session.call_tool("test_simple_text", {})
    assert result.is_error is False


# list_changed
async def test_adding_and_removing_a_tool_at_run_time_sends_tools_list_changed(feature_server, transport):
    name = f"rt-{transport}-{uuid.uuid4().hex[:8]}"
    async with session_to(feature_server, transport) as (session, recorder):
        try:
            await session.call_tool("change_registry", {"kind": "tool", "action": "add", "name": name})
            await wait_until_async(lambda: recorder.of("notifications/tools/list_changed"),
                                   "tools/list_changed after add")
            tools, _ = await list_every_page(session.list_tools, "tools")
            added = await session.call_tool(name, {})
        finally:
            # Leave the shared server's registry as it was, even when an assertion above fails.
            await session.call_tool("change_registry", {"kind": "tool", "action": "remove", "name": name})
        await wait_until_async(lambda: len(recorder.of("notifications/tools/list_changed")) >= 2,
                               "tools/list_changed after remove")
        tools_after, _ = await list_every_page(session.list_tools, "tools")
        with pytest.raises(MCPError) as gone:
            await session.call_tool(name, {})
    assert name in [tool.name for tool in tools]
    assert dump(added.content) == [{"type": "text", "text": f"{name} is here"}]
    assert name not in [tool.name for tool in tools_after]
    assert gone.value.error.code == -32602


@pytest.mark.parametrize(
    ("kind", "method", "lister", "key", "name_of", "expected"),
    [
        ("prompt", "notifications/prompts/list_changed", "list_prompts", "prompts", lambda p: p.name,
         "runtime_prompt"),
        ("resource", "notifications/resources/list_changed", "list_resources", "resources", lambda r: r.uri,
         "test://runtime-resource"),
    ],
)
async def test_adding_and_removing_prompts_and_resources_sends_their_list_changed(
    feature_server, transport, kind, method, lister, key, name_of, expected
):
    async with session_to(feature_server, transport) as (session, recorder):
        try:
            await session.call_tool("change_registry", {"kind": kind, "action": "add"})
            await wait_until_async(lambda: recorder.of(method), f"{method} after add")
            listed, _ = await list_every_page(getattr(session, lister), key)
        finally:
            removed = await session.call_tool("change_registry", {"kind": kind, "action": "remove"})
        await wait_until_async(lambda: len(recorder.of(method)) >= 2, f"{method} after remove")
        listed_after, _ = await list_every_page(getattr(session, lister), key)
    assert expected in [name_of(item) for item in listed]
    assert removed.content[0].text == f"removed {kind} {expected}: True"
    assert expected not in [name_of(item) for item in listed_after]
    assert recorder.of(method) == [{}, {}]


# pagination
async def test_tools_list_pages_return_every_tool_exactly_once_in_order(feature_server, transport):
    async with session_to(feature_server, transport) as (session, _):
        tools, cursors = await list_every_page(session.list_tools, "tools")
    names = [tool.name for tool in tools]
    assert names == list(expected_registry().tools)
    assert len(cursors) == (len(names) - 1) // PAGE_SIZE
    assert len(set(cursors)) == len(cursors)


@pytest.mark.parametrize("lister", ["list_tools", "list_resources", "list_resource_templates", "list_prompts"])
async def test_an_invalid_cursor_is_invalid_params_on_every_list_method(feature_server, transport, lister):
    async with session_to(feature_server, transport) as (session, _):
        with pytest.raises(MCPError) as failure:
            await getattr(session, lister)(params=types.PaginatedRequestParams(cursor="not-a-cursor"))
        await session.send_ping()
    assert failure.value.error.code == -32602
