"""The README's "Adding a tool" and docs/tools.md tell the truth: what to copy, what ctx has, what each file is."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from flask_mcp_gevent.protocol.request_context import RequestContext
from mcp_tools import Context, Registry

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
TOOLS_SECTION = README.split("<!-- section:tools -->", 1)[1].split("<!-- section:", 1)[0]
TOOLS_PAGE = (ROOT / "docs" / "tools.md").read_text()
# Every page that may say what ctx has: the README and the docs site.
DOCS = [README, *(page.read_text() for page in sorted((ROOT / "docs").glob("*.md")))]
TABLE_ROW = re.compile(r"^\| `([^`]+\.py)` \| ([a-z ]+) \|", re.MULTILINE)


def context_members() -> set[str]:
    """The attributes and methods the Context protocol declares."""
    methods = {name for name, value in vars(Context).items() if callable(value) and not name.startswith("_")}
    return set(Context.__annotations__) | methods


def test_context_declares_everything_the_docs_say_ctx_has():
    documented = {name for text in DOCS for name in re.findall(r"\bctx\.([a-z_]+)", text)}
    assert documented, "the docs document ctx"
    assert sorted(documented - context_members()) == []


def test_the_request_context_has_everything_context_declares():
    fields = {f.name for f in dataclasses.fields(RequestContext)}
    assert sorted(name for name in context_members() if name not in fields and not hasattr(RequestContext, name)) == []


@pytest.mark.parametrize("section", [TOOLS_SECTION, TOOLS_PAGE], ids=["README", "docs/tools.md"])
def test_the_file_to_copy_is_a_plain_tool_that_declares_no_output_schema(section):
    copied = re.search(r"Copy\s+`mcp_tools/([a-z_]+)\.py`", section)
    assert copied, "the section says which file to copy"
    module = f"mcp_tools.{copied.group(1)}"
    tools = [spec for spec in Registry.discover().tools.values() if spec.fn.__module__ == module]
    assert len(tools) == 1
    assert "output_schema" not in (ROOT / "mcp_tools" / f"{copied.group(1)}.py").read_text()
    # Its only outputSchema is the one its `-> str` gives: {"result": text}, what its results carry anyway.
    assert tools[0].output_schema == {"type": "object", "properties": {"result": {"type": "string"}},
                                      "required": ["result"]}
    assert not tools[0].wants_context


@pytest.mark.parametrize("section", [TOOLS_SECTION, TOOLS_PAGE], ids=["README", "docs/tools.md"])
def test_the_table_names_each_file_in_mcp_tools_once_with_its_kind(section):
    rows = TABLE_ROW.findall(section)
    files = sorted(path.name for path in (ROOT / "mcp_tools").glob("*.py"))
    assert sorted(name for name, _ in rows) == files
    kinds = {"tool", "resource", "resource template", "prompt", "framework"}
    assert {kind for _, kind in rows} <= kinds
