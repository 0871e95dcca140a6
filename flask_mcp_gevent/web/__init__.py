"""The Flask layer: the extension, routes, the WSGI hot path and the HTTP pipeline both share, security, health."""
