"""A local S3 server (moto's, in its own process on 127.0.0.1 and a free port) for the object-store
tests, and a proxy in front of it that drops ``If-None-Match`` (a store that ignores conditional
creates).

moto and s3fs are in the ``test`` extra: these tests fail, never skip, when they are missing.
Every icectl run (in-process and subprocess) reaches the server through storage options
(``ICECTL_STORAGE_OPTIONS`` with ``endpoint_url``) and fake credentials in the AWS environment.
"""

from __future__ import annotations

import http.client
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Iterator

import pytest

from clirun import icectl, icectl_process, replacing_env

import moto  # noqa: F401 - fail (not skip) when the test extra is missing
import s3fs  # noqa: F401

FAKE_AWS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(port: int, proc: subprocess.Popen | None = None, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"moto server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


@dataclass
class S3:
    endpoint: str
    env: dict[str, str]  # environment of icectl subprocesses (AWS + storage options)

    def options(self, **extra: Any) -> dict[str, Any]:
        return {"endpoint_url": self.endpoint, **extra}

    def client(self) -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, **{
            "aws_access_key_id": "testing", "aws_secret_access_key": "testing", "region_name": "us-east-1"})

    def new_bucket(self) -> str:
        name = f"wh-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        out: list[str] = []
        paginator = self.client().get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
            out += [o["Key"] for o in page.get("Contents", [])]
        return sorted(out)

    def run(self, *args: str, env: dict[str, str] | None = None, timeout: float = 300,
            check: bool = True, process: bool = False) -> subprocess.CompletedProcess:
        """icectl ARGS against this server (tests/clirun.py: in this process unless ``process``)."""
        full = {**self.env, **(env or {})}
        if process:
            r = icectl_process(*args, env=replacing_env(full), timeout=timeout)
        else:
            r = icectl(*args, env=replacing_env(full))
        if check and r.returncode != 0:
            raise AssertionError(f"icectl {' '.join(args)} -> {r.returncode}\n{r.stderr}")
        return r


def _subprocess_env(endpoint: str, cache_dir: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "ICECTL_"))}
    env.update(FAKE_AWS)
    env["ICECTL_STORAGE_OPTIONS"] = json.dumps({"endpoint_url": endpoint})
    env["ICECTL_CACHE_DIR"] = cache_dir
    return env


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for(port, proc)
        endpoint = f"http://127.0.0.1:{port}"
        saved = {k: os.environ.get(k) for k in FAKE_AWS}
        os.environ.update(FAKE_AWS)
        cache = str(tmp_path_factory.mktemp("s3-cache"))
        yield S3(endpoint, _subprocess_env(endpoint, cache))
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
def s3(s3_server: S3) -> S3:
    return s3_server


class _DropConditionProxy(http.server.BaseHTTPRequestHandler):
    """Forwards every request to the S3 server without its If-None-Match header: a store that
    accepts a conditional create and ignores the condition."""

    protocol_version = "HTTP/1.1"
    target: tuple[str, int] = ("127.0.0.1", 0)
    dropped: list[str] = []

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("if-none-match", "connection")}
        if "If-None-Match" in self.headers:
            self.dropped.append(self.path)
        conn = http.client.HTTPConnection(*self.target, timeout=60)
        conn.request(self.command, self.path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        conn.close()

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="session")
def unsafe_s3(s3_server: S3, tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3]:
    """The same server behind a proxy that drops If-None-Match (own cache directory, so the
    answer remembered for the real server is not taken for it)."""
    host, port = s3_server.endpoint.rsplit("//", 1)[1].split(":")
    handler = type("Proxy", (_DropConditionProxy,), {"target": (host, int(port)), "dropped": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    cache = str(tmp_path_factory.mktemp("unsafe-s3-cache"))
    try:
        yield S3(endpoint, _subprocess_env(endpoint, cache))
    finally:
        server.shutdown()
