"""A Ctrl-C that reaches a worker process while its interpreter is still starting.

A terminal sends SIGINT to the whole process group, so a worker spawned a moment before gets it
during its start-up, before its pool initializer ignores it. Such a worker must hold the signal
(blocked, then discarded by the initializer) rather than die with a KeyboardInterrupt traceback
on the user's terminal: the driver alone decides what the Ctrl-C means.

Each case runs in a child Python process (signal masks and handlers are process state) that
signals every worker of its own the moment it has started it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

PROGRAM = textwrap.dedent("""
    import multiprocessing.process, os, signal

    from icectl import command_files
    from icectl.engines import LocalEngine

    def square(x):
        return x * x

    hit = []
    real_start = multiprocessing.process.BaseProcess.start

    def start_then_signal(self):
        # the worker's interpreter has only just been started: Ctrl-C reaches it now
        real_start(self)
        os.kill(self.pid, signal.SIGINT)
        hit.append(self.pid)

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
        multiprocessing.process.BaseProcess.start = start_then_signal
        for round in range(3):
            got = LocalEngine(workers=2).map(square, range(8))
            assert got == [x * x for x in range(8)], got
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
    assert int(done.stdout.strip()) >= 3, done.stdout  # at least one worker a map was signalled
