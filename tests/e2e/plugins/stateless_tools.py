"""Tools for the 2026-07-28 wire: a slow one that reports progress first, one that charges after a confirmation."""

import logging
import os

import gevent

from mcp_tools import tool

log = logging.getLogger("mcp.tests.stateless")

INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "ms": {"type": "integer", "minimum": 0, "maximum": 60000, "description": "How long to sleep, in ms."},
    },
    "required": ["ms"],
    "additionalProperties": False,
}


@tool(input_schema=INPUT_SCHEMA)
def progress_then_sleep(ms: int, ctx) -> str:
    """Report progress, then sleep for ms milliseconds; log it when the call is cancelled meanwhile."""
    ctx.progress(1, 2, "started")
    try:
        gevent.sleep(ms / 1000.0)
    except gevent.GreenletExit:
        log.warning("progress_then_sleep saw GreenletExit")
        raise
    ctx.progress(2, 2, "done")
    return f"slept {ms} ms"


CHARGE_SCHEMA = {
    "type": "object",
    "properties": {
        "amount": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "What to charge, in cents."},
    },
    "required": ["amount"],
    "additionalProperties": False,
}
CONFIRMATION = {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}


@tool(input_schema=CHARGE_SCHEMA)
def charge_after_confirmation(amount: int, ctx) -> str:
    """Ask the user to confirm, then charge once: the confirmation works once (ctx.consume_answers)."""
    answer = ctx.elicit(f"Charge {amount} cents?", CONFIRMATION, key="confirm")
    if answer.get("action") != "accept" or (answer.get("content") or {}).get("confirm") is not True:
        return "not charged"
    ctx.consume_answers()  # after the last ask, before the effect: a replayed confirmation stops here
    record_charge(ctx.settings.extra.get("MCP_TEST_CHARGE_LOG", ""), amount)
    return f"charged {amount}"


def record_charge(path: str, amount: int) -> None:
    """The effect: one line per charge, naming the worker that made it, appended to the file tests read."""
    if path:
        with open(path, "a", encoding="utf-8") as log_file:
            log_file.write(f"{os.getpid()} {amount}\n")
