"""moto's S3 server with conditional writes made atomic, as S3's are.

moto checks ``If-None-Match: *`` and then stores the object in two steps, and its server handles
requests on many threads: two writers racing to create one name can both pass the check, and
the later one silently replaces the earlier one's object, which real S3 never allows. The race
tests would then report an acknowledged commit as lost when it was the emulator that lost it.
This runs the same server with each object PUT and each multipart completion (the requests that
carry the condition) taken under one lock, so the check and the store happen as one step.

    python tests/objectstore/moto_atomic.py -H 127.0.0.1 -p PORT
"""

from __future__ import annotations

import functools
import sys
import threading

from moto.s3.responses import S3Response
from moto.server import main

_lock = threading.Lock()


def _atomic(method):
    @functools.wraps(method)
    def under_lock(self, *args, **kwargs):
        with _lock:
            return method(self, *args, **kwargs)
    return under_lock


S3Response.put_object = _atomic(S3Response.put_object)
S3Response._key_response_post = _atomic(S3Response._key_response_post)

if __name__ == "__main__":
    main(sys.argv[1:])
