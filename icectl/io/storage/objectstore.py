"""Object stores (S3, GCS, Azure through fsspec): storage options, errors as one line naming the
bucket, listing by prefix, batch deletes, and the commit primitive there, a conditional create.

An object store has no rename that refuses to overwrite, so a commit creates the version file
under its final name with create-only-if-absent: S3 ``If-None-Match: *`` (s3fs
``mode="create"``), GCS ``ifGenerationMatch=0`` (gcsfs ``mode="create"``), Azure
``If-None-Match: *`` (adlfs ``overwrite=False``). Before the first write to a store (bucket and
endpoint) :func:`require_conditional_creates` proves that the store honours the condition; a
store that ignores it (some S3-compatible servers, proxies) is refused, unless the storage
option ``icectl.unsafe-commits`` is true. :class:`icectl.io.storage.fsspec_store.FsspecStorage` calls into this
module; nothing here knows about tables.
"""

from __future__ import annotations

import json
import os
import posixpath
import time
import uuid
from typing import Any, Callable

from icectl.errors import CommitStateUnknown, InvalidInput, NotFound, StorageError, UnsafeStorage
from icectl.io.storage.base import DestinationExists

STORAGE_OPTIONS_ENV = "ICECTL_STORAGE_OPTIONS"
UNSAFE_COMMITS = "icectl.unsafe-commits"  # true: commit to a store that ignores conditional creates
OWN_PREFIX = "icectl."  # options icectl reads itself; never passed to fsspec
CONDITIONAL_STORES = ("s3", "s3a", "s3n", "gs", "gcs", "az", "abfs", "abfss")
_EXTRAS = {"s3": "s3", "s3a": "s3", "s3n": "s3", "gs": "gcs", "gcs": "gcs", "az": "azure",
           "abfs": "azure", "abfss": "azure"}
_BATCH = 1000  # keys per S3 DeleteObjects request

_process_options: dict[str, Any] = {}


# -- storage options ------------------------------------------------------------------------------

def parse_option_value(text: str) -> Any:
    """A storage option's value: JSON when it parses as JSON (``true``, ``3``, ``{"a": 1}``,
    ``"007"``), else the text as it is."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_storage_option(item: str) -> tuple[str, Any]:
    """``KEY=VALUE`` -> (key, parsed value)."""
    key, eq, value = item.partition("=")
    key = key.strip()
    if not eq or not key:
        raise InvalidInput(f"a storage option must be KEY=VALUE, got {item!r}", argument="storage_options")
    return key, parse_option_value(value)


def parse_storage_options_text(text: str, source: str = STORAGE_OPTIONS_ENV) -> dict[str, Any]:
    """The storage options of ``ICECTL_STORAGE_OPTIONS``: a JSON object, or ``k=v,k=v`` (values
    as :func:`parse_option_value` reads them; a value holding a comma needs the JSON form)."""
    text = text.strip()
    if not text:
        return {}
    if text.startswith("{"):
        try:
            obj = json.loads(text)
        except ValueError as e:
            raise InvalidInput(f"{source} is not a JSON object: {e}") from None
        if not isinstance(obj, dict):
            raise InvalidInput(f"{source} is not a JSON object")
        return obj
    out: dict[str, Any] = {}
    for item in text.split(","):
        if item.strip():
            key, eq, value = item.partition("=")
            if not eq or not key.strip():
                raise InvalidInput(f"{source}: expected a JSON object or KEY=VALUE,KEY=VALUE, got {item!r}")
            out[key.strip()] = parse_option_value(value)
    return out


def set_storage_options(options: dict[str, Any]) -> None:
    """The storage options of this process (the command line's), over ``ICECTL_STORAGE_OPTIONS``;
    every FileIO made afterwards uses them."""
    global _process_options
    _process_options = dict(options)


def default_storage_options() -> dict[str, Any]:
    env = os.environ.get(STORAGE_OPTIONS_ENV, "")
    return {**(parse_storage_options_text(env) if env else {}), **_process_options}


def unsafe_commits(options: dict[str, Any]) -> bool:
    value = options.get(UNSAFE_COMMITS, False)
    return value is True or str(value).strip().lower() in ("true", "1", "yes")


def filesystem(scheme: str, url: str, options: dict[str, Any]) -> Any:
    """The fsspec filesystem of ``url`` with the storage options (icectl's own keys removed)."""
    import fsspec.core

    fs_options = {k: v for k, v in options.items() if not k.startswith(OWN_PREFIX)}
    if scheme in CONDITIONAL_STORES:
        # commits list and probe names that other processes create: never from a listings cache
        fs_options.setdefault("use_listings_cache", False)
    try:
        fs, _ = fsspec.core.url_to_fs(url, **fs_options)
        return fs
    except ImportError as e:
        hint = f" (install icectl[{_EXTRAS[scheme]}])" if scheme in _EXTRAS else ""
        raise StorageError(f"no filesystem for {url}: {e}{hint}") from e
    except (ValueError, TypeError) as e:
        raise StorageError(f"no filesystem for {url}: {e}") from e
    except Exception as e:  # noqa: BLE001 - a client that checks its credentials when made (gcsfs)
        failure = remote_error("connect to", url, e)
        if "no credentials" in str(failure) or "access denied" in str(failure):
            raise failure from e
        raise StorageError(f"no filesystem for {url}: {_short(str(e) or type(e).__name__)} "
                           "(check its credentials storage options)") from e


# -- errors ---------------------------------------------------------------------------------------

def bucket_url(path: str) -> str:
    """``scheme://bucket`` of an object-store URL."""
    scheme, _, rest = path.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0]}"


def _codes(e: BaseException) -> set[str]:
    """The store's error codes and HTTP statuses on ``e`` and its causes (botocore's response,
    azure-core's ``error_code``/``status_code``, gcsfs's ``code``)."""
    out = set()
    for c in (e, e.__cause__, e.__context__):
        response = getattr(c, "response", None)
        if isinstance(response, dict) and response.get("Error", {}).get("Code"):
            out.add(str(response["Error"]["Code"]))
        for attr in ("error_code", "status_code", "code"):
            value = getattr(c, attr, None)
            if isinstance(value, (str, int)) and not isinstance(value, bool) and value:
                out.add(str(value))
    return out


_DENIED = {"AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch", "AllAccessDisabled",
           "AuthorizationFailure", "AuthenticationFailed", "AuthorizationPermissionMismatch",
           "InsufficientAccountPermissions"}
_NO_BUCKET = {"NoSuchBucket", "ContainerNotFound"}


def _short(text: str) -> str:
    """The first sentence-ish part of a store's message (Azure's and GCS's carry request ids,
    times and the XML/JSON body after it)."""
    for cut in (" RequestId:", " Content:", "\n"):
        text = text.split(cut, 1)[0]
    return " ".join(text.split())


def remote_error(op: str, path: str, e: BaseException) -> StorageError | NotFound:
    """An fsspec backend's failure as one line naming the bucket and what is missing."""
    name = type(e).__name__
    text = _short(str(e) or name)
    where = bucket_url(path) if "://" in path else path
    names = {type(c).__name__ for c in (e, e.__cause__, e.__context__) if c is not None}
    codes = _codes(e)
    if names & {"NoCredentialsError", "PartialCredentialsError", "CredentialRetrievalError",
                "DefaultCredentialsError", "ClientAuthenticationError"} \
            or "Unable to locate credentials" in text:
        return StorageError(f"cannot {op} {path}: no credentials for {where} ({name}); give them in "
                            "the environment (e.g. AWS_ACCESS_KEY_ID, GOOGLE_APPLICATION_CREDENTIALS) "
                            "or as storage options")
    if isinstance(e, PermissionError) or codes & _DENIED or text.startswith("Forbidden"):
        return StorageError(f"cannot {op} {path}: access denied to {where} ({text})")
    if codes & _NO_BUCKET or "bucket does not exist" in text.lower() or \
            (op == "write" and isinstance(e, FileNotFoundError)):  # (a PUT needs only the bucket)
        return NotFound(f"cannot {op} {path}: the bucket {where} does not exist")
    if isinstance(e, FileNotFoundError):
        return NotFound(f"file not found: {path}")
    reason = e.strerror if isinstance(e, OSError) and e.strerror else text
    return StorageError(f"cannot {op} {path}: {reason}")


def call(op: str, path: str, fn: Callable[[], Any]) -> Any:
    """Run ``fn``, its failures as icectl errors (see :func:`remote_error`)."""
    try:
        return fn()
    except (NotFound, StorageError):
        raise
    except Exception as e:  # noqa: BLE001 - fsspec backends raise assorted errors
        raise remote_error(op, path, e) from e


def precondition_failed(e: BaseException) -> bool:
    """Whether a failed create was refused because the object exists (HTTP 412; Azure's
    ResourceExistsError)."""
    if isinstance(e, FileExistsError):
        return True
    for c in (e, e.__cause__, e.__context__):
        if c is None:
            continue
        response = getattr(c, "response", None)
        if isinstance(response, dict):
            info = response.get("Error", {})
            if info.get("Code") in ("PreconditionFailed", "412") and \
                    info.get("Condition", "If-None-Match") == "If-None-Match":
                return True
        if type(c).__name__ == "ResourceExistsError" or getattr(c, "code", None) == 412:
            return True
    return False


# -- listing and deleting -------------------------------------------------------------------------

def mtime_ms(d: dict[str, Any]) -> int:
    for key in ("mtime", "LastModified", "last_modified", "updated", "created"):
        v = d.get(key)
        if v is None:
            continue
        if hasattr(v, "timestamp"):
            return int(v.timestamp() * 1000)
        try:
            return int(float(v) * 1000)
        except (TypeError, ValueError):
            continue
    return 0


def list_dir(fs: Any, p: str) -> list[tuple[str, int, int, bool]]:
    """(name, size, mtime ms, is_dir) directly under ``p``; [] when nothing is there."""
    try:
        entries = fs.ls(p, detail=True)
    except FileNotFoundError:
        return []
    out = []
    for d in entries:
        if d["name"].rstrip("/") == p.rstrip("/"):
            continue  # a "directory" marker object, or ``p`` itself as a file
        out.append((posixpath.basename(d["name"].rstrip("/")), int(d.get("size") or 0), mtime_ms(d),
                    d.get("type") == "directory"))
    return out


def list_names(fs: Any, p: str, prefix: str) -> list[str]:
    """Names directly under ``p`` starting with ``prefix`` (only those keys are listed)."""
    base = p.rstrip("/") + "/"
    try:
        found = fs.find(base, prefix=prefix) if prefix else [d["name"] for d in fs.ls(p, detail=True)]
    except FileNotFoundError:
        return []
    out = set()
    for full in found:
        rest = full[len(base):] if full.startswith(base) else posixpath.basename(full.rstrip("/"))
        name = rest.split("/", 1)[0]
        if name and name.startswith(prefix):
            out.add(name)
    return sorted(out)


def list_tree(fs: Any, p: str) -> list[tuple[str, int, int]]:
    """(key below ``p``, size, mtime ms) of every object under the prefix: one paged listing."""
    base = p.rstrip("/") + "/"
    try:
        found = fs.find(base, detail=True)
    except FileNotFoundError:
        return []
    return sorted((name[len(base):], int(d.get("size") or 0), mtime_ms(d)) for name, d in found.items()
                  if name.startswith(base) and d.get("type") != "directory" and not name.endswith("/"))


def delete_batch(fs: Any, urls: list[str], delete_one: Callable[[str], None]) -> dict[str, str]:
    """Delete objects in batches (s3fs ``rm`` of a list: DeleteObjects, 1000 keys a request);
    a batch that fails is retried one object at a time to name the failures. path -> error."""
    failed: dict[str, str] = {}
    for start in range(0, len(urls), _BATCH):
        chunk = urls[start:start + _BATCH]
        try:
            fs.rm([fs._strip_protocol(u) for u in chunk])
        except FileNotFoundError:
            pass
        except Exception:  # noqa: BLE001 - one at a time, to report which failed and why
            for url in chunk:
                try:
                    delete_one(url)
                except (NotFound, StorageError) as e:
                    failed[url] = str(e)
    return failed


# -- conditional creates --------------------------------------------------------------------------

def put_if_absent(fs: Any, scheme: str, p: str, data: bytes) -> None:
    """One conditional create; FileExistsError (or an error :func:`precondition_failed`
    recognises) when the object exists."""
    if scheme in ("az", "abfs", "abfss"):
        fs.pipe_file(p, data, overwrite=False)
    elif scheme in CONDITIONAL_STORES:
        fs.pipe_file(p, data, mode="create")
    else:
        with fs.open(p, "xb") as f:
            f.write(data)


def create_if_absent(put: Callable[[], None], read: Callable[[], bytes], url: str, data: bytes,
                     attempts: int = 4, before: Callable[[], None] | None = None) -> None:
    """Create ``url`` holding ``data`` only if absent; DestinationExists when another writer's
    object has the name.

    An unknown outcome (a timeout, a 5xx, a 409, a reset connection), and a client's own retry
    of a PUT that did land (refused with 412), are settled by reading the object back: our bytes
    -> created; other bytes -> DestinationExists; absent -> the conditional create is tried
    again (it can never overwrite). Nothing is deleted to settle it. When reading back cannot
    tell, CommitStateUnknown."""
    if not data:
        raise StorageError(f"cannot create {url} conditionally: empty objects are not supported")
    last = ""
    for attempt in range(max(1, attempts)):
        if before is not None:
            before()
        try:
            put()
            return
        except Exception as e:  # noqa: BLE001 - sorted below
            if not precondition_failed(e):
                failure = remote_error("write", url, e)
                text = str(failure)
                if isinstance(failure, NotFound) or "access denied" in text or "no credentials" in text:
                    raise failure from e  # refused outright: nothing was written
                last = text
        try:
            if holds_ours(url, lambda: read() == data):
                return
        except NotFound:
            pass  # not there: try again
        except DestinationExists:
            raise
        except (StorageError, Exception) as e:  # noqa: BLE001 - cannot tell
            last = last or f"reading it back failed: {e}"
        if attempt + 1 < attempts:
            time.sleep(0.05 * 2 ** attempt)
    raise CommitStateUnknown(f"cannot tell whether {url} was created ({last}): it is kept; "
                             "check the table before retrying")


def holds_ours(url: str, same: Callable[[], bool]) -> bool:
    """Settle a conditional create by reading the object back: True when it holds the bytes we
    wrote (``same()``: ours landed, e.g. the client's retry of a PUT that did land was refused
    with 412); DestinationExists when it holds other bytes; NotFound when it is absent. The one
    read-back rule of commits (:func:`create_if_absent`) and uploads (:class:`CreatedFile`)."""
    if same():
        return True
    raise DestinationExists(url)


class CreatedFile:
    """A file being uploaded with a conditional create (``open(..., "xb")``), hashed as it is
    written. Closing it sends the final PUT; a refusal because the object exists (412: the
    client retried a PUT whose answer was lost, and the first one landed) is settled by reading
    the object back (:func:`holds_ours`: same size and SHA-256 -> uploaded). Other bytes there
    -> DestinationExists."""

    def __init__(self, f: Any, fs: Any, p: str, url: str):
        import hashlib

        self._f, self._fs, self._p, self._url = f, fs, p, url
        self._sha = hashlib.sha256()
        self._size = 0

    def write(self, data: Any) -> Any:
        n = self._f.write(data)
        self._sha.update(data)
        self._size += len(memoryview(data).cast("B"))
        return n

    def close(self) -> None:
        if self._f.closed:
            return
        try:
            self._f.close()
        except Exception as e:  # noqa: BLE001 - sorted below
            if not precondition_failed(e):
                raise
            try:
                holds_ours(self._url, self._same)
            except NotFound:
                raise remote_error("write", self._url, e) from e

    def _same(self) -> bool:
        import hashlib

        sha, size = hashlib.sha256(), 0
        with self._fs.open(self._p, "rb") as r:
            for chunk in iter(lambda: r.read(8 << 20), b""):
                sha.update(chunk)
                size += len(chunk)
        return size == self._size and sha.digest() == self._sha.digest()

    @property
    def closed(self) -> bool:
        return self._f.closed

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)


# store key -> True (honours create-if-absent) / False; positive answers are also kept in the
# cache directory so that later processes do not probe again
_answers: dict[str, bool] = {}


def answers_file() -> str:
    from icectl.io.storage.cache_dir import cache_root

    return os.path.join(cache_root(), "conditional-create.json")


def _remembered(key: str) -> bool | None:
    if key in _answers:
        return _answers[key]
    try:
        with open(answers_file(), encoding="utf-8") as f:
            if json.load(f).get(key) is True:
                _answers[key] = True
                return True
    except (OSError, ValueError, AttributeError):
        pass
    return None


def _remember(key: str, honoured: bool) -> None:
    _answers[key] = honoured
    if not honoured:
        return  # a refusal is checked again by the next process (the store may have been fixed)
    path = answers_file()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            data = data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            data = {}
        data[key] = True
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f)
        os.replace(tmp, path)
    except OSError:
        pass  # remembered in this process only


def _connection_string_endpoint(text: Any) -> str:
    """The account of an Azure connection string: its BlobEndpoint, else its AccountName."""
    fields = dict(part.split("=", 1) for part in str(text or "").split(";") if "=" in part)
    return fields.get("BlobEndpoint") or fields.get("AccountName") or ""


def store_key(options: dict[str, Any], url: str) -> str:
    """Which store ``url`` is on: its endpoint (or account) and bucket."""
    client = options.get("client_kwargs") if isinstance(options.get("client_kwargs"), dict) else {}
    endpoint = (options.get("endpoint_url") or client.get("endpoint_url")
                or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
                or _connection_string_endpoint(options.get("connection_string")
                                               or os.environ.get("AZURE_STORAGE_CONNECTION_STRING"))
                or options.get("account_name") or os.environ.get("AZURE_STORAGE_ACCOUNT_NAME") or "")
    return f"{endpoint}|{bucket_url(url)}"


def require_conditional_creates(fs: Any, scheme: str, url: str, options: dict[str, Any]) -> None:
    """Prove once per store (bucket and endpoint) that it honours create-if-absent, before
    anything is written there; UnsafeStorage when it does not (unless the storage option
    ``icectl.unsafe-commits`` is true).

    The proof: a probe object next to ``url`` (``_icectl-probe-<uuid>``; names starting with
    ``_`` are never table files) created twice with a conditional create; the second create
    must be refused. The probe object is deleted after. A positive answer is remembered in the
    cache directory (``conditional-create.json``)."""
    if unsafe_commits(options) or scheme == "memory":
        return
    key = store_key(options, url)
    known = _remembered(key)
    if known is None:
        known = _probe(fs, scheme, url)
        _remember(key, known)
    if not known:
        condition = "ifGenerationMatch=0" if scheme in ("gs", "gcs") else "If-None-Match"
        raise UnsafeStorage(
            f"{bucket_url(url)} does not honour conditional creates ({condition}), so concurrent "
            f"commits could silently overwrite each other; nothing was written (to write anyway, "
            f"set the storage option {UNSAFE_COMMITS}=true)")


def _probe(fs: Any, scheme: str, url: str) -> bool:
    probe = posixpath.join(posixpath.dirname(url), f"_icectl-probe-{uuid.uuid4()}")
    p = fs._strip_protocol(probe)
    try:
        call("write", probe, lambda: put_if_absent(fs, scheme, p, b"icectl conditional-create probe 1"))
        try:
            put_if_absent(fs, scheme, p, b"icectl conditional-create probe 2")
        except Exception as e:  # noqa: BLE001
            if precondition_failed(e):
                return True
            raise remote_error("write", probe, e) from e
        return False
    finally:
        try:
            fs.rm(p)
        except Exception:  # noqa: BLE001 - the probe is hidden (``_``) anyway
            pass
