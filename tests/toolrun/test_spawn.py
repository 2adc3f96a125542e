"""The watchdog launcher: a command started through it behaves as itself and dies with its starter."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from toolrun import WATCHDOG_SUPPORTED, watchdog_command, watchdog_executable

pytestmark = pytest.mark.skipif(not WATCHDOG_SUPPORTED, reason="the watchdog launcher is Linux-only")

# A parent that starts `sh` (which starts two `sleep`s of its own) through the watchdog, prints the
# launcher's pid (and `sh` says when its children run), then waits to be killed.
PARENT = textwrap.dedent(
    """
    import subprocess, sys, time
    from toolrun import watchdog_command
    command, args = watchdog_command("sh", ["-c", "sleep 300 & sleep 301 & echo ready; wait"])
    launcher = subprocess.Popen([command, *args], start_new_session=sys.argv[1] == "session")
    print(launcher.pid, flush=True)
    time.sleep(600)
    """
)


GONE_S = 60.0
"""How long the processes may take to go: they go at once; a process left behind sleeps for 300 s."""


def run(command: str, args: list[str], **kwargs: object) -> subprocess.CompletedProcess[bytes]:
    program, argv = watchdog_command(command, args)
    return subprocess.run([program, *argv], timeout=30, check=False, **kwargs)  # type: ignore[call-overload]


def wait_gone(pids: list[int], timeout: float) -> list[str]:
    """Wait on pidfds (no polling) until every process has exited; return the survivors."""
    fds: list[int] = []
    for pid in pids:
        try:
            fds.append(os.pidfd_open(pid))
        except ProcessLookupError:
            continue
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    deadline = time.monotonic() + timeout
    try:
        pending = set(fds)
        while pending and time.monotonic() < deadline:
            for fd, _ in poller.poll(max(0.0, deadline - time.monotonic()) * 1000):
                poller.unregister(fd)
                pending.discard(fd)
    finally:
        for fd in fds:
            os.close(fd)
    alive: list[str] = []
    for pid in pids:
        try:
            p = psutil.Process(pid)
            if p.status() != psutil.STATUS_ZOMBIE:
                alive.append(f"{pid} {' '.join(p.cmdline())}")
        except psutil.NoSuchProcess:
            pass
    return alive


def test_exit_status_signal_and_stdio_are_the_commands() -> None:
    assert run("sh", ["-c", "exit 7"]).returncode == 7
    assert run("sh", ["-c", "kill -TERM $$"]).returncode == -signal.SIGTERM
    echoed = run("sh", ["-c", "cat; echo done >&2"], input=b"hello", capture_output=True)
    assert (echoed.stdout, echoed.stderr) == (b"hello", b"done\n")


def test_a_command_that_cannot_be_found_fails_the_usual_way() -> None:
    assert watchdog_command("no-such-program-xyz", ["a"]) == ("no-such-program-xyz", ["a"])
    with pytest.raises(FileNotFoundError):
        run("no-such-program-xyz", [])


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
@pytest.mark.parametrize("session", ["session", "group"])
def test_the_command_and_its_children_die_with_the_parent(sig: signal.Signals, session: str) -> None:
    # "session": started in a session of its own, as the MCP SDK starts stdio servers;
    # "group": in the parent's process group, as pydantic-monty starts its workers.
    with subprocess.Popen([sys.executable, "-c", PARENT, session], stdout=subprocess.PIPE, text=True) as parent:
        try:
            assert parent.stdout is not None
            launcher = psutil.Process(int(parent.stdout.readline()))
            assert parent.stdout.readline() == "ready\n"
            tree = [launcher, *launcher.children(recursive=True)]
            assert len(tree) == 4  # the launcher, `sh` and the two `sleep`s
            parent.send_signal(sig)
            parent.wait(timeout=10)
            assert wait_gone([p.pid for p in tree], GONE_S) == []
        finally:
            parent.kill()


def test_the_command_dies_when_the_launcher_is_killed() -> None:
    # pydantic-monty kills an overrunning worker with SIGKILL to the pid it started: the launcher.
    program, args = watchdog_command("sh", ["-c", "echo ready; exec sleep 300"])
    with subprocess.Popen([program, *args], stdout=subprocess.PIPE) as launcher:
        try:
            assert launcher.stdout is not None
            assert launcher.stdout.readline() == b"ready\n"
            (child,) = psutil.Process(launcher.pid).children()
            launcher.kill()
            assert launcher.wait(timeout=10) == -signal.SIGKILL
            assert wait_gone([child.pid], GONE_S) == []
        finally:
            launcher.kill()


def test_what_the_command_left_behind_goes_when_it_exits() -> None:
    # A server that crashed while a child of its own still held its stdout: its client never saw
    # the end of the stream (every call waited for its timeout), and the child outlived everything.
    program, args = watchdog_command("sh", ["-c", "sleep 300 & echo $!; exit 5"])
    with subprocess.Popen([program, *args], stdout=subprocess.PIPE) as launcher:
        try:
            assert launcher.stdout is not None
            left = int(launcher.stdout.readline())
            # The end of the stream comes (nobody holds it any more); bounded, as a real hang would not.
            assert select.select([launcher.stdout], [], [], GONE_S)[0], "stdout is still held open"
            assert launcher.stdout.read() == b""
            assert launcher.wait(timeout=30) == 5  # the command's own status, as before
            assert wait_gone([left], GONE_S) == []
        finally:
            launcher.kill()


def test_a_termination_signal_to_the_launcher_reaches_the_command() -> None:
    script = "trap 'echo stopping; exit 3' TERM; echo ready; while :; do sleep 0.05; done"
    program, args = watchdog_command("sh", ["-c", script])
    with subprocess.Popen([program, *args], stdout=subprocess.PIPE) as launcher:
        try:
            assert launcher.stdout is not None
            assert launcher.stdout.readline() == b"ready\n"
            launcher.terminate()
            assert launcher.wait(timeout=10) == 3
            assert launcher.stdout.read() == b"stopping\n"
        finally:
            launcher.kill()


def test_executable_script_runs_the_program_at_the_given_nice() -> None:
    script = watchdog_executable("/bin/sh", nice=5)
    assert script != "/bin/sh" and os.access(script, os.X_OK)
    assert watchdog_executable("/bin/sh", nice=5) == script  # written once
    out = subprocess.run([script, "-c", 'echo "$1"; ps -o ni= -p $$', "sh", "a b"], capture_output=True, timeout=30)
    assert out.stdout.split(b"\n")[0] == b"a b"
    assert int(out.stdout.split(b"\n")[1]) == os.getpriority(os.PRIO_PROCESS, 0) + 5


@pytest.mark.parametrize("nice", [-1, 20])
def test_nice_out_of_range_is_refused(nice: int) -> None:
    with pytest.raises(ValueError, match="nice must be an integer from 0 to 19"):
        watchdog_command("sh", nice=nice)
