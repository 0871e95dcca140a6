#!/usr/bin/env bash
# Install everything the test suite needs on a fresh machine, then run it all.
# Usage: scripts/test.sh [pytest args...]
#        scripts/test.sh --quick [pytest args...]   just .venv and pytest: no apt, no Node, no other Pythons
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"

install_venv() {
  [ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -r requirements-dev.txt
}

# One test file of your own tool, in seconds: the tests that need Redis, nginx, a browser or Node need the full run.
if [ "${1:-}" = "--quick" ]; then
  shift
  install_venv
  exec .venv/bin/python -m pytest "$@"
fi

need_apt=()
# The README's curl samples are run as they are written (tests/e2e/test_readme_curl.py).
command -v curl >/dev/null || need_apt+=(curl)
command -v redis-server >/dev/null || need_apt+=(redis-server)
# The Sentinel failover tests start their own Sentinels (Debian packages redis-sentinel apart from redis-server).
command -v redis-sentinel >/dev/null || [ -x /usr/bin/redis-sentinel ] || need_apt+=(redis-sentinel)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need_apt+=(nginx-light)
# The console's browser tests drive Debian's Chromium through its chromedriver; nothing downloads a browser.
command -v chromium >/dev/null || need_apt+=(chromium)
command -v chromedriver >/dev/null || need_apt+=(chromium-driver)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "== installing ${need_apt[*]} (apt)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
  # The Debian packages start system services; the tests start their own on free ports.
  $SUDO systemctl disable --now redis-server redis-sentinel nginx >/dev/null 2>&1 || true
fi

echo "== python venv (.venv)"
install_venv

# Cheap checks first: a lint or type error fails the run before the slow parts start.
echo "== ruff and mypy (settings in pyproject.toml)"
.venv/bin/ruff check .
.venv/bin/mypy

# A link to a missing page or heading fails here, before the slow parts (into site/, which git ignores).
echo "== docs site (mkdocs build --strict)"
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet

echo "== node 22 and the MCP conformance suite (tests/conformance/node_modules)"
(cd tests/conformance && npm install --silent --no-audit --no-fund >/dev/null)

echo "== pytest"
.venv/bin/python -m pytest "$@"

# Other supported Pythons: the layers that need no servers, to prove the imports (OSlash) hold.
find_python() {
  # A pyenv shim answers `command -v` even when its version is not selected, so each candidate must run.
  local candidate
  for candidate in "$HOME"/.pyenv/versions/"$1".*/bin/python "$(command -v "python$1" 2>/dev/null || true)"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ] && "$candidate" --version >/dev/null 2>&1; then
      echo "$candidate"
      return
    fi
  done
}
for version in 3.12 3.13; do
  interpreter="$(find_python "$version")"
  if [ -n "$interpreter" ]; then
    echo "== python $version ($interpreter): unit and protocol tests"
    [ -x ".venv-$version/bin/python" ] || "$interpreter" -m venv ".venv-$version"
    ".venv-$version/bin/pip" install -q --disable-pip-version-check -r requirements.txt pytest==9.2.0 pytest-timeout==2.4.0 httpx==0.28.1 hypothesis==6.170.17
    ".venv-$version/bin/python" -m pytest -q tests/unit tests/protocol
  else
    echo "== python $version not found: skipped"
  fi
done
