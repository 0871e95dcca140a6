"""A tool that writes to stdout, as careless code does, to prove stdio keeps the protocol stream clean."""

import os
import sys

from mcp_tools import tool

INPUT_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string", "description": "What to print."}},
    "required": ["text"],
    "additionalProperties": False,
}


@tool(input_schema=INPUT_SCHEMA)
def print_to_stdout(text: str) -> str:
    """Print text with print(), sys.stdout and a raw write to fd 1, then return it."""
    print(text)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    os.write(1, (text + "\n").encode())
    return text
