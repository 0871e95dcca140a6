#!/usr/bin/env python3
"""Print a new API key and the entry to add to MCP_API_KEYS_FILE (which stores only the key's SHA-256).

Usage: python scripts/new_api_key.py --principal alice --tools 'add' 'get_*' --prompts '*'
Give the key to the client once; it is not stored anywhere.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere, without installing

from flask_mcp_gevent.auth.api_keys import hash_key, new_key  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Make a key, then print it, its hash and a ready-to-paste file entry."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--principal", default="client", help="who the key speaks for (sessions are bound to it)")
    parser.add_argument("--tools", nargs="*", default=[], metavar="GLOB", help="tools it may list and call")
    parser.add_argument("--resources", nargs="*", default=[], metavar="GLOB", help="resource URIs it may read")
    parser.add_argument("--prompts", nargs="*", default=[], metavar="GLOB", help="prompts it may get")
    args = parser.parse_args(argv)
    key = new_key()
    digest = hash_key(key)
    entry = {digest: {"principal": args.principal, "tools": args.tools, "resources": args.resources,
                      "prompts": args.prompts}}
    print(f"key:    {key}")
    print(f"sha256: {digest}")
    print("entry for MCP_API_KEYS_FILE (a new file, or merge it into the existing object):")
    print(json.dumps(entry))
    print("Send it as:  Authorization: Bearer <key>   (the key is shown only now)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
