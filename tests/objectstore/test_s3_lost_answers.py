"""S3 answers lost on the way back (moto's server behind a proxy that forwards a request and then
answers for it itself, as a dropped connection or a gateway's 5xx does).

- A data-file upload is a conditional create (``If-None-Match: *``): when its answer is lost the
  client sends it again, and the store refuses the retry with 412 because the first one landed.
  icectl reads the object back: the bytes it wrote -> the upload succeeded.
- A commit whose answer is lost and whose object cannot be read back for a while ends with an
  unknown outcome (exit 12): nothing the command wrote is removed, so once the store answers
  again the table is whole (the commit had landed).
"""

from __future__ import annotations

import http.client
import http.server
import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest



@dataclass
class Fault:
    """Requests ``method`` to a path matching ``pattern``: the first ``lose`` are forwarded and
    answered with 500 (the store did the work; the answer is lost); after that, ``refuse`` of
    them (of any method in ``refuse_methods``) are answered 503 without forwarding."""

    method: str
    pattern: str
    lose: int = 1
    refuse: int = 0
    refuse_methods: tuple[str, ...] = ("GET", "HEAD")
    key: str | None = None  # the path the lost request went to (refusals match it exactly)
    seen: list[str] = field(default_factory=list)


class _FaultProxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    target: tuple[str, int] = ("127.0.0.1", 0)
    faults: list[Fault] = []
    lock = threading.Lock()

    def _action(self) -> str:
        path = self.path.split("?", 1)[0]
        with self.lock:
            for f in self.faults:
                if f.key is not None and path == f.key and f.refuse and self.command in f.refuse_methods:
                    f.refuse -= 1
                    return "refuse"
                if f.lose and self.command == f.method and re.search(f.pattern, path):
                    f.lose -= 1
                    f.key = path
                    f.seen.append(f"{self.command} {self.path}")
                    return "lose"
        return "forward"

    def _answer(self, status: int, headers: list[tuple[str, str]], data: bytes) -> None:
        self.send_response(status)
        length = str(len(data))
        for k, v in headers:
            if k.lower() == "content-length" and self.command == "HEAD":
                length = v  # the object's size, not the (empty) body's
            elif k.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", length)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        action = self._action()
        if action == "refuse":
            self._answer(503, [], b"<Error><Code>SlowDown</Code><Message>injected</Message></Error>")
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
        conn = http.client.HTTPConnection(*self.target, timeout=60)
        conn.request(self.command, self.path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        if action == "lose":
            self._answer(500, [], b"<Error><Code>InternalError</Code><Message>injected</Message></Error>")
            return
        self._answer(resp.status, resp.getheaders(), data)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

    def log_message(self, *args: Any) -> None:
        pass


@dataclass
class FaultyS3:
    s3: Any  # conftest's Store, behind the proxy
    real: Any  # the store itself
    faults: list[Fault]


@pytest.fixture
def faulty_s3(s3: Any, tmp_path: Path) -> Iterator[FaultyS3]:
    host, port = s3.endpoint.rsplit("//", 1)[1].split(":")
    faults: list[Fault] = []
    handler = type("Proxy", (_FaultProxy,), {"target": (host, int(port)), "faults": faults,
                                             "lock": threading.Lock()})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield FaultyS3(s3.through(endpoint, str(tmp_path / "cache")), s3, faults)
    finally:
        server.shutdown()
        server.server_close()


def _source(tmp_path: Path) -> Path:
    f = tmp_path / "f.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64())}), f)
    return f


def test_a_data_file_upload_whose_answer_was_lost_is_settled_by_reading_it_back(faulty_s3: FaultyS3,
                                                                                tmp_path: Path) -> None:
    bucket = faulty_s3.real.new_bucket()
    t = f"s3://{bucket}/db/t"
    faulty_s3.s3.run("create", t, "--schema", "id long")
    lost = Fault("PUT", rf"^/{bucket}/db/t/data/.*\.parquet$")
    faulty_s3.faults.append(lost)
    r = faulty_s3.s3.run("append", t, str(_source(tmp_path)), "--copy", "--json", check=False)
    assert lost.seen, "the upload never went through the proxy"
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    copy = out["placed-files"][0]["file-path"]
    assert copy.startswith(f"s3://{bucket}/db/t/data/")
    rows = faulty_s3.real.run("scan", t, "--format", "jsonl").stdout.splitlines()
    assert sorted(json.loads(x)["id"] for x in rows) == [1, 2, 3]
    assert faulty_s3.real.run("check", t, "--deep", check=False).returncode == 0


def test_a_data_file_upload_that_meets_another_object_still_fails(faulty_s3: FaultyS3) -> None:
    """A 412 over an object with other bytes is a real collision, not our retry."""
    from icectl.io.storage.files import FileIO
    from icectl.io.storage.objectstore import DestinationExists

    bucket = faulty_s3.real.new_bucket()
    io = FileIO({"endpoint_url": faulty_s3.real.endpoint})
    url = f"s3://{bucket}/x/f.bin"
    io.write(url, b"someone else's bytes")
    with pytest.raises(DestinationExists):
        with io.open(url, "xb") as f:
            f.write(b"our bytes")
    assert io.read(url) == b"someone else's bytes"
    with pytest.raises(DestinationExists):  # as long, other bytes
        with io.open(url, "xb") as f:
            f.write(b"someone ELSE's bytes")


def test_a_commit_whose_answer_was_lost_keeps_the_copies(faulty_s3: FaultyS3, tmp_path: Path) -> None:
    """The issue's case: append --copy; the vN.metadata.json PUT lands, its answer is lost, and
    the key cannot be read for a while: exit 12, and every file is kept."""
    bucket = faulty_s3.real.new_bucket()
    t = f"s3://{bucket}/db/t"
    faulty_s3.s3.run("create", t, "--schema", "id long")
    lost = Fault("PUT", rf"^/{bucket}/db/t/metadata/v2\.metadata\.json$", refuse=40)
    faulty_s3.faults.append(lost)
    # the client retries each request once (its default backoff would only make the test slow)
    quick = {"endpoint_url": faulty_s3.s3.endpoint,
             "config_kwargs": {"retries": {"max_attempts": 2, "mode": "standard"}}}
    r = faulty_s3.s3.run("append", t, str(_source(tmp_path)), "--copy", check=False,
                         env={"ICECTL_STORAGE_OPTIONS": json.dumps(quick)})
    assert lost.seen and r.returncode == 12, r.stderr
    snaps = json.loads(faulty_s3.real.run("inspect", "snapshots", t, "--json").stdout)
    assert len(snaps) == 1  # the commit had landed
    checked = faulty_s3.real.run("check", t, "--deep", check=False)
    assert "file-missing" not in checked.stdout and checked.returncode == 0, checked.stdout
    rows = faulty_s3.real.run("scan", t, "--format", "jsonl").stdout.splitlines()
    assert sorted(json.loads(x)["id"] for x in rows) == [1, 2, 3]
