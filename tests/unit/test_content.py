"""mcp_tools content helpers: the blocks a tool may return, in MCP's wire shape."""

from __future__ import annotations

from mcp_tools import ToolResult, audio, embedded_resource, image, resource_link, text


def test_text_block():
    assert text("hi") == {"type": "text", "text": "hi"}


def test_image_and_audio_are_base64_with_a_mime_type():
    assert image(b"\x00\x01", "image/png") == {"type": "image", "data": "AAE=", "mimeType": "image/png"}
    assert audio(b"abc", "audio/wav") == {"type": "audio", "data": "YWJj", "mimeType": "audio/wav"}


def test_embedded_resource_as_text_or_blob():
    assert embedded_resource("file:///a.txt", "body", mime_type="text/plain") == {
        "type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "body"}}
    assert embedded_resource("file:///a.bin", blob=b"\xff")["resource"] == {"uri": "file:///a.bin", "blob": "/w=="}


def test_resource_link_carries_only_what_is_given():
    assert resource_link("file:///a", "a") == {"type": "resource_link", "uri": "file:///a", "name": "a"}
    assert resource_link("file:///a", "a", description="d", mime_type="text/plain")["mimeType"] == "text/plain"


def test_tool_result_defaults_to_a_successful_empty_result():
    result = ToolResult()
    assert (result.content, result.structured, result.is_error) == ([], None, False)
