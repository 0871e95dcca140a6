"""deploy/: the shipped nginx site in front of a real gunicorn, driven by the SDK clients; the systemd unit checked.

nginx runs from a temporary prefix with a generated main config that includes the
shipped site file, rendered only to swap its listen and upstream ports, so the file
operators copy is the file under test.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from flask_mcp_gevent.config import Settings, is_local_bind
from tests.e2e.server_process import ROOT, ServerProcess, free_port

pytestmark = [pytest.mark.e2e, pytest.mark.nginx]

SITE = ROOT / "deploy" / "nginx" / "mcp-server.conf"
UNIT = ROOT / "deploy" / "systemd" / "mcp-server.service"
ENV_FILE = ROOT / "deploy" / "mcp-server.env"
WAIT_S = 20.0
DEADLINE_S = 60.0
REQUEST_TIMEOUT_S = 30.0


def nginx_binary() -> str | None:
    """The nginx executable (Debian puts it in /usr/sbin, which is not always on PATH)."""
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None)


def render_site(text: str, listen_port: int, upstream_port: int) -> str:
    """The shipped site with only its listen and upstream addresses changed; fails if those lines moved."""
    replacements = {
        "listen 80;": f"listen 127.0.0.1:{listen_port};",
        "listen [::]:80;": "",
        "server 127.0.0.1:8000;": f"server 127.0.0.1:{upstream_port};",
    }
    for old, new in replacements.items():
        assert text.count(old) == 1, f"{SITE.name} no longer has exactly one {old!r}: update this test's renderer"
        text = text.replace(old, new)
    return text


def main_config(prefix: Path, nginx: str) -> str:
    """A main nginx.conf whose every writable path is inside prefix, including the rendered site."""
    built = subprocess.run([nginx, "-V"], capture_output=True, text=True).stderr
    temp_paths = [f"client_body_temp_path {prefix}/client_body;", f"proxy_temp_path {prefix}/proxy;"]
    for module in ("fastcgi", "uwsgi", "scgi"):
        if f"--without-http_{module}_module" not in built:
            temp_paths.append(f"{module}_temp_path {prefix}/{module};")
    user = "user root;" if os.geteuid() == 0 else ""  # workers must read the temp prefix
    return "\n".join([
        user,
        "daemon off;",
        "worker_processes 1;",
        f"pid {prefix}/nginx.pid;",
        f"error_log {prefix}/error.log info;",
        "events { worker_connections 256; }",
        "http {",
        f"    access_log {prefix}/access.log;",
        # As a host's nginx.conf might: compress everything. The site must switch it off for its streams.
        "    gzip on; gzip_min_length 1; gzip_proxied any; gzip_types text/event-stream application/json;",
        *(f"    {line}" for line in temp_paths),
        f"    include {prefix}/site.conf;",
        "}",
        "",
    ])


class Nginx:
    """The real nginx binary serving the rendered site from a temporary prefix; stopped by PID."""

    def __init__(self, nginx: str, upstream_port: int) -> None:
        self.nginx = nginx
        self.port = free_port()
        self.prefix = Path(tempfile.mkdtemp(prefix="mcp-nginx-"))
        (self.prefix / "site.conf").write_text(render_site(SITE.read_text(), self.port, upstream_port))
        (self.prefix / "nginx.conf").write_text(main_config(self.prefix, nginx))
        self.proc: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        """http://127.0.0.1:PORT"""
        return f"http://127.0.0.1:{self.port}"

    def command(self, *extra: str) -> list[str]:
        """nginx with this prefix, config and error log."""
        return [self.nginx, "-p", str(self.prefix), "-c", str(self.prefix / "nginx.conf"),
                "-e", str(self.prefix / "error.log"), *extra]

    def test_config(self) -> subprocess.CompletedProcess:
        """`nginx -t` on the generated config."""
        return subprocess.run(self.command("-t"), capture_output=True, text=True, timeout=30)

    def start(self) -> Nginx:
        """Start nginx in the foreground and wait until it proxies /healthz."""
        self.proc = subprocess.Popen(self.command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nginx exited with {self.proc.returncode}: {self.error_log()}")
            try:
                if httpx.get(self.base_url + "/healthz", timeout=2.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"nginx did not proxy /healthz within {WAIT_S}s: {self.error_log()}")

    def error_log(self) -> str:
        """What nginx logged."""
        path = self.prefix / "error.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        """SIGQUIT (graceful) by PID, SIGKILL if it lingers; remove the prefix."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        shutil.rmtree(self.prefix, ignore_errors=True)


@pytest.fixture(scope="module")
def proxied() -> Iterator[tuple[ServerProcess, Nginx]]:
    """gunicorn on a free port, and nginx with the shipped site in front of it."""
    nginx = nginx_binary()
    if nginx is None:
        pytest.skip("nginx is not installed (scripts/test.sh installs the Debian package nginx-light)")
    with ServerProcess() as server:
        proxy = Nginx(nginx, server.port)
        try:
            yield server, proxy.start()
        finally:
            proxy.stop()


async def echo_session(transport) -> str:
    """Initialize over the transport, call echo through nginx, return the echoed text."""
    async with transport as (read, write), ClientSession(read, write, REQUEST_TIMEOUT_S) as session:
        await session.initialize()
        tools = {tool.name for tool in (await session.list_tools()).tools}
        assert "echo" in tools
        result = await session.call_tool("echo", {"text": "through nginx"})
        assert result.is_error is False
        return result.content[0].text


def run_bounded(make_transport) -> str:
    """Run echo_session, failing instead of hanging after DEADLINE_S."""

    async def bounded() -> str:
        with anyio.fail_after(DEADLINE_S):
            return await echo_session(make_transport())

    return anyio.run(bounded)


def test_the_rendered_site_passes_nginx_config_test():
    nginx = nginx_binary()
    if nginx is None:
        pytest.skip("nginx is not installed")
    proxy = Nginx(nginx, free_port())
    try:
        checked = proxy.test_config()
        assert checked.returncode == 0, checked.stderr + proxy.error_log()
    finally:
        proxy.stop()


def test_sdk_sse_client_works_through_nginx(proxied):
    _, proxy = proxied
    assert run_bounded(lambda: sse_client(proxy.base_url + "/sse", timeout=10.0,
                                          sse_read_timeout=DEADLINE_S)) == "through nginx"


def test_sdk_streamable_http_client_works_through_nginx(proxied):
    _, proxy = proxied
    assert run_bounded(lambda: streamable_http_client(proxy.base_url + "/mcp")) == "through nginx"


def test_event_stream_arrives_unbuffered_and_uncompressed_through_nginx(proxied):
    _, proxy = proxied
    headers = {"Accept": "text/event-stream", "Accept-Encoding": "gzip"}
    with httpx.Client(timeout=httpx.Timeout(10.0)) as http, http.stream("GET", proxy.base_url + "/mcp",
                                                                        headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert "content-encoding" not in response.headers
        # The endpoint event is a few dozen bytes: a buffering proxy would sit on it; this read is bounded.
        first = next(response.iter_lines())
        assert first == "event: endpoint"


def test_upstream_connections_are_kept_alive_between_requests(proxied):
    server, proxy = proxied
    with httpx.Client(timeout=10.0) as http:
        for _ in range(5):
            assert http.get(proxy.base_url + "/healthz").status_code == 200
    # nginx holds idle HTTP/1.1 connections to gunicorn open (keepalive 32 with Connection "").
    established = subprocess.run(["ss", "-Htn", "state", "established", f"( sport = :{server.port} )"],
                                 capture_output=True, text=True)
    if established.returncode != 0:
        pytest.skip("ss is not available to inspect connections")
    assert established.stdout.strip(), "no idle upstream connection left open by nginx"


def test_site_timeouts_outlast_the_stream_keepalive_and_idle_upstreams_close_first():
    text = SITE.read_text()
    timeout = re.search(r"proxy_read_timeout (\d+)s;", text)
    assert timeout, "the site must set proxy_read_timeout in seconds"
    assert int(timeout.group(1)) > 2 * Settings().keepalive_s
    # nginx must give up an idle upstream connection before gunicorn closes it, or a POST races the close.
    idle = re.search(r"keepalive_timeout (\d+)s;", text)
    gunicorn_config = (ROOT / "flask_mcp_gevent" / "serving" / "gunicorn_config.py").read_text()
    gunicorn_keepalive = re.search(r"^keepalive = (\d+)", gunicorn_config, re.MULTILINE)
    assert idle and gunicorn_keepalive and int(idle.group(1)) < int(gunicorn_keepalive.group(1))
    for directive in ("proxy_buffering off;", "proxy_http_version 1.1;", 'proxy_set_header Connection "";',
                      "gzip off;"):
        assert directive in text, directive


# systemd
def unit_directives() -> dict[str, list[str]]:
    """The unit's Key=value lines, by key (a key may repeat)."""
    directives: dict[str, list[str]] = {}
    for line in UNIT.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")):
            key, _, value = line.partition("=")
            directives.setdefault(key.strip(), []).append(value.strip())
    return directives


def test_systemd_unit_has_graceful_reload_restart_hardening_and_an_environment_file():
    unit = unit_directives()
    assert unit["ExecReload"] == ["/bin/kill -s HUP $MAINPID"]
    assert unit["Restart"] == ["on-failure"]
    assert unit["EnvironmentFile"] == ["/etc/mcp-server/mcp-server.env"]
    assert "gunicorn -c gunicorn.conf.py wsgi:app" in unit["ExecStart"][0]
    for key, value in {"NoNewPrivileges": "yes", "ProtectSystem": "strict", "PrivateTmp": "yes",
                       "ProtectHome": "yes", "Type": "notify"}.items():
        assert unit[key] == [value], key
    assert int(unit["LimitNOFILE"][0]) > Settings().worker_connections
    assert unit["Environment"] == ["PROMETHEUS_MULTIPROC_DIR=/run/mcp-server/metrics"]
    assert unit["RuntimeDirectory"] == ["mcp-server"]


def test_systemd_unit_passes_systemd_analyze_verify(tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed (the directive checks above still ran)")
    # Point the unit at this checkout so the ExecStart binary exists; nothing else changes.
    rendered = tmp_path / "mcp-server.service"
    rendered.write_text(UNIT.read_text().replace("/opt/mcp-server", str(ROOT)))
    verified = subprocess.run(["systemd-analyze", "verify", str(rendered)], capture_output=True, text=True,
                              timeout=60)
    complaints = [line for line in (verified.stdout + verified.stderr).splitlines() if rendered.name in line]
    assert verified.returncode == 0 and not complaints, verified.stdout + verified.stderr


def test_example_environment_file_holds_only_real_valid_settings():
    environ = {}
    for line in ENV_FILE.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            environ[name.strip()] = value.strip()
    fields = set(Settings.__dataclass_fields__)
    unknown = [name for name in environ if not name.startswith("MCP_") or name[4:].lower() not in fields]
    assert not unknown, f"not settings: {unknown}"
    settings = Settings.from_environ(environ)
    assert is_local_bind(settings.bind)
    assert settings.log_format == "json"

