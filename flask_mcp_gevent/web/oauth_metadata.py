"""OAuth protected-resource metadata (RFC 9728): where clients get a token, and the challenge that points there."""

from __future__ import annotations

from http import HTTPStatus
from urllib.parse import urlsplit

from flask import Blueprint, Response, current_app

from flask_mcp_gevent.auth import metadata_document, metadata_url
from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.errors import INVALID_REQUEST
from flask_mcp_gevent.transports.http_io import HttpProblem, json_response
from flask_mcp_gevent.web.mcp_app import server_of

__all__ = ["challenge", "metadata_blueprint"]

metadata_blueprint = Blueprint("oauth_metadata", __name__)


@metadata_blueprint.route("/.well-known/oauth-protected-resource", methods=["GET"])
@metadata_blueprint.route("/.well-known/oauth-protected-resource/<path:resource_path>", methods=["GET"])
def protected_resource_metadata(resource_path: str = "") -> Response:
    """Name this resource's authorization servers, so clients know where to get a token."""
    settings = server_of(current_app).settings
    if resource_path and "/" + resource_path.strip("/") != urlsplit(settings.oauth_audience).path.rstrip("/"):
        raise HttpProblem(HTTPStatus.NOT_FOUND, INVALID_REQUEST,
                          f"No such resource; this server's is {settings.oauth_audience}")
    response = json_response(metadata_document(settings))
    response.headers["Cache-Control"] = "public, max-age=3600"
    return response


def challenge(settings: Settings, error: str | None = None, description: str = "", scope: str = "") -> str:
    """The WWW-Authenticate value: RFC 6750 Bearer, naming the resource metadata when OAuth is on."""
    params = []
    if settings.oauth_jwks_url:
        params.append(f'resource_metadata="{metadata_url(settings.oauth_audience)}"')
    else:
        params.append('realm="mcp"')
    # RFC 6750: a request that sent no credentials at all gets the bare challenge, without error details.
    if error:
        params.append(f'error="{error}"')
        if description:
            params.append('error_description="{}"'.format(description.replace('"', "'").replace("\\", "")))
    if scope:
        params.append(f'scope="{scope}"')
    return "Bearer " + ", ".join(params)
