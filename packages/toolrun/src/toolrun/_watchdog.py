"""The watchdog launcher: runs one command and makes sure it dies with the process that started it.

Run as a script, never imported by the package (it must start fast and alone)::

    python -I -S _watchdog.py PARENT_PID NICE COMMAND [ARG ...]

Linux only (see :mod:`toolrun._spawn`, which builds these command lines). The launcher

1. checks that ``PARENT_PID`` is still its parent (it may have died while this one started),
2. leads its own process group (unless it already does), so the command and everything the
   command starts can be signalled at once,
3. forks the command (its nice value raised by ``NICE``) with ``PR_SET_PDEATHSIG = SIGKILL``:
   the kernel kills the command when the launcher dies, even by ``SIGKILL``. The launcher has a
   single thread, so the signal is bound to its whole life (the parent-death signal fires when
   the *thread* that forked exits, which is why it is not set on the command directly: a
   spawner may fork from any of its threads, as pydantic-monty forks from its runtime's),
4. waits for whichever comes first: the command exits (what it left in the group is killed, and
   the launcher exits the same way, so its spawner sees the command's status), or the parent is
   gone (a pidfd of the parent becomes readable; ``getppid()`` is polled where pidfds are
   missing). Then it sends ``SIGTERM`` to its process group, waits up to one second for the
   command, and ends with ``SIGKILL`` to the group, itself included.

Termination signals sent to the launcher alone (``SIGTERM``, ``SIGINT``, ``SIGHUP``, ``SIGQUIT``,
``SIGUSR1``, ``SIGUSR2``) are passed on to the command. A signal sent to the whole group (as the MCP
SDK does) reaches the command directly and once more through the launcher; a second termination
signal to a process already shutting down is harmless for the servers we start.
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource
import select
import signal
import sys

# Not importing typing at run time saves the launcher's start a few milliseconds.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from types import FrameType
    from typing import NoReturn

_PR_SET_PDEATHSIG = 1
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
_GRACE_MS = 1000
"""How long the command may take to exit on SIGTERM after the parent is gone."""
_POLL_MS = 250
"""How often the parent is checked where pidfds are unavailable."""
_USAGE = 2
_PARENT_GONE = 1


def _say(message: str) -> None:
    try:
        os.write(2, f"toolrun watchdog: {message}\n".encode(errors="replace"))
    except OSError:
        pass  # nowhere left to report to


def _pidfd(pid: int) -> int | None:
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return int(opener(pid))
    except OSError:
        return None  # ESRCH: already gone (checked by the caller); ENOSYS: kernel before 5.3


def _exec_child(command: list[str], launcher: int, nice: int, old_mask: Iterable[int], libc: ctypes.CDLL) -> NoReturn:
    try:
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != launcher:  # the launcher died before the death signal was armed
            os._exit(_PARENT_GONE)
        if nice:
            os.nice(nice)
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        os.execvp(command[0], command)
    except OSError as e:
        _say(f"cannot start {command[0]!r}: {e.strerror or e}")
        os._exit(127 if e.errno == errno.ENOENT else 126)


def _release_inherited_fds(keep: set[int]) -> None:
    # The command holds the pipes it was given; the launcher must not keep them open after it
    # is gone (its spawner would wait for an EOF that never comes).
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass  # the directory's own descriptor, closed by now


def _exit_like(status: int) -> NoReturn:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        # The spawner sees the same signal death; no core file from the launcher itself.
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.Signals(sig)})
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _kill_rest_of_group(me: int) -> None:
    """Kill what the command left in the group when it exits, the launcher spared (it exits like the command).

    A server that crashed while a child of its own held its stdout would leave its client waiting
    for an end of stream that never comes, and the child running after everything else is gone.
    """
    if os.getpgrp() != me:
        return  # never signal a group not ours
    for _ in range(3):  # what forks while it is being killed is found on the next pass
        found = False
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == me:
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    stat = f.read()
                # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
                if int(stat[stat.rindex(b")") + 2 :].split()[2]) == me:
                    os.kill(int(name), signal.SIGKILL)
                    found = True
            except (OSError, ValueError, IndexError):
                continue  # gone meanwhile, or not readable
        if not found:
            return


def _kill_group(child: int, child_fd: int | None) -> NoReturn:
    for sig in _FORWARDED:
        signal.signal(sig, signal.SIG_IGN)
    if os.getpgrp() != os.getpid():  # never the case after main's setpgid; never signal a group not ours
        os.kill(child, signal.SIGKILL)
        os._exit(_PARENT_GONE)
    try:
        os.killpg(0, signal.SIGTERM)
        poller = select.poll()
        if child_fd is not None:
            poller.register(child_fd, select.POLLIN)
        for _ in range(_GRACE_MS // _POLL_MS):
            if os.waitpid(child, os.WNOHANG)[0]:
                break
            poller.poll(_POLL_MS)
    finally:
        # Whatever the command left behind in the group goes too; this ends the launcher as well.
        os.killpg(0, signal.SIGKILL)
    os._exit(_PARENT_GONE)  # not reached: SIGKILL cannot be caught


def main(argv: list[str]) -> NoReturn:
    """Run ``argv[3:]`` at nice ``argv[2]`` under the watchdog of parent ``argv[1]``; exits as the command exits."""
    if len(argv) < 4 or not argv[1].isdigit() or not argv[2].isdigit():
        _say("usage: _watchdog.py PARENT_PID NICE COMMAND [ARG ...]")
        os._exit(_USAGE)
    parent, nice, command = int(argv[1]), int(argv[2]), argv[3:]
    if os.getppid() != parent:
        os._exit(_PARENT_GONE)
    if os.getpgrp() != os.getpid():
        try:
            os.setpgid(0, 0)
        except OSError:
            pass  # a session leader cannot move; it already leads its group

    me = os.getpid()
    libc = ctypes.CDLL(None, use_errno=True)
    # Blocked until the handlers know the child's pid, so no signal is lost or handled too early.
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, _FORWARDED)
    child = os.fork()
    if child == 0:
        _exec_child(command, me, nice, old_mask, libc)

    def forward(signum: int, frame: FrameType | None) -> None:
        try:
            os.kill(child, signum)
        except ProcessLookupError:
            pass  # already exited; the wait below reports it

    for sig in _FORWARDED:
        signal.signal(sig, forward)
    signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)

    parent_fd = _pidfd(parent)
    child_fd = _pidfd(child)
    _release_inherited_fds({fd for fd in (parent_fd, child_fd) if fd is not None})
    # Checked after opening the pidfd: while we are still its child, its pid cannot be reused.
    if os.getppid() != parent:
        _kill_group(child, child_fd)
    poller = select.poll()
    for fd in (parent_fd, child_fd):
        if fd is not None:
            poller.register(fd, select.POLLIN)
    timeout = None if parent_fd is not None and child_fd is not None else _POLL_MS
    while True:
        poller.poll(timeout)
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            _kill_rest_of_group(me)
            _exit_like(status)
        if os.getppid() != parent:
            _kill_group(child, child_fd)


if __name__ == "__main__":
    main(sys.argv)
