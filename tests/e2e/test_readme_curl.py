"""The README's curl samples, run as written against a real server: what they show is what the server sends.

Each sh or bash block of "## Debugging with curl" is read as commands (a trailing backslash joins lines), each
followed by the `# ` comment lines that show its output; a comment after a blank line is prose. A plain block
shows more of the output of the stream still open (terminal 1). `127.0.0.1:8000` becomes the test server's
address; `...` stands for anything, and a hex placeholder such as `5f0c...e2` takes the value that stood there in
the output shown before it, and is put into the commands after it. The stdio sample (`.venv/bin/python app.py
--stdio`) runs with the test's own Python, from the repository root.

Shown output with SSE fields must be the events the server sent, all of them and in order (`id:` lines, event
names, the priming event); comment events (`: ping`) must appear; any other shown lines must appear in order.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from tests.e2e.server_process import ROOT, ServerProcess

pytestmark = pytest.mark.e2e

README = (ROOT / "README.md").read_text()
SECTION = README.split("## Debugging with curl", 1)[1].split("## Adding a tool", 1)[0]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
# A value shown in part (hex digits around "..."), or "..." alone: anything.
ELLIPSIS = re.compile(r"([0-9a-f]+\.\.\.[0-9a-f]*|\.\.\.)")
PLACEHOLDER = re.compile(r"[0-9a-f]+\.\.\.[0-9a-f]*")
SSE_FIELDS = ("id:", "event:", "data:", "retry:")
README_ADDRESS = "127.0.0.1:8000"
COMMAND_TIMEOUT_S = 30.0
STREAM_WAIT_S = 15.0
STDIO_COMMAND = ".venv/bin/python app.py --stdio"


@dataclass
class Command:
    """One shell command of a sample and the output the README shows for it."""

    text: str
    shown: list[str] = field(default_factory=list)


def blocks() -> Iterator[tuple[str, str]]:
    """The fenced blocks of the section: (language, body)."""
    for match in FENCE.finditer(SECTION):
        yield match.group(1), match.group(2)


def parse_commands(body: str) -> list[Command]:
    """Split a shell block into commands, each with the comment lines right after it."""
    commands: list[Command] = []
    pending, showing = "", False
    for line in body.splitlines():
        if pending or line.endswith("\\"):
            pending = f"{pending}\n{line}" if pending else line
            if not line.endswith("\\"):
                commands.append(Command(pending))
                pending, showing = "", True
        elif line.startswith("#"):
            if showing:
                commands[-1].shown.append(line[2:] if line.startswith("# ") else line[1:])
        elif line.strip():
            commands.append(Command(line))
            showing = True
        else:
            showing = False
    return commands


def unwrap(shown: list[str]) -> list[str]:
    """Join the README's wrapped lines: a shown line that starts with a space continues the one before."""
    lines: list[str] = []
    for line in shown:
        if line.startswith(" ") and lines:
            lines[-1] += line.lstrip()
        else:
            lines.append(line.rstrip())
    return lines


class Bindings(dict):
    """Placeholder text -> the value it stood for in the server's output."""

    def pattern(self, shown: str) -> tuple[re.Pattern, list[str]]:
        """A regex for one shown line, and the unbound placeholders its groups capture, in order."""
        regex, captured = "", []
        for part in ELLIPSIS.split(shown):
            if PLACEHOLDER.fullmatch(part):
                if part in self:
                    regex += re.escape(self[part])
                else:
                    regex += "([0-9a-f]+)"
                    captured.append(part)
            else:
                regex += ".*?" if part == "..." else re.escape(part)
        return re.compile(regex), captured

    def match(self, shown: str, actual: str) -> bool:
        """Whether an actual line fits a shown one; binds the placeholders it shows when it does."""
        regex, captured = self.pattern(shown)
        found = regex.fullmatch(actual)
        if found is None:
            return False
        for placeholder, value in zip(captured, found.groups(), strict=True):
            self[placeholder] = value
        return True

    def substitute(self, command: str, port: int) -> str:
        """The command with the test server's address and every placeholder's value."""
        command = command.replace(README_ADDRESS, f"127.0.0.1:{port}")
        for placeholder in PLACEHOLDER.findall(command):
            assert placeholder in self, f"the README uses {placeholder} before showing where it comes from"
            command = command.replace(placeholder, self[placeholder])
        return command


def events(lines: list[str]) -> list[list[str]]:
    """SSE lines grouped into events (a blank line ends one)."""
    grouped: list[list[str]] = [[]]
    for line in lines:
        if line:
            grouped[-1].append(line)
        elif grouped[-1]:
            grouped.append([])
    return [event for event in grouped if event]


def is_comment(event: list[str]) -> bool:
    """An event made of comment lines only, such as the keepalive `: ping`."""
    return all(line.startswith(":") for line in event)


def sse_problem(shown: list[str], actual: list[str], bindings: Bindings) -> str | None:
    """Why actual events are not the shown ones (all of them, in order); None when they are."""
    expected, sent = events(shown), events(actual)
    for comment in filter(is_comment, expected):
        if comment not in sent:
            return f"no {comment} in what the server sent"
    expected = [event for event in expected if not is_comment(event)]
    sent = [event for event in sent if not is_comment(event)]
    if len(expected) != len(sent):
        return f"the README shows {len(expected)} events, the server sent {len(sent)}"
    for shown_event, sent_event in zip(expected, sent, strict=True):
        if len(shown_event) != len(sent_event) or not all(
                bindings.match(want, got) for want, got in zip(shown_event, sent_event, strict=True)):
            return f"the README shows {shown_event}, the server sent {sent_event}"
    return None


def output_problem(shown: list[str], output: str, bindings: Bindings) -> str | None:
    """Why a command's output is not what the README shows; None when it is."""
    shown = unwrap(shown)
    actual = [line.rstrip() for line in output.splitlines()]
    if any(line.startswith(SSE_FIELDS) for line in shown):
        return sse_problem(shown, actual, bindings)
    remaining = iter(actual)
    for want in filter(None, shown):
        if not any(bindings.match(want, got) for got in remaining):
            return f"no line like {want!r} (in order)"
    return None


class Stream:
    """A curl that keeps its connection open, run in the background; its output is read as it arrives."""

    def __init__(self, script: str, shown: list[str]) -> None:
        self.shown = list(shown)
        self.process = subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE, text=True)
        self.output = ""
        threading.Thread(target=self.read, daemon=True).start()

    def read(self) -> None:
        """Keep everything the command prints."""
        for line in self.process.stdout:
            self.output += line

    def check(self, bindings: Bindings) -> None:
        """Wait, bounded, until the output is what the README shows so far."""
        deadline = time.monotonic() + STREAM_WAIT_S
        while (problem := output_problem(self.shown, self.output, bindings)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert problem is None, f"{problem}\nshown: {self.shown}\nsent:\n{self.output}"

    def stop(self) -> None:
        """End the command."""
        self.process.terminate()
        self.process.wait(10)


def is_stream(command: str) -> bool:
    """A curl that opens a stream and waits on it (-N, no body, no other method)."""
    return re.search(r"curl -s?N\b", command) is not None and " -d " not in command and " -X " not in command


@pytest.fixture(scope="module")
def server():
    """A gunicorn as scripts/serve.sh starts it, with a keepalive short enough to see one."""
    with ServerProcess(env={"MCP_KEEPALIVE_S": "1"}) as process:
        yield process


def test_the_section_uses_the_ipv4_loopback_the_server_binds():
    assert "localhost" not in SECTION
    assert SECTION.count(README_ADDRESS) >= 15


def test_every_curl_sample_shows_what_the_server_sends(server):
    assert shutil.which("curl"), "curl is needed: scripts/test.sh installs it"
    bindings, assignments, streams, ran = Bindings(), [], [], 0
    try:
        for language, body in blocks():
            if not language:  # more of terminal 1's stream
                streams[-1].shown += ["", *body.splitlines()]
                streams[-1].check(bindings)
                continue
            for command in parse_commands(body):
                text = bindings.substitute(command.text, server.port)
                if STDIO_COMMAND in text:  # the server is the command's own process
                    text = text.replace(".venv/bin/python", shlex.quote(sys.executable))
                elif "curl " not in text:
                    assignments.append(text)
                    continue
                script = "\n".join([*assignments, text])
                ran += 1
                if is_stream(text):
                    streams.append(Stream(script, command.shown))
                    streams[-1].check(bindings)
                    continue
                done = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                                      timeout=COMMAND_TIMEOUT_S, cwd=ROOT)
                assert done.returncode == 0, (text, done.stderr)
                problem = output_problem(command.shown, done.stdout, bindings)
                assert problem is None, f"{problem}\ncommand: {text}\nsent:\n{done.stdout}"
    finally:
        for stream in streams:
            stream.stop()
    assert ran >= 15, "the README's samples were not all found"
    assert STDIO_COMMAND in SECTION, "the README shows the stdio command"
