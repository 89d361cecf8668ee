"""An authorization server's signing side for tests: an EC key, its JWKS, tokens, and a JWKS served over HTTP."""

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

ISSUER = "https://auth.example.test"
KID = "test-key-1"


class Signer:
    """Issues ES256 tokens with one key; `jwks` is what the authorization server publishes."""

    def __init__(self, kid: str = KID) -> None:
        self.kid = kid
        self.key = ec.generate_private_key(ec.SECP256R1())

    @property
    def jwks(self) -> dict[str, Any]:
        public = ECAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
        return {"keys": [{**public, "kid": self.kid, "alg": "ES256", "use": "sig"}]}

    def token(self, audience: str, *, client_id: str = "agent-7", scope: str = "read", **claims: Any) -> str:
        now = int(time.time())
        body = {"iss": ISSUER, "aud": audience, "sub": "user-1", "client_id": client_id, "scope": scope}
        body |= {"iat": now, "exp": now + 600, **claims}
        return jwt.encode(body, self.key, algorithm="ES256", headers={"kid": self.kid})


@contextmanager
def jwks_server(signer: Signer) -> Iterator[str]:
    """Serve `signer.jwks` at `http://127.0.0.1:<free port>/jwks.json` while the block runs."""
    payload = json.dumps(signer.jwks).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/jwks.json"
    finally:
        server.shutdown()
        server.server_close()
