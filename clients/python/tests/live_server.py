"""The server the tests run against, and tokens for it.

With ``AUDIT_URL`` (the GraphQL endpoint) and ``AUDIT_JWT_SECRET`` (its
``AUTH_JWT_SECRET``) set, the tests use that server. Without them they start one from this
repository (``node --import tsx src/main.ts`` in ``AUDIT_SERVER_DIR``, by default the
repository root) on a free port, with a fresh embedded database in a temporary directory, and
stop it when the tests end.
"""

from __future__ import annotations

import atexit
import base64
import hashlib
import hmac
import itertools
import json
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

REPO_ROOT = Path(__file__).resolve().parents[3]


@dataclass
class LiveServer:
    url: str
    jwt_secret: str
    process: Optional[subprocess.Popen] = None
    data_dir: Optional[str] = None
    log_path: Optional[str] = None

    def token(self, sub: str, role: str, seconds: int = 3600) -> str:
        return mint_token(self.jwt_secret, sub, role, seconds)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)


def mint_token(secret: str, sub: str, role: str, seconds: int = 3600) -> str:
    """An HS256 JWT as the server verifies it: ``sub``, ``role`` and the required ``exp``."""

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")

    now = int(time.time())
    header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = b64(json.dumps({"sub": sub, "role": role, "iat": now, "exp": now + seconds}).encode())
    signature = hmac.new(secret.encode(), f"{header}.{claims}".encode(), hashlib.sha256).digest()
    return f"{header}.{claims}.{b64(signature)}"


_counter = itertools.count(1)


def unique(prefix: str) -> str:
    """A sub or id no other test (or earlier run against a shared server) uses."""
    return f"{prefix}-{os.getpid()}-{next(_counter)}-{secrets.token_hex(3)}"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _start() -> LiveServer:
    server_dir = Path(os.environ.get("AUDIT_SERVER_DIR") or REPO_ROOT)
    port = _free_port()
    data_dir = tempfile.mkdtemp(prefix="agent-audit-py-")
    secret = secrets.token_urlsafe(32)
    log_path = os.path.join(data_dir, "server.log")
    env = {
        **os.environ,
        "NODE_ENV": "production",
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "DATA_DIR": os.path.join(data_dir, "db"),
        "DATABASE_URL": "",
        "REDIS_URL": "",
        "AUTH_JWT_SECRET": secret,
    }
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            ["node", "--import", "tsx", "src/main.ts"], cwd=server_dir, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    server = LiveServer(f"http://127.0.0.1:{port}/graphql", secret, process, data_dir, log_path)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = Path(log_path).read_text(errors="replace")
            server.stop()
            raise RuntimeError(f"the audit server exited ({process.returncode}) before it was ready:\n{output}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
                if response.status == 200:
                    return server
        except OSError:
            pass
        time.sleep(0.2)
    output = Path(log_path).read_text(errors="replace")
    server.stop()
    raise RuntimeError(f"the audit server was not ready within 120 s:\n{output}")


_server: Optional[LiveServer] = None


def live_server() -> LiveServer:
    """The server given by the environment, or one started (once per test process) for the tests."""
    global _server
    if _server is None:
        url = os.environ.get("AUDIT_URL")
        if url:
            secret = os.environ.get("AUDIT_JWT_SECRET")
            if not secret:
                raise RuntimeError("AUDIT_URL is set: set AUDIT_JWT_SECRET to that server's AUTH_JWT_SECRET too")
            _server = LiveServer(url, secret)
        else:
            _server = _start()
            atexit.register(_server.stop)
    return _server
