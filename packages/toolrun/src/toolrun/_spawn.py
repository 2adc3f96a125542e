"""Child processes that die with this process: command lines that run under the watchdog launcher.

Cleanup handlers do not run when a process is killed by ``SIGKILL`` or crashes, and an MCP
server or a sandbox worker left behind keeps running (a CPU-bound snippet at 100 % until its own
timeout). On Linux, :func:`watchdog_command` and :func:`watchdog_executable` start a command
through a small launcher (``toolrun/_watchdog.py``, run by this Python with ``-I -S``) that ties
the command's life to this process with the operating system's means — a parent-death signal,
a pidfd of this process and a process group — so the command and everything it started are
gone within about a second of this process's end, however it ends. The launcher costs one
extra small Python process per command, once, when the command starts.

On other platforms both functions return the command unchanged (plain exec): there the
command outlives a killed parent unless the spawner's own cleanup runs.
"""

from __future__ import annotations

import atexit
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from toolindex.log import get_logger

__all__ = ["WATCHDOG_SUPPORTED", "watchdog_command", "watchdog_executable"]

_log = get_logger("toolrun.spawn")

WATCHDOG_SUPPORTED: bool = sys.platform == "linux" and bool(sys.executable)
"""Whether commands started here are tied to this process's life (Linux, with a known Python)."""

_LAUNCHER = str(Path(__file__).with_name("_watchdog.py"))
_DIR_PREFIX = "toolrun-watchdog-"
_scripts: dict[tuple[int, str, int], str] = {}
_script_dirs: dict[int, str] = {}


def watchdog_command(
    command: str,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    nice: int = 0,
) -> tuple[str, list[str]]:
    """The command line that runs ``command`` so that it dies with this process.

    Pass the result to any process-starting API in place of ``command`` and ``args`` (for
    example ``mcp.StdioServerParameters``). The command gets the stdin, stdout, stderr,
    environment and working directory given to the launcher, and the launcher exits with the
    command's exit status (or dies by the same signal).

    Args:
        command: The program, as it would be passed to ``exec`` (a name found on ``PATH``, or a path).
        args: Its arguments.
        env: The environment the command will be started with (its ``PATH`` finds the program).
        cwd: The directory it will be started in (a relative ``command`` is found from there).
        nice: How much lower the command's scheduling priority is than this process's (0 to 19).

    Returns:
        ``(program, arguments)``: the launcher's, or ``(command, list(args))`` unchanged where
        the watchdog is unsupported or the program cannot be found (so that starting it fails
        the usual way, with ``FileNotFoundError``).

    Raises:
        ValueError: If ``nice`` is not between 0 and 19.
    """
    if not WATCHDOG_SUPPORTED or not _can_exec(command, env, cwd):
        return command, list(args)
    return sys.executable, ["-I", "-S", _LAUNCHER, str(os.getpid()), str(_check_nice(nice)), command, *args]


def watchdog_executable(executable: str | os.PathLike[str], *, nice: int = 0) -> str:
    """An executable file that runs ``executable`` (with the arguments it is given) so that it dies with this process.

    For APIs that take one program path and add their own arguments (pydantic-monty's
    ``binary_path``). The file is a two-line shell script in a private temporary directory,
    written once per process and removed when this process exits normally (a directory left by
    a killed process is removed by the next process that writes one).

    Args:
        executable: Absolute path of the real program.
        nice: How much lower the program's scheduling priority is than this process's (0 to 19).

    Returns:
        The script's path, or ``executable`` unchanged where the watchdog is unsupported or no
        temporary directory allows executing files.

    Raises:
        ValueError: If ``nice`` is not between 0 and 19.
    """
    target = os.fspath(executable)
    nice = _check_nice(nice)
    if not WATCHDOG_SUPPORTED:
        return target
    key = (os.getpid(), target, nice)
    script = _scripts.get(key)
    if script is not None and os.path.exists(script):
        return script
    folder = _script_dir()
    if folder is None:
        return target
    line = shlex.join([sys.executable, "-I", "-S", _LAUNCHER, str(os.getpid()), str(nice), target])
    script = os.path.join(folder, f"{len(_scripts)}-{os.path.basename(target)}")
    with open(script, "w", encoding="utf-8") as f:
        f.write(f'#!/bin/sh\nexec {line} "$@"\n')
    os.chmod(script, 0o700)
    if not os.access(script, os.X_OK):
        # A temporary directory on a noexec mount: better no watchdog than no worker.
        _log.warning("spawn.watchdog_unavailable", reason=f"cannot execute files in {folder}")
        return target
    _scripts[key] = script
    return script


def _check_nice(nice: int) -> int:
    if isinstance(nice, bool) or not isinstance(nice, int) or not 0 <= nice <= 19:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"nice must be an integer from 0 to 19, got {nice!r}")
    return nice


def _can_exec(command: str, env: Mapping[str, str] | None, cwd: str | os.PathLike[str] | None) -> bool:
    if os.sep in command:
        path = os.path.join(os.fspath(cwd) if cwd is not None else os.getcwd(), command)
        return os.path.isfile(path) and os.access(path, os.X_OK)
    search = (env or {}).get("PATH", os.environ.get("PATH", os.defpath))
    return shutil.which(command, path=search) is not None


def _script_dir() -> str | None:
    pid = os.getpid()
    folder = _script_dirs.get(pid)
    if folder is not None and os.path.isdir(folder):
        return folder
    base = tempfile.gettempdir()
    _remove_stale_dirs(base)
    try:
        folder = tempfile.mkdtemp(prefix=f"{_DIR_PREFIX}{pid}-", dir=base)
    except OSError as e:
        _log.warning("spawn.watchdog_unavailable", reason=f"cannot create a directory in {base}: {e}")
        return None
    _script_dirs[pid] = folder
    atexit.register(shutil.rmtree, folder, True)
    return folder


def _remove_stale_dirs(base: str) -> None:
    # Directories of processes that were killed before their exit handlers ran.
    uid = os.getuid()
    try:
        entries = list(os.scandir(base))
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(_DIR_PREFIX):
            continue
        owner = entry.name[len(_DIR_PREFIX) :].split("-", 1)[0]
        try:
            mine = entry.is_dir(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_uid == uid
            if not mine or not owner.isdigit() or _alive(int(owner)):
                continue
        except OSError:
            continue
        shutil.rmtree(entry.path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True
