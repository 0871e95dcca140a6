"""A resource template: files under MCP_FILES_ROOT, read by their file:// URI.

The URI is the file's real absolute path, e.g. file:///srv/mcp-files/notes.txt.
Anything that would leave the root is refused: `..` segments, absolute paths
elsewhere, and symlinks that point outside. With MCP_FILES_ROOT unset, no file
is served. A symlink inside the root is followed, and the principal needs
permission on its target's URI too (the `resolve` hook tells the server what it is).
"""

import errno
import mimetypes
import os
import stat
from pathlib import Path

import gevent

from mcp_tools import Completion, Context, ResourceNotFound, ToolError, resource_template

MAX_FILE_BYTES = 1024 * 1024
# Directory entries a completion reads between two yields to the other greenlets of the worker.
ENTRIES_PER_YIELD = 256
# What a name that no file can have gets from the operating system: the file is not there.
NOT_THERE = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.ENAMETOOLONG})


def confined_path(root: str, path: str) -> Path:
    """Resolve path and prove it lies inside root; raise ToolError when it would escape."""
    if not root:
        raise ResourceNotFound(path)
    if "\x00" in path:
        raise ToolError("Refused: a file path cannot contain a NUL byte")
    if ".." in path.split("/"):
        raise ToolError("Refused: '..' is not allowed in file URIs")
    real_root = Path(root).resolve()
    real = resolved(path)  # follows symlinks, so a link pointing outside is caught below
    if real_root not in real.parents:
        raise ToolError("Refused: the file is outside MCP_FILES_ROOT")
    return real


def resolved(path: str) -> Path:
    """The path with every symlink followed; ResourceNotFound for a symlink loop or a name too long to exist."""
    try:
        real = Path(path).resolve()
    except RuntimeError:
        raise ResourceNotFound(path) from None  # a symlink loop (Python before 3.13)
    try:
        # A resolved path holds no symlink, unless resolving gave up on a loop (Python 3.13 returns it as it was).
        looped = stat.S_ISLNK(real.lstat().st_mode)
    except FileNotFoundError:
        return real  # not there (yet): a subscription may wait for it to appear
    except OSError as failure:
        raise not_there(failure, path) from None
    if looped:
        raise ResourceNotFound(path)
    return real


def not_there(failure: OSError, path: str) -> OSError | ResourceNotFound:
    """ResourceNotFound for a name no file can have (too long, a link loop); other OS errors stay themselves."""
    return ResourceNotFound(path) if failure.errno in NOT_THERE else failure


def resolve_path(path: str, ctx) -> dict[str, str]:
    """The path a file URI really names, with symlinks followed."""
    return {"path": str(confined_path(ctx.settings.files_root, path))}


def start_of_walk(root: str, typed: str) -> tuple[str, str] | None:
    """The directory a typed path names and the start of the name typed in it; None when it names no place in root."""
    real_root = Path(root).resolve()
    if f"{real_root}/".startswith(typed):
        return str(real_root), ""  # nothing typed inside the root yet: every path in it starts with it
    if not typed.startswith(f"{real_root}/") or "\x00" in typed or ".." in typed.split("/"):
        return None
    directory, _, prefix = typed.rpartition("/")
    try:
        real = Path(directory).resolve()
    except (RuntimeError, OSError):
        return None
    return (directory, prefix) if real == real_root or real_root in real.parents else None


def suggest_paths(root: str, typed: str, max_entries: int) -> Completion:
    """Files under root whose paths start with what was typed, reading at most max_entries directory entries.

    Only the directory the typed path names is walked (and its subdirectories), so the
    work per call is bounded whatever the size of the root; has_more says the bound cut it short.
    """
    start = start_of_walk(root, typed) if root else None
    if start is None:
        return Completion([])
    real_root = Path(root).resolve()
    found: list[str] = []
    pending, examined = [start], 0
    while pending:
        directory, prefix = pending.pop()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    examined += 1
                    if examined > max_entries:
                        return Completion(sorted(found), has_more=True)
                    if examined % ENTRIES_PER_YIELD == 0:
                        gevent.sleep(0)  # a big directory must not hold up the worker's other requests
                    if not entry.name.startswith(prefix):
                        continue
                    path = f"{directory}/{entry.name}"
                    # Symlinked directories are not walked: a link loop never recurses, an outside tree is never listed.
                    if entry.is_dir(follow_symlinks=False):
                        pending.append((path, ""))
                    elif entry.is_file() and servable(real_root, entry):
                        found.append(path)
        except OSError:
            continue  # unreadable, or gone since it was listed: nothing to suggest from it
    return Completion(sorted(found))


def servable(real_root: Path, entry: os.DirEntry) -> bool:
    """Whether read_file would serve a file entry: a symlink to a file outside the root would be refused."""
    if not entry.is_symlink():
        return True
    try:
        return real_root in Path(entry.path).resolve().parents
    except (RuntimeError, OSError):
        return False


def complete_path(name: str, value: str, ctx) -> Completion:
    """Complete the path variable from MCP_FILES_ROOT, within MCP_COMPLETION_SCAN_MAX entries."""
    return suggest_paths(ctx.settings.files_root, value, ctx.settings.completion_scan_max)


@resource_template(
    "file://{+path}",
    name="files",
    description="A file under MCP_FILES_ROOT, by absolute path.",
    complete=complete_path,
    resolve=resolve_path,
)
def read_file(path: str, ctx: Context) -> dict:
    """Return a UTF-8 text file as text and anything else as a blob, with its MIME type."""
    real = confined_path(ctx.settings.files_root, path)
    try:
        if not real.is_file():
            raise ResourceNotFound(path)
        if real.stat().st_size > MAX_FILE_BYTES:
            raise ToolError(f"Refused: files over {MAX_FILE_BYTES} bytes are not served")
        data = real.read_bytes()
    except OSError as failure:
        raise not_there(failure, path) from None
    mime = mimetypes.guess_type(real.name)[0] or "application/octet-stream"
    try:
        return {"text": data.decode("utf-8"), "mimeType": mime if mime != "application/octet-stream" else "text/plain"}
    except UnicodeDecodeError:
        return {"blob": data, "mimeType": mime}
