"""How many project modules one tools/call of echo enters, per wire: the path may shrink, never grow back."""

from __future__ import annotations

import pytest

from bench.call_path import count_modules

# The counts issue 30 reached (20, 18, 19, 18), plus what issue 39 added on the HTTP wires: the app's context around
# each call (web/app_context.py), the caller's own grants (auth/principal.py) and the caller's identification, split
# out of web/pipeline.py (web/callers.py). Lower these when the path shrinks.
MOST_MODULES = {"legacy": 23, "streamable": 21, "2026-07-28": 22, "stdio": 18}


@pytest.mark.parametrize("wire", sorted(MOST_MODULES))
def test_a_tools_call_enters_no_more_project_modules_than_the_wire_reached(wire):
    counted = count_modules(wire, repeat=2)
    assert counted["count"] <= MOST_MODULES[wire], f"{wire} now enters: {', '.join(counted['modules'])}"
