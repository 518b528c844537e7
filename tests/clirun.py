"""The one way tests run the ``icectl`` command line.

- :func:`icectl` runs it in this process: typer's ``CliRunner`` isolation (stdout and stderr kept
  apart, stdin from ``input``, environment overrides) around :func:`icectl.cli.entry.main`, the
  very function the installed ``icectl`` script calls -- so a plain ``plan`` takes the fast parser
  of cli/entry.py and everything else goes through typer, as for a user. The process exit of the
  fast path (``os._exit``) becomes the returned exit code; an exception that escapes is printed
  as Python prints it and gives exit code 1, as a real process would. Whatever a run changes in
  this process (environment, working directory, signal handlers, sys.argv, the CLI's process-wide
  settings such as ``--field``, ``--no-cache`` and ``--storage-option``, logging handlers) is put
  back afterwards, so runs cannot leak into each other or into the test. A signal that reaches
  the test process during a run (Ctrl-C) stops the test run (KeyboardInterrupt).
- :func:`icectl_process` runs it as a child process (``python -m icectl``; ``script=True``: the
  installed ``icectl`` script). Use it only for what needs a real process: start-up, exit codes
  from signals, the installed script, concurrency, and anything that relies on process state
  (signal handlers, process pools, the inherited environment).

Both return a ``subprocess.CompletedProcess`` (``returncode``, ``stdout``, ``stderr`` as text) and
never raise on a non-zero exit; :func:`icectl_json` asserts success and parses ``--json`` output.
``env`` holds overrides of the current environment (a value of None removes the variable).
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import traceback
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from unittest import mock

from typer.testing import CliRunner

_SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))

# process-wide settings of the CLI: (module, global) put back after every in-process run
_PROCESS_STATE = (
    ("icectl.cli.output", "_selected_fields"),
    ("icectl.io.manifest.cache", "_enabled"),
    ("icectl.io.storage.objectstore", "_process_options"),
    ("icectl.cli.runner", "_catalog_choice"),
    ("icectl.command_files", "_received"),
    ("icectl.command_files", "_reg"),
)


class Run(subprocess.CompletedProcess):
    """A finished icectl run; ``exit_code`` and ``output`` (stdout, then stderr) as well, the
    names of typer's test runner."""

    @property
    def exit_code(self) -> int:
        return self.returncode

    @property
    def output(self) -> str:
        return (self.stdout or "") + (self.stderr or "")


def _argv(args: tuple[Any, ...]) -> list[str]:
    return [str(a) for a in args]


@contextlib.contextmanager
def process_state_kept(logging_too: bool = True) -> Iterator[None]:
    """Put back what code run in this process may change of the process: the environment, the
    working directory, the terminal signals' handlers, sys.argv, the garbage collector's switch,
    the CLI's process-wide settings and (``logging_too``) the root logger's handlers and level
    (not around a whole test: pytest changes those between a test's phases)."""
    import importlib

    env = dict(os.environ)
    cwd = os.getcwd()
    gc_enabled = gc.isenabled()  # the fast plan path turns the collector off
    argv = list(sys.argv)
    handlers = {s: signal.getsignal(s) for s in _SIGNALS}
    root = logging.getLogger()
    log_handlers, log_level = list(root.handlers), root.level
    saved = []
    for module_name, name in _PROCESS_STATE:
        module = importlib.import_module(module_name)
        if hasattr(module, name):
            saved.append((module, name, getattr(module, name)))
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)
        if logging_too:
            root.handlers[:] = log_handlers
            root.setLevel(log_level)
        for s, h in handlers.items():
            if signal.getsignal(s) is not h and h is not None:
                signal.signal(s, h)
        sys.argv[:] = argv
        if gc_enabled and not gc.isenabled():
            gc.enable()
        if os.getcwd() != cwd:
            os.chdir(cwd)
        if dict(os.environ) != env:
            os.environ.clear()
            os.environ.update(env)


def _raise_exit(code: int) -> None:
    """cli/entry.py's end of a one-shot process (``os._exit``), as an exception in a test."""
    from icectl.cli.runner import flush_output

    raise SystemExit(flush_output(code))


def _exit_code(e: SystemExit) -> int:
    if e.code is None:
        return 0
    if isinstance(e.code, int):
        return e.code
    print(e.code, file=sys.stderr)  # as the interpreter does with a non-integer exit value
    return 1


def icectl(*args: Any, env: Mapping[str, str | None] | None = None, cwd: str | Path | None = None,
           input: str | bytes | None = None, timeout: float | None = None,
           ) -> subprocess.CompletedProcess[str]:
    """Run ``icectl ARGS...`` in this process (see the module docstring). ``timeout`` is accepted
    for the same signature as :func:`icectl_process` and not enforced."""
    from icectl import command_files
    from icectl.cli import entry

    argv = _argv(args)
    runner = CliRunner()
    with process_state_kept(), mock.patch.object(entry, "_exit_now", _raise_exit), \
            runner.isolation(input=input, env=dict(env or {})) as (out, err, _):
        if cwd is not None:
            os.chdir(cwd)
        sys.argv[:] = ["icectl", *argv]
        try:
            entry.main()
            code = 0
        except SystemExit as e:
            code = _exit_code(e)
        except Exception:  # noqa: BLE001 - a real process prints it and exits 1
            traceback.print_exc()
            code = 1
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        stdout = out.getvalue().decode("utf-8", errors="replace")
        stderr = err.getvalue().decode("utf-8", errors="replace")
        signalled = command_files.received_signal()
    if signalled is not None:  # Ctrl-C (or SIGTERM) meant for the test run, not for this command
        raise KeyboardInterrupt(f"signal {signalled} during an in-process icectl run")
    return Run(["icectl", *argv], code, stdout, stderr)


def process_env(env: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """The environment of a child icectl: this process's, with ``env``'s overrides."""
    out = dict(os.environ)
    for k, v in (env or {}).items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


def icectl_argv(*args: Any, script: bool = False) -> list[str]:
    """The argv of a child ``icectl ARGS...``: ``python -m icectl`` (``script``: the installed
    ``icectl`` script of this environment)."""
    if script:
        found = Path(sys.executable).with_name("icectl")
        exe = str(found) if found.exists() else shutil.which("icectl")
        assert exe, "the icectl script is not installed in this environment"
        return [exe, *_argv(args)]
    return [sys.executable, "-m", "icectl", *_argv(args)]


def icectl_process(*args: Any, env: Mapping[str, str | None] | None = None,
                   cwd: str | Path | None = None, input: str | bytes | None = None,
                   timeout: float = 120, script: bool = False) -> subprocess.CompletedProcess[str]:
    """Run ``icectl ARGS...`` as a child process (see the module docstring); stdin is empty
    unless ``input`` is given."""
    if isinstance(input, bytes):
        input = input.decode()
    return subprocess.run(icectl_argv(*args, script=script), capture_output=True, text=True,
                          env=process_env(env), cwd=cwd, timeout=timeout,
                          input=input if input is not None else "")


def icectl_json(*args: Any, process: bool = False, **kw: Any) -> Any:
    """Run ``icectl ARGS... --json`` (in this process unless ``process``); assert it succeeded
    and return the parsed output."""
    run = icectl_process if process else icectl
    done = run(*args, "--json", **kw)
    assert done.returncode == 0, (
        f"icectl {' '.join(_argv(args))} exited {done.returncode}\nstderr:\n{done.stderr}")
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError as exc:  # pragma: no cover - shown as the failure reason
        raise AssertionError(f"icectl --json printed no JSON: {exc}\n{done.stdout[:2000]}") from None


def without_user_settings(**extra: str | None) -> dict[str, str | None]:
    """Environment overrides that clear every ``ICECTL_*`` variable of the developer's shell
    (the test run's own manifest cache directory stays), plus ``extra``."""
    out: dict[str, str | None] = {k: None for k in os.environ
                                  if k.startswith("ICECTL_") and k != "ICECTL_CACHE_DIR"}
    out.update(extra)
    return out


def replacing_env(full: Mapping[str, str]) -> dict[str, str | None]:
    """Overrides that make the environment exactly ``full`` (for :func:`icectl`'s ``env``)."""
    out: dict[str, str | None] = {k: None for k in os.environ if k not in full}
    out.update(full)
    return out
