"""The file:// resource template (mcp_tools/files.py): files inside MCP_FILES_ROOT only, every escape refused."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.protocol.resources import match_template
from mcp_tools import ResourceNotFound, ToolError
from mcp_tools.files import MAX_FILE_BYTES, read_file, resolve_path


@pytest.fixture
def tree(tmp_path):
    """A files root with text, JSON, binary and nested files, and an outside directory next to it."""
    root = tmp_path / "files"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("outside the root")
    (root / "notes.txt").write_text("hello\n")
    (root / "data.json").write_text('{"a": 1}')
    (root / "image.bin").write_bytes(b"\x00\xff\xfe")
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text("# Guide")
    return SimpleNamespace(root=root.resolve(), outside=outside.resolve(), base=tmp_path.resolve())


def ctx_for(root) -> SimpleNamespace:
    """A request context whose settings name root as MCP_FILES_ROOT (None: unset)."""
    environ = {} if root is None else {"MCP_FILES_ROOT": str(root)}
    return SimpleNamespace(settings=Settings.from_environ(environ))


def read(root, path):
    """Read path through the template's reader with root as MCP_FILES_ROOT."""
    return read_file(path=str(path), ctx=ctx_for(root))


# inside the root
def test_a_text_file_inside_the_root_is_read_as_text(tree):
    assert read(tree.root, tree.root / "notes.txt") == {"text": "hello\n", "mimeType": "text/plain"}


def test_a_text_file_keeps_its_guessed_mime_type(tree):
    assert read(tree.root, tree.root / "data.json") == {"text": '{"a": 1}', "mimeType": "application/json"}


def test_a_binary_file_is_read_as_a_blob(tree):
    assert read(tree.root, tree.root / "image.bin") == {"blob": b"\x00\xff\xfe",
                                                        "mimeType": "application/octet-stream"}


def test_a_nested_file_and_a_dot_segment_are_fine(tree):
    assert read(tree.root, tree.root / "docs" / "guide.md")["text"] == "# Guide"
    assert read(tree.root, f"{tree.root}/./notes.txt")["text"] == "hello\n"


def test_a_symlink_that_stays_inside_the_root_is_followed(tree):
    (tree.root / "latest.txt").symlink_to(tree.root / "notes.txt")
    assert read(tree.root, tree.root / "latest.txt")["text"] == "hello\n"


def test_the_root_may_be_given_through_a_symlink_or_with_a_trailing_slash(tree):
    alias = tree.base / "alias"
    alias.symlink_to(tree.root)
    assert read(alias, alias / "notes.txt")["text"] == "hello\n"
    assert read(f"{tree.root}/", tree.root / "notes.txt")["text"] == "hello\n"


# escapes
@pytest.mark.parametrize(
    "path",
    ["{root}/../outside/secret.txt", "{root}/docs/../../outside/secret.txt", "{root}/docs/../notes.txt", "{root}/.."],
    ids=["up-and-out", "nested-up-and-out", "up-but-inside", "root-parent"],
)
def test_dot_dot_segments_are_refused_even_when_they_would_land_inside(tree, path):
    with pytest.raises(ToolError, match=r"'\.\.' is not allowed"):
        read(tree.root, path.format(root=tree.root))


@pytest.mark.parametrize("path", ["/etc/passwd", "{outside}/secret.txt", "{base}/files-evil/x.txt", "{root}",
                                  "relative/notes.txt"],
                         ids=["etc-passwd", "outside-dir", "prefix-sibling", "the-root-itself", "relative"])
def test_absolute_paths_elsewhere_are_refused(tree, path):
    sibling = tree.base / "files-evil"
    sibling.mkdir()
    (sibling / "x.txt").write_text("sibling")
    with pytest.raises(ToolError, match="outside MCP_FILES_ROOT"):
        read(tree.root, path.format(root=tree.root, outside=tree.outside, base=tree.base))


def test_a_symlink_pointing_outside_is_refused(tree):
    (tree.root / "escape.txt").symlink_to(tree.outside / "secret.txt")
    with pytest.raises(ToolError, match="outside MCP_FILES_ROOT") as refusal:
        read(tree.root, tree.root / "escape.txt")
    assert "outside the root" not in str(refusal.value)
    assert str(tree.outside) not in str(refusal.value)


def test_a_symlinked_directory_pointing_outside_is_refused(tree):
    (tree.root / "linked").symlink_to(tree.outside)
    with pytest.raises(ToolError, match="outside MCP_FILES_ROOT"):
        read(tree.root, tree.root / "linked" / "secret.txt")


def test_percent_encoded_dot_dot_in_the_uri_is_refused_after_decoding(tree):
    variables = match_template("file://{+path}", f"file://{tree.root}/%2e%2e/outside/secret.txt")
    with pytest.raises(ToolError, match=r"'\.\.' is not allowed"):
        read(tree.root, variables["path"])


# not found
def test_with_mcp_files_root_unset_no_file_is_found(tree):
    with pytest.raises(ResourceNotFound):
        read(None, tree.root / "notes.txt")
    with pytest.raises(ResourceNotFound):
        read(None, "/etc/passwd")


@pytest.mark.parametrize("name", ["missing.txt", "docs"], ids=["missing-file", "directory"])
def test_a_missing_file_or_a_directory_inside_the_root_is_not_found(tree, name):
    with pytest.raises(ResourceNotFound):
        read(tree.root, tree.root / name)


def test_a_file_over_the_size_limit_is_refused(tree):
    (tree.root / "big.txt").write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    with pytest.raises(ToolError, match="over"):
        read(tree.root, tree.root / "big.txt")
    (tree.root / "limit.txt").write_bytes(b"x" * MAX_FILE_BYTES)
    assert len(read(tree.root, tree.root / "limit.txt")["text"]) == MAX_FILE_BYTES


# names no file can have
def test_a_nul_byte_in_the_path_is_refused_as_malformed(tree):
    with pytest.raises(ToolError, match="NUL byte"):
        read(tree.root, f"{tree.root}/notes\x00.txt")


def test_a_symlink_loop_is_not_found(tree):
    (tree.root / "loop-a").symlink_to(tree.root / "loop-b")
    (tree.root / "loop-b").symlink_to(tree.root / "loop-a")
    with pytest.raises(ResourceNotFound):
        read(tree.root, tree.root / "loop-a")


# A name longer than NAME_MAX (255), and a path longer than PATH_MAX (4096) made of short names.
@pytest.mark.parametrize("path", ["{root}/" + "x" * 300, "{root}/" + ("d" * 200 + "/") * 25 + "e"],
                         ids=["long-name", "long-path"])
def test_an_over_long_path_is_not_found(tree, path):
    with pytest.raises(ResourceNotFound):
        read(tree.root, path.format(root=tree.root))


# resolving: what a URI really names
def test_resolving_follows_a_symlink_to_its_target_inside_the_root(tree):
    (tree.root / "latest.txt").symlink_to(tree.root / "docs" / "guide.md")
    ctx = ctx_for(tree.root)
    assert resolve_path(str(tree.root / "latest.txt"), ctx) == {"path": str(tree.root / "docs" / "guide.md")}
    assert resolve_path(str(tree.root / "notes.txt"), ctx) == {"path": str(tree.root / "notes.txt")}


def test_resolving_refuses_what_reading_refuses(tree):
    (tree.root / "escape.txt").symlink_to(tree.outside / "secret.txt")
    with pytest.raises(ToolError, match="outside MCP_FILES_ROOT"):
        resolve_path(str(tree.root / "escape.txt"), ctx_for(tree.root))
    with pytest.raises(ToolError, match="NUL byte"):
        resolve_path(f"{tree.root}/a\x00", ctx_for(tree.root))
