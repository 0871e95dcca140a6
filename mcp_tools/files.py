"""A resource template: files under MCP_FILES_ROOT, read by their file:// URI.

The URI is the file's real absolute path, e.g. file:///srv/mcp-files/notes.txt.
Anything that would leave the root is refused: `..` segments, absolute paths
elsewhere, and symlinks that point outside. With MCP_FILES_ROOT unset, no file
is served.
"""

import mimetypes
from pathlib import Path

from mcp_tools import Context, ResourceNotFound, ToolError, resource_template

MAX_FILE_BYTES = 1024 * 1024
MAX_SUGGESTIONS = 200


def confined_path(root: str, path: str) -> Path:
    """Resolve path and prove it lies inside root; raise ToolError when it would escape."""
    if not root:
        raise ResourceNotFound(path)
    if ".." in path.split("/"):
        raise ToolError("Refused: '..' is not allowed in file URIs")
    real_root = Path(root).resolve()
    real = Path(path).resolve()  # follows symlinks, so a link pointing outside is caught below
    if real_root not in real.parents:
        raise ToolError("Refused: the file is outside MCP_FILES_ROOT")
    return real


def suggest_paths(root: str, typed: str) -> list[str]:
    """Absolute paths of files under root that start with what the user typed."""
    if not root:
        return []
    real_root = Path(root).resolve()
    found = []
    for candidate in sorted(real_root.rglob("*")):
        if len(found) >= MAX_SUGGESTIONS:
            break
        # Only what read_file would serve: a symlink to a file outside the root is not suggested.
        if candidate.is_file() and str(candidate).startswith(typed) and real_root in candidate.resolve().parents:
            found.append(str(candidate))
    return found


@resource_template(
    "file://{+path}",
    name="files",
    description="A file under MCP_FILES_ROOT, by absolute path.",
    complete=lambda name, value, ctx: suggest_paths(ctx.settings.files_root, value),
)
def read_file(path: str, ctx: Context) -> dict:
    """Return a UTF-8 text file as text and anything else as a blob, with its MIME type."""
    real = confined_path(ctx.settings.files_root, path)
    if not real.is_file():
        raise ResourceNotFound(path)
    if real.stat().st_size > MAX_FILE_BYTES:
        raise ToolError(f"Refused: files over {MAX_FILE_BYTES} bytes are not served")
    mime = mimetypes.guess_type(real.name)[0] or "application/octet-stream"
    data = real.read_bytes()
    try:
        return {"text": data.decode("utf-8"), "mimeType": mime if mime != "application/octet-stream" else "text/plain"}
    except UnicodeDecodeError:
        return {"blob": data, "mimeType": mime}
