"""The settings page (docs/settings.md) documents every setting, with the default the code really has."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from flask_mcp_gevent.config import PREFIX, Settings, cast_setting

SETTINGS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "settings.md"
ROW = re.compile(r"^\| `(MCP_[A-Z0-9_]+)` \| (.*?) \| (.+) \|$")


def settings_table() -> dict[str, str]:
    """The settings table's rows: variable name -> default cell."""
    return {m.group(1): m.group(2) for line in SETTINGS_PAGE.read_text().splitlines() if (m := ROW.match(line))}


def documented_fields() -> list[dataclasses.Field]:
    """Every Settings field that an environment variable sets."""
    return [f for f in dataclasses.fields(Settings) if f.name != "extra"]


def test_every_setting_has_a_row_in_the_settings_table():
    table = settings_table()
    missing = [PREFIX + f.name.upper() for f in documented_fields() if PREFIX + f.name.upper() not in table]
    assert missing == []


def test_the_table_names_no_setting_the_code_does_not_have():
    known = {PREFIX + f.name.upper() for f in documented_fields()}
    assert sorted(set(settings_table()) - known) == []


def test_every_literal_default_in_the_table_is_the_real_default():
    """A default written as `code` must cast to the field's default; prose defaults are checked by hand."""
    table = settings_table()
    defaults = Settings()
    for field in documented_fields():
        cell = table[PREFIX + field.name.upper()]
        literal = re.fullmatch(r"`([^`]*)`", cell)
        if cell == "(empty)":
            assert getattr(defaults, field.name) in ("", ()), field.name
        elif literal:
            value = cast_setting(PREFIX + field.name.upper(), literal.group(1), field.type)
            assert value == getattr(defaults, field.name), field.name
