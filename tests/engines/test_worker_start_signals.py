"""A Ctrl-C that reaches a worker process while its interpreter is still starting.

A terminal sends SIGINT to the whole process group, so a worker spawned a moment before gets it
during its start-up, before its pool initializer ignores it. Such a worker must hold the signal
(blocked, then discarded by the initializer) rather than die with a KeyboardInterrupt traceback
on the user's terminal: the driver alone decides what the Ctrl-C means.

Each case runs in a child Python process (signal masks and handlers are process state) that
signals every worker of its own the moment the worker appears.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

PROGRAM = textwrap.dedent("""
    import os, signal, sys, threading, time

    from icectl import command_files
    from icectl.engines import LocalEngine

    def square(x):
        return x * x

    def children(me):
        out = []
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    status = open(f"/proc/{d}/status").read()
                except OSError:
                    continue
                if f"\\nPPid:\\t{me}\\n" in status:
                    out.append(int(d))
        return out

    def signal_new_children(me, stop, hit):
        seen = set(children(me))  # helpers started before the pool (none expected)
        while not stop.is_set():
            for pid in children(me):
                if pid not in seen:
                    seen.add(pid)
                    try:
                        os.kill(pid, signal.SIGINT)
                        hit.append(pid)
                    except ProcessLookupError:
                        pass
            time.sleep(0.001)

    if __name__ == "__main__":
        command_files.install_signal_handlers()
        # the mask while workers start, and after
        blocked = set(command_files.SIGNALS)
        for spawn in (True, False):
            with command_files.starting_workers(spawn=spawn):
                inside = set(signal.pthread_sigmask(signal.SIG_BLOCK, []))
            after = set(signal.pthread_sigmask(signal.SIG_BLOCK, []))
            assert blocked <= inside, (spawn, inside)
            assert not (blocked & after), (spawn, after)
        stop, hit = threading.Event(), []
        t = threading.Thread(target=signal_new_children, args=(os.getpid(), stop, hit), daemon=True)
        t.start()
        try:
            for round in range(3):
                got = LocalEngine(workers=2).map(square, range(8))
                assert got == [x * x for x in range(8)], got
        finally:
            stop.set()
            t.join()
        print(len(hit))
""")


def test_a_worker_signalled_while_starting_holds_the_signal(tmp_path) -> None:
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    done = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert "KeyboardInterrupt" not in done.stderr, done.stderr
    # every worker (2 per map) and the resource tracker were signalled while starting
    assert int(done.stdout.strip()) >= 6, done.stdout
