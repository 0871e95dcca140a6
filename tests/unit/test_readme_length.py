"""The README stays the short page its readers need (issue 31: at most 300 lines); the rest lives in docs/."""

from __future__ import annotations

from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
MOST_LINES = 300


def test_the_readme_is_at_most_300_lines():
    assert len(README.read_text().splitlines()) <= MOST_LINES
