"""resources.expand_template: the URI a value makes, which completion checks against permissions."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.protocol.resources import expand_template, match_template


@pytest.mark.parametrize(
    ("uri_template", "variables", "uri"),
    [
        ("file://{+path}", {"path": "/srv/files/a.txt"}, "file:///srv/files/a.txt"),
        ("file://{+path}", {"path": "/srv/my files/a&b.txt"}, "file:///srv/my%20files/a&b.txt"),
        ("test://template/{id}/data", {"id": "a/b c"}, "test://template/a%2Fb%20c/data"),
        ("test://cities/{country}/{city}", {"city": "Paris"}, "test://cities//Paris"),  # missing: empty
        ("file://{+path}", {"path": "/srv/100%.txt"}, "file:///srv/100%25.txt"),
    ],
    ids=["plain-path", "reserved-kept-space-encoded", "simple-encodes-slash", "missing-variable", "percent"],
)
def test_expansion_follows_rfc_6570(uri_template, variables, uri):
    assert expand_template(uri_template, variables) == uri


@pytest.mark.parametrize("value", ["/srv/a.txt", "/srv/my files/ü.txt", "/srv/100%.txt", "/srv/%41"])
def test_matching_an_expanded_uri_gives_the_value_back(value):
    assert match_template("file://{+path}", expand_template("file://{+path}", {"path": value})) == {"path": value}
