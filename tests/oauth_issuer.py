"""A stand-in authorization server for tests: an RSA key pair, its JWKS, and tokens signed with it."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

ISSUER = "https://auth.example.test"
AUDIENCE = "http://127.0.0.1/mcp"


class TestIssuer:
    """Mints RS256 access tokens and publishes the matching public key as a JWKS."""

    __test__ = False  # not a test class, whatever pytest thinks of the name

    def __init__(self, kid: str = "test-key-1", issuer: str = ISSUER, audience: str = AUDIENCE) -> None:
        self.kid = kid
        self.issuer = issuer
        self.audience = audience
        self.private_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def jwks(self) -> dict[str, Any]:
        """The public half, as a JSON Web Key Set."""
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.private_key.public_key()))
        jwk.update({"kid": self.kid, "use": "sig", "alg": "RS256"})
        return {"keys": [jwk]}

    def write_jwks(self, path: Path) -> Path:
        """Write the JWKS to a file and return its path."""
        path.write_text(json.dumps(self.jwks()))
        return path

    def token(self, subject: str = "alice", scopes: str = "mcp tools:*", lifetime_s: float = 300,
              **overrides: Any) -> str:
        """A signed access token; overrides replace or (with None) remove claims, `kid` changes the header."""
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.issuer, "aud": self.audience, "sub": subject, "scope": scopes,
            "iat": now, "exp": now + int(lifetime_s),
        }
        kid = overrides.pop("kid", self.kid)
        for name, value in overrides.items():
            if value is None:
                claims.pop(name, None)
            else:
                claims[name] = value
        return jwt.encode(claims, self.private_key, algorithm="RS256", headers={"kid": kid})
