"""The pages name only code that exists: every file, module, class, function, constant and MCP_* setting they cite.

Read: README.md, SECURITY.md, docs/*.md, examples/README.md and the comments of requirements*.txt and pyproject.toml.
Not read: bench/RESULTS*.md, dated records of runs that name the code as it was on their day (history, not a guide).
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import fnmatch
import functools
import keyword
import os
import re
from collections.abc import Iterator
from pathlib import Path

from flask_mcp_gevent.config import DEPRECATED_NAMES, PREFIX, Settings

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "flask_mcp_gevent"
FLASK_PREFIX = "FLASK_"
TESTS = "tests/"

# Directories that hold no code of the project and are never walked, besides hidden ones (.git, .venv): caches,
# mkdocs' site, build output, Flask's instance folder.
UNWALKED = {"__pycache__", "node_modules", "site", "build", "instance"}

# MCP_* names a page may use that are not Settings fields, each with the file that reads it (checked below).
NON_SETTING_VARIABLES = {
    "MCP_CONSOLE_SCREENSHOT": "tests/e2e/console/test_console_browser.py",  # refreshes docs/console.png
    "MCP_TOKEN": "flask_mcp_gevent/web/console_static/curl.js",  # the shell variable copied curl commands expand
}
# MCP_* names a page invents to show Settings.extra: a tool's own setting, read by the example on the page.
EXAMPLE_EXTRA_SETTINGS = {"MCP_MULTIPLY_DIGITS"}

# Code-like names in backticks that belong to others, kept explicit: a name of this project is never listed here.
FOREIGN_NAMES = {
    # Python and its standard library (typing, enum, uuid, warnings).
    "Any", "Enum", "Literal", "NotRequired", "Optional", "TypedDict", "ValueError", "DeprecationWarning",
    # Flask's extensions: Flask-Limiter's Limiter and its switch, Flask-WTF's CSRFProtect.
    "Limiter", "RATELIMIT_ENABLED", "CSRFProtect",
    # The WSGI environ and prometheus-client's multiprocess directory.
    "REMOTE_ADDR", "PROMETHEUS_MULTIPROC_DIR",
    # jsonrpcserver's result values.
    "Success", "Error",
    # The MCP SDKs: Python's Client, ClientSession, MCPServer, ServerRunner and Connection; TypeScript's
    # SSEClientTransport.
    "Client", "ClientSession", "MCPServer", "ServerRunner", "Connection", "SSEClientTransport",
    # oslash, which jsonrpcserver's results are made of.
    "Left",
    # Result and type names of the MCP specification's schema and its tasks extension.
    "CallToolResult", "CreateTaskResult", "DiscoverResult", "SubscriptionsListenResult",
    # HTTP header names.
    "Host", "Origin", "Accept", "Allow", "Authorization", "Cookie",
    # systemd unit directives (deploy/systemd/mcp-server.service).
    "NoNewPrivileges", "PrivateDevices", "PrivateTmp", "ProtectHome", "RestrictAddressFamilies", "TimeoutStopSec",
    # PromQL, in the metrics page's queries.
    "histogram_quantile",
}
# Paths a page names that are not in the repository on purpose.
FOREIGN_PATHS = {
    "site/",  # mkdocs build's output
    "mcp_tools/multiply.py",  # the tool the tutorial has you write
    "tests/protocol/test_multiply.py",  # and its test
}

# The objects pages reach through a variable, and the classes whose members they are.
# Objects of Flask's and its extensions' that the pages use by their usual names (request.args, g.user, db.session):
# their members are not ours to judge, even where a module of the package has the same name (tasks/request.py).
FOREIGN_OBJECTS = frozenset({"request", "g", "current_app", "app", "db"})
OBJECT_VARIABLES = {
    "ctx": ("Context", "RequestContext"),
    "ctx.registry": ("Registry",),
    "ctx.settings": ("Settings",),
    "mcp": ("MCP",),
}

CHECKED_EXTENSIONS = "py|js|css|html|md|json|txt|toml|sh|conf|service|env|yml|png"
# Code files are ours wherever they sit; other files only under one of the repository's own directories.
CODE_EXTENSIONS = {".py", ".js", ".css", ".html"}
FILE_PATH = re.compile(rf"(?<![\w/.:~$@-])((?:[\w-][\w.-]*/)+[\w*-][\w.*-]*\.(?:{CHECKED_EXTENSIONS}))\b(?![\w/-])")
BARE_FILE = re.compile(r"(?<![\w/.:~$@*-])([\w-][\w.-]*\.(?:py|js|md|txt|toml|sh))\b(?![\w/.-])")
FILE_NAME = re.compile(rf"^[\w./*-]+\.(?:{CHECKED_EXTENSIONS})$")
DIRECTORY = re.compile(r"^[\w-][\w.-]*/(?:[\w.-]+/)*$")
FENCED_DIRECTORY = re.compile(r"(?<![\w/.:~$@-])([\w-][\w.-]*/(?:[\w.-]+/)*)(?=[\s,;)]|$)")
SETTING = re.compile(r"\b(MCP_[A-Z0-9_]+)(?![\w<])(\*?)")
PACKAGE_PATH = re.compile(rf"(?<![\w/.])((?:{PACKAGE}|mcp_tools)(?:\.\w+)+)")
IMPORT = re.compile(rf"\bfrom\s+((?:{PACKAGE}|mcp_tools)(?:\.\w+)*)\s+import\s+(\([^)]*\)|[^\n`#]+)")
BACKTICKED = re.compile(r"`([^`\n]+)`")
CALL_OR_NAME = re.compile(r"^@?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(\(.*\))?$")
VARIABLE_CHAIN = re.compile(r"(?<![\w./:-])((?:ctx|mcp)(?:\.[A-Za-z_]\w*)+)")
CAMEL_CASE = re.compile(r"^[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*$")
CONSTANT = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
TEST_DEFINITION = re.compile(r"^\s*(?:(?:async\s+)?def|class)\s+(\w+)|^(\w+)\s*(?::[^=\n]*)?=", re.M)
JSON_FIELD = re.compile(r"^[a-z]+[A-Z]")  # camelCase: the protocol's field names, never a Python name here
FENCED_CLASS = re.compile(r"(?<![\w.])([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+)(?![\w-])")
FENCED_CONSTANT = re.compile(r"(?<![\w.])([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?![\w*-])")


@dataclasses.dataclass(frozen=True)
class Line:
    """One line of a page: where it is, its text, and the language of the fenced block it is in."""

    page: str
    number: int
    text: str
    fence: str | None  # None outside fenced blocks, "" in an untagged one


@dataclasses.dataclass
class CodeIndex:
    """What the project's Python defines: by module, by class, in all, and the strings it says (tests: names only)."""

    module_names: dict[str, set[str]]  # dotted module -> every name bound in it, at any depth
    modules_by_basename: dict[str, list[str]]  # "pipeline" -> ["flask_mcp_gevent.web.pipeline"]
    class_members: dict[str, set[str]]  # class name -> members (its own, self.x, and its bases' in the project)
    defined: set[str]  # every class, function and assigned name, anywhere
    strings: set[str]  # every string literal (logger names, config keys)


def pages() -> list[Path]:
    """The Markdown pages that describe the code as it is."""
    return [ROOT / "README.md", ROOT / "SECURITY.md", ROOT / "examples" / "README.md",
            *sorted((ROOT / "docs").glob("*.md"))]


def comment_files() -> list[Path]:
    """The files whose comments say which module needs a dependency."""
    return [*sorted(ROOT.glob("requirements*.txt")), ROOT / "pyproject.toml"]


def lines_of(path: Path) -> Iterator[Line]:
    """A page's lines, each with the fenced block it sits in; for a comment file, its comments only."""
    name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    if path.suffix != ".md":
        for number, text in enumerate(path.read_text().splitlines(), 1):
            if "#" in text:
                yield Line(name, number, text.split("#", 1)[1], None)
        return
    fence: str | None = None
    for number, text in enumerate(path.read_text().splitlines(), 1):
        opening = re.match(r"\s*```(\w*)", text)
        if opening:
            fence = opening.group(1) if fence is None else None
            continue
        yield Line(name, number, text, fence)


@functools.cache
def repository() -> tuple[frozenset[str], frozenset[str]]:
    """Every file and directory of the repository, as paths from its root (caches and build output left out)."""
    files, directories = set(), set()
    for folder, subfolders, names in os.walk(ROOT):
        subfolders[:] = [s for s in subfolders if not s.startswith(".") and s not in UNWALKED]
        relative = Path(folder).relative_to(ROOT).as_posix()
        prefix = "" if relative == "." else relative + "/"
        directories.update(prefix + s + "/" for s in subfolders)
        files.update(prefix + n for n in names)
    return frozenset(files), frozenset(directories)


def module_name(path: Path) -> str:
    """A Python file's dotted module name, from the repository root."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def bound_names(tree: ast.AST) -> Iterator[str]:
    """Every name a module binds anywhere: classes, functions, assignments, self attributes, imports."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            yield node.name
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            yield node.id
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            yield node.attr
        elif isinstance(node, ast.alias):
            yield (node.asname or node.name).split(".")[0]


def own_members(node: ast.ClassDef) -> set[str]:
    """A class's members: what its body binds, and the attributes its methods set on self."""
    members = set()
    for child in node.body:
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            members.add(child.name)
        elif isinstance(child, ast.AnnAssign) and isinstance(child.target, ast.Name):
            members.add(child.target.id)
        elif isinstance(child, ast.Assign):
            members.update(t.id for t in child.targets if isinstance(t, ast.Name))
    for inner in ast.walk(node):
        if isinstance(inner, ast.Attribute) and isinstance(inner.ctx, ast.Store):
            if isinstance(inner.value, ast.Name) and inner.value.id == "self":
                members.add(inner.attr)
    return members


@functools.cache
def code_index() -> CodeIndex:
    """Read the project's Python once: what each module binds, each class offers, and which strings it says.

    The tests are only scanned for the functions, classes and names they define (pages cite a few helpers):
    parsing them all would take most of this test's time.
    """
    files, _ = repository()
    module_names: dict[str, set[str]] = {}
    by_basename: dict[str, list[str]] = {}
    own: dict[str, set[str]] = {}
    bases: dict[str, set[str]] = {}
    defined: set[str] = set()
    strings: set[str] = set()
    for relative in sorted(f for f in files if f.endswith(".py")):
        path = ROOT / relative
        if relative.startswith(TESTS):
            defined.update(a or b for a, b in TEST_DEFINITION.findall(path.read_text()))
            continue
        tree = ast.parse(path.read_text(), filename=relative)
        module = module_name(path)
        module_names[module] = set(bound_names(tree))
        if module.startswith(PACKAGE + "."):
            by_basename.setdefault(module.rsplit(".", 1)[1], []).append(module)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                own.setdefault(node.name, set()).update(own_members(node))
                bases.setdefault(node.name, set()).update(b.id for b in node.bases if isinstance(b, ast.Name))
                defined.add(node.name)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                defined.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                defined.add(node.id)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                strings.add(node.value)

    def members(name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        inherited = [members(b, seen | {name}) for b in bases.get(name, ()) if b in own and b not in seen]
        return own.get(name, set()).union(*inherited)

    return CodeIndex(module_names, by_basename, {name: members(name) for name in own}, defined, strings)


@functools.cache
def javascript_names() -> frozenset[str]:
    """The names the console's scripts declare (constants, functions, classes)."""
    scripts = (ROOT / PACKAGE / "web" / "console_static").glob("*.js")
    declared = re.compile(r"\b(?:const|let|function|class)\s+([A-Za-z_$][\w$]*)")
    return frozenset(name for script in scripts for name in declared.findall(script.read_text()))


@functools.cache
def setting_names() -> frozenset[str]:
    """Every MCP_* variable a Settings field reads."""
    return frozenset(PREFIX + f.name.upper() for f in dataclasses.fields(Settings) if f.name != "extra")


def path_problem(path: str) -> str | None:
    """Why a path a page names is not in the repository, or None when it is."""
    files, directories = repository()
    if path in FOREIGN_PATHS:
        return None
    pool = directories if path.endswith("/") else files
    top = path.split("/", 1)[0] + "/"
    if top in directories:
        found = any(fnmatch.fnmatchcase(p, path) for p in pool) if "*" in path else path in pool
    else:
        found = any(fnmatch.fnmatchcase(p, "*/" + path) for p in pool)
    return None if found else f"no {'directory' if path.endswith('/') else 'file'} {path} in the repository"


def bare_file_problem(name: str) -> str | None:
    """Why a file name a page gives alone is the name of no file here, or None when some file has it."""
    files, _ = repository()
    if any(f == name or f.endswith("/" + name) for f in files):
        return None
    return f"no file named {name} in the repository"


def dotted_problem(dotted: str) -> str | None:
    """Why flask_mcp_gevent.a.b (a module, then maybe a name in it and a member) is not there, or None."""
    index = code_index()
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        if module in index.module_names:
            break
    else:
        return f"no module {dotted}"
    rest = parts[cut:]
    if not rest:
        return None
    if rest[0] not in index.module_names[module]:
        return f"{module} has no {rest[0]}"
    if len(rest) > 1 and rest[0] in index.class_members and rest[1] not in index.class_members[rest[0]]:
        return f"{rest[0]} has no member {rest[1]}"
    return None


def import_problems(module: str, names: str) -> Iterator[str]:
    """Why `from module import names` would fail, name by name."""
    index = code_index()
    if module not in index.module_names:
        yield f"no module {module}"
        return
    for name in re.split(r"[\s,()]+", names):
        name = name.split(" as ")[0].strip()
        if re.fullmatch(r"[A-Za-z_]\w*", name) and name not in index.module_names[module]:
            yield f"{module} does not export {name}"


def member_problem(chain: str) -> str | None:
    """Why ctx.x / mcp.x / Class.x / module.x names nothing, or None when it does (or is not ours to judge)."""
    index = code_index()
    parts = chain.split(".")
    if chain in index.strings:
        return None  # a logger or config name the code says, like mcp.rpc
    if "example" in parts:
        return None  # a documentation host name (RFC 2606), like mcp.example.com
    for cut in range(len(parts) - 1, 0, -1):
        head, attribute = ".".join(parts[:cut]), parts[cut]
        if JSON_FIELD.match(attribute):
            return None
        if head in OBJECT_VARIABLES:
            classes = OBJECT_VARIABLES[head]
            if not any(attribute in index.class_members.get(c, ()) for c in classes):
                return f"{' or '.join(classes)} has no member {attribute}"
            return None
    head, attribute = parts[0], parts[1]
    if JSON_FIELD.match(attribute) or head in (PACKAGE, "mcp_tools") or head in FOREIGN_OBJECTS:
        return None
    if head in index.modules_by_basename:
        modules = index.modules_by_basename[head]
        submodules = {m + "." + attribute for m in modules}
        if any(attribute in index.module_names[m] for m in modules) or submodules & index.module_names.keys():
            return None
        return f"{' or '.join(modules)} defines no {attribute}"
    if CAMEL_CASE.match(head) and head in index.class_members and head not in FOREIGN_NAMES:
        if attribute not in index.class_members[head]:
            return f"{head} has no member {attribute}"
    return None


def identifier_problem(token: str) -> str | None:
    """Why a backticked code-like token names nothing of the project, or None (also when it is not code-like)."""
    match = CALL_OR_NAME.match(token)
    if not match:
        return None
    name, called = match.group(1), match.group(2) is not None or token.startswith("@")
    if "." in name:
        return member_problem(name)
    if name in FOREIGN_NAMES or name.startswith(PREFIX) or keyword.iskeyword(name):
        return None
    if name.startswith(FLASK_PREFIX) and name.removeprefix(FLASK_PREFIX) in code_index().strings:
        return None  # Flask's from_prefixed_env: FLASK_SHIPPING_FEE sets app.config["SHIPPING_FEE"]
    looks_like_code = CAMEL_CASE.match(name) or CONSTANT.match(name) or called
    if not looks_like_code or name in code_index().defined or name in javascript_names():
        return None
    if called and hasattr(builtins, name):
        return None
    return f"nothing in the code defines {name}"


def setting_problems(line: Line) -> Iterator[str]:
    """Every MCP_* name on a line that is neither a setting nor a known variable of another kind."""
    known = setting_names() | NON_SETTING_VARIABLES.keys() | EXAMPLE_EXTRA_SETTINGS | DEPRECATED_NAMES.keys()
    for match in SETTING.finditer(line.text):
        name, family = match.group(1), match.group(2) == "*"
        if family and name.endswith("_"):
            if not any(s.startswith(name) for s in setting_names()):
                yield f"no setting starts with {name}"
        elif not family and name not in known:
            yield f"{name} is not a setting (flask_mcp_gevent.config.Settings) nor a known variable"


def line_problems(line: Line) -> Iterator[str]:
    """Every reference to the code on one line that the code does not have."""
    yield from setting_problems(line)
    if line.fence not in (None, "", "python"):
        return  # shell, JSON and nginx blocks: their MCP_* names above are all they say of the code
    for match in FILE_PATH.finditer(line.text):
        path = match.group(1)
        if Path(path).suffix in CODE_EXTENSIONS or path.split("/", 1)[0] + "/" in repository()[1]:
            yield from filter(None, [path_problem(path)])
    for match in BARE_FILE.finditer(line.text):
        yield from filter(None, [bare_file_problem(match.group(1))])
    for match in PACKAGE_PATH.finditer(line.text):
        yield from filter(None, [dotted_problem(match.group(1))])
    if line.fence == "python":
        for match in IMPORT.finditer(line.text):
            yield from import_problems(match.group(1), match.group(2))
        for match in VARIABLE_CHAIN.finditer(line.text):
            yield from filter(None, [member_problem(match.group(1))])
        return
    for match in BACKTICKED.finditer(line.text):
        token = match.group(1).strip()
        for statement in IMPORT.finditer(token):
            yield from import_problems(statement.group(1), statement.group(2))
        if DIRECTORY.match(token):
            yield from filter(None, [path_problem(token)])
        elif not token.startswith((PACKAGE + ".", "mcp_tools.")) and not FILE_NAME.match(token):
            yield from filter(None, [identifier_problem(token)])
    if line.fence == "":
        plain = BACKTICKED.sub(" ", line.text)
        for match in FENCED_DIRECTORY.finditer(plain):
            yield from filter(None, [path_problem(match.group(1))])
        for match in [*FENCED_CLASS.finditer(plain), *FENCED_CONSTANT.finditer(plain)]:
            if not match.group(1).startswith(PREFIX):
                yield from filter(None, [identifier_problem(match.group(1))])
        for match in VARIABLE_CHAIN.finditer(plain):
            yield from filter(None, [member_problem(match.group(1))])


def stale_references(paths: list[Path]) -> list[str]:
    """Each reference to missing code, as 'page:line: what is missing'."""
    return [f"{line.page}:{line.number}: {problem}"
            for path in paths for line in lines_of(path) for problem in line_problems(line)]


def test_every_page_names_only_code_that_exists():
    stale = stale_references(pages())
    assert stale == [], "pages that name code the project no longer has (fix the page):\n" + "\n".join(stale)


def test_requirement_comments_name_only_modules_that_exist():
    stale = stale_references(comment_files())
    assert stale == [], "comments that name code the project no longer has (fix the comment):\n" + "\n".join(stale)


def test_each_non_setting_variable_is_still_read_where_the_allow_list_says():
    unread = [name for name, where in NON_SETTING_VARIABLES.items() if name not in (ROOT / where).read_text()]
    assert unread == [], f"drop these from NON_SETTING_VARIABLES, or say where they are read now: {unread}"


def test_every_allow_list_entry_is_still_named_by_a_page():
    """An entry no page needs any more is one more name the check would wave through: take it off."""
    text = "\n".join(path.read_text() for path in pages() + comment_files())
    listed = FOREIGN_NAMES | FOREIGN_PATHS | EXAMPLE_EXTRA_SETTINGS | NON_SETTING_VARIABLES.keys()
    unused = [name for name in sorted(listed) if not re.search(rf"(?<![\w/]){re.escape(name)}(?!\w)", text)]
    assert unused == [], f"no page names these any more: take them off the allow-lists: {unused}"


def test_no_allow_listed_foreign_name_is_defined_by_the_project():
    """A name of ours on the foreign list would go unchecked (the pages' Client is the SDK's, which tests mimic)."""
    ours = sorted(FOREIGN_NAMES & (code_index().defined - {"Client"}))
    assert ours == [], f"these are defined in the project: take them off FOREIGN_NAMES so the pages are checked: {ours}"


def test_the_checker_catches_each_kind_of_stale_reference(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("\n".join([
        "The handlers sit in `MODERN_METHODS` (`flask_mcp_gevent/protocol/methods.py`).",
        "hiredis parses replies (store/redis_resp.py) for `flask_mcp_gevent.store.redis_resp`.",
        "Set `MCP_NO_SUCH_SETTING`, call `ctx.no_such_method()` or `pipeline.no_such_step`, raise `NoSuchError`.",
        "```python",
        "from flask_mcp_gevent import MCP, NoSuchExport",
        "ctx.registry.no_such_change()",
        "```",
        "```",
        "store/gone/         sessions, in GoneStore and GONE_TABLE; gone.py; ctx.gone/elicit",
        "```",
        "```sh",
        "MCP_NO_SUCH_SETTING=1 gunicorn -c gunicorn.conf.py wsgi:app",
        "```",
    ]))
    stale = [entry.split(": ", 1)[1] for entry in stale_references([page])]
    assert stale == [
        "nothing in the code defines MODERN_METHODS",
        "no file store/redis_resp.py in the repository",
        "flask_mcp_gevent.store has no redis_resp",
        "MCP_NO_SUCH_SETTING is not a setting (flask_mcp_gevent.config.Settings) nor a known variable",
        "Context or RequestContext has no member no_such_method",
        "flask_mcp_gevent.web.pipeline defines no no_such_step",
        "nothing in the code defines NoSuchError",
        "flask_mcp_gevent does not export NoSuchExport",
        "Registry has no member no_such_change",
        "no file named gone.py in the repository",
        "no directory store/gone/ in the repository",
        "nothing in the code defines GoneStore",
        "nothing in the code defines GONE_TABLE",
        "Context or RequestContext has no member gone",
        "MCP_NO_SUCH_SETTING is not a setting (flask_mcp_gevent.config.Settings) nor a known variable",
    ]


def test_the_checker_passes_english_words_and_other_peoples_names(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("\n".join([
        "Send `initialize`, then `tools/call`; a `Host` header, `GET /mcp`, `structuredContent` and `isError: true`.",
        "The `mcp.rpc` logger, `current_app.config`, `data.reason`, `Client(url)` and `ctx.consume_answers()`.",
        "Read `specification/draft/tasks.md` and `.cursor/mcp.json`; write `tests/protocol/test_<tool>.py`.",
        "```",
        "MCP_ALLOWED_HOSTS=mcp.example.com",
        "```",
    ]))
    assert stale_references([page]) == []
