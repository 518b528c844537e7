"""Testing hook, for the fault-injection tests only: with ``ICECTL_FAULT_KILL_AT=N`` the process
sends itself SIGKILL just before its Nth file write, rename or delete (counting from 1); with
``ICECTL_FAULT_STOP_AT=N`` it sends SIGSTOP instead (the test resumes it with SIGCONT). Every
store calls :func:`before_change` before each change it sends; unset, the only cost is one
comparison per operation."""

from __future__ import annotations

import os

__all__ = ["ARMED", "before_change"]


def _fault_at(name: str) -> int:
    value = os.environ.get(name, "")
    return int(value) if value.isdigit() else 0


_KILL_AT = _fault_at("ICECTL_FAULT_KILL_AT")
_STOP_AT = _fault_at("ICECTL_FAULT_STOP_AT")
ARMED = bool(_KILL_AT or _STOP_AT)
_ops = 0


def before_change() -> None:
    """Called before every file write, rename and delete (see above)."""
    global _ops
    if not ARMED:
        return
    _ops += 1
    import signal

    if _ops == _KILL_AT:
        os.kill(os.getpid(), signal.SIGKILL)
    if _ops == _STOP_AT:
        os.kill(os.getpid(), signal.SIGSTOP)
