"""What every ``toolcode`` command shares: errors, the toolbox, one operation's output, the person at the terminal."""

from __future__ import annotations

import argparse
import getpass
import json
import os
import shlex
import sys
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from toolcode._app import UNSANDBOXED_WARNING, ConnectEvent, Toolbox
from toolcode._cli._render import print_json, safe
from toolcode._errors import describe_error
from toolcode._metatools import failure_reply, reply_of
from toolcode._outcome import line_quoted, shown_to_decide
from toolcode._settings import Settings, StateSettings
from toolcode.calls import Asker, PendingCall
from toolcode.exceptions import ConfigurationError, ToolCodeError
from toolcode.models import PendingCallInfo

__all__ = [
    "Handled",
    "Show",
    "UsageError",
    "again",
    "ask_terminal",
    "connected",
    "decide",
    "interactive",
    "json_arg",
    "operation",
    "read_code",
    "reply_text",
    "stderr",
    "stdout",
    "table",
    "terminal_asker",
    "when",
]


class UsageError(Exception):
    """Bad command-line usage that argparse could not catch (exit code 2)."""


class Handled(Exception):
    """A failure already shown to the user; only its exit code remains to be decided.

    Attributes:
        code: The failure's error code (a value of :class:`~toolcode.ErrorCode`).
        exit: The exit code, when it is not the one the error code maps to.
    """

    def __init__(self, code: str, exit: int | None = None) -> None:
        self.code = code
        self.exit = exit
        super().__init__(code)


def stdout() -> Console:
    """The console of results (everything else goes to :func:`stderr`)."""
    return Console(highlight=False, soft_wrap=True)


def stderr() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def _build_toolbox(args: argparse.Namespace) -> Toolbox:
    engine, state_dir = getattr(args, "engine", None), getattr(args, "state_dir", None)
    state = StateSettings(dir=state_dir) if state_dir else None
    if getattr(args, "no_state", False):
        if state_dir:
            raise UsageError("give --state-dir or --no-state, not both")
        state = StateSettings(memory=True)
    if getattr(args, "demo", False):
        from toolcode.demo import demo_toolbox

        return demo_toolbox(engine=engine, settings=Settings(state=state) if state is not None else None)
    config = args.config or os.environ.get("TOOLCODE_CONFIG")
    if config is None and args.command not in ("exec", "sessions", "snippets"):
        raise ConfigurationError(
            "config", "no servers configured: pass --config FILE (or --demo), or set TOOLCODE_CONFIG"
        )
    return Toolbox.from_config(config, engine=engine, strict=args.strict, state=state)


@asynccontextmanager
async def connected(args: argparse.Namespace) -> AsyncGenerator[Toolbox]:
    """A connected toolbox for the command, with progress on a terminal; closed on exit."""
    box = _build_toolbox(args)
    err = stderr()
    info = box.services.engine.info
    if not info.sandboxed:
        err.print(f"[bold red]warning:[/] {escape(UNSANDBOXED_WARNING.format(engine=info.name))}")
    try:
        if err.is_terminal and box.backends:
            with err.status("connecting to servers…") as status:
                ready: list[str] = []

                def on_event(event: ConnectEvent) -> None:
                    name = escape(safe(event.backend))
                    if event.state == "ready":
                        ready.append(event.backend)
                        err.print(f"[green]✓[/] {name}: {event.tools} tools ({event.duration_ms:.0f} ms)")
                    elif event.state == "failed":
                        err.print(f"[red]✗[/] {name}: {escape(safe(event.error or ''))}")
                    status.update(f"connecting to servers… {len(ready)}/{len(box.backends)} ready")

                await box.connect(on_event)
        else:
            await box.connect()
        yield box
    finally:
        await box.aclose()


Show = Callable[[Console, Any, Toolbox], None]
"""Prints an operation's result for a person."""


async def operation(args: argparse.Namespace, call: Callable[[Toolbox], Awaitable[Any]], show: Show) -> int:
    """Run one operation; print its result as JSON (``--json``: the MCP door's ``structuredContent``) or with ``show``.

    A result of ``None``: the call said what it did itself.

    Raises:
        Handled: After showing the failure (``{"ok": false, "error": {...}}`` with ``--json``).
    """
    async with connected(args) as box:
        try:
            out = await call(box)
        except ToolCodeError as exc:
            if args.json:
                print_json(failure_reply(exc, box.codemode).structured())
            else:
                stderr().print(Text.assemble(("error: ", "red"), safe(describe_error(exc, box.codemode.view()))))
            raise Handled(exc.code.value) from exc
        if out is not None and args.json:
            print_json(out.model_dump(mode="json") if isinstance(out, BaseModel) else out)
        elif out is not None:
            show(stdout(), out, box)
    return 0


def table(out: Console, title: str, columns: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    """A table of outside text, every cell made safe for the terminal."""
    shown = Table(*columns, title=escape(safe(title)), title_justify="left")
    for row in rows:
        shown.add_row(*(escape(safe(cell)) for cell in row))
    out.print(shown)


def reply_text(out: Console, result: Any, box: Toolbox) -> None:
    """The text a model reads of the result (the same words as over MCP)."""
    out.print(safe(reply_of(result).text), markup=False)


def when(t: float | None) -> str:
    return "-" if t is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def json_arg(text: str | None, flag: str) -> Any:
    """The JSON value of an option (:class:`UsageError` if it is not JSON)."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{flag} is not valid JSON: {exc}") from exc


def read_code(args: argparse.Namespace) -> str:
    """The code of ``exec`` or ``snippets save``: ``-c``, FILE, or stdin (UTF-8; else :class:`UsageError`)."""
    if args.code is not None and args.file is not None:
        raise UsageError("give the code either with -c or as FILE, not both")
    if args.code is not None:
        return str(args.code)
    if args.file is not None and args.file != "-":
        try:
            return Path(args.file).read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UsageError(f"{args.file}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
        except OSError as exc:
            raise UsageError(f"cannot read {args.file}: {exc.strerror or exc}") from exc
    if sys.stdin.isatty():
        raise UsageError("no code: pass FILE, -c CODE, or pipe the code on stdin")
    raw = getattr(sys.stdin, "buffer", None)
    if raw is None:  # a text stream put in place of stdin (an embedding program, a test)
        return sys.stdin.read()
    try:
        return raw.read().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"stdin: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc


def again(args: argparse.Namespace, *words: str) -> str:
    """A command line to paste: ``toolcode WORDS`` with this command's catalog and state options."""
    # uv sets this variable in the environment of what `uv run` starts (to notice recursion).
    line = ["uv", "run", "toolcode"] if os.environ.get("UV_RUN_RECURSION_DEPTH") else ["toolcode"]
    line.extend(words)
    if getattr(args, "demo", False):
        line.append("--demo")
    elif getattr(args, "config", None):
        line += ["--config", args.config]
    if getattr(args, "state_dir", None):
        line += ["--state-dir", args.state_dir]
    return shlex.join(line)


def interactive() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty()


_ANSWERS = {"y": "approve", "r": "approve_run", "n": "deny", "a": "abort", "l": None}
_LABELS = {"y": "approve once", "r": "approve for this run", "n": "deny", "a": "abort", "l": "leave paused"}


def ask_terminal(
    pending: Sequence[PendingCall | PendingCallInfo],
    line: int | None,
    code: str,
    snippet_code: Mapping[str, str] | None = None,
) -> str | None:
    """Ask the person at the terminal about pending calls; ``None``: leave the run paused.

    Every call is shown whole (:func:`~toolcode._outcome.shown_to_decide`, with the paused run's
    ``snippet_code``); calls too long to show may only be denied, stopped or left paused here.
    """
    err = stderr()
    shown, offered = shown_to_decide(pending, snippet_code)
    err.print(Text("approval needed:", "yellow"))
    err.print(Text(safe(shown)))
    if (quoted := line_quoted(code, line)) is not None:
        err.print(Text(safe(f"  line {line}: {quoted}")))
    keys = {k: d for k, d in _ANSWERS.items() if d is None or d in offered}
    prompt = "  ".join(f"[{k}] {_LABELS[k]}" for k in keys) + ": "
    while True:
        err.print(Text(prompt), end="")
        try:
            answer = input().strip().lower()[:1]
        except EOFError:
            return None
        if answer in keys:
            return keys[answer]


def decide(
    approve: str | None,
    pending: Sequence[PendingCall | PendingCallInfo],
    line: int | None,
    code: str,
    snippet_code: Mapping[str, str] | None = None,
) -> tuple[str, str] | None:
    """A decision about pending calls and who made it: ``--approve``'s, else the person's at the terminal.

    Returns:
        ``(decision, by)``, or ``None`` to leave the run paused (nobody to ask, or the person said so).
    """
    if approve is not None:
        return ("approve_run" if approve == "all" else "deny"), f"flag:--approve={approve}"
    decision = ask_terminal(pending, line, code, snippet_code) if interactive() else None
    return (decision, f"person:{getpass.getuser()}") if decision is not None else None


def terminal_asker() -> Asker | None:
    """For a direct call (``run``, ``chain``): ask at the terminal, when there is one."""
    if not interactive():
        return None

    async def ask(pending: Sequence[PendingCall], line: int | None) -> tuple[str, str]:
        return decide(None, pending, line, "") or ("abort", f"person:{getpass.getuser()}")

    return ask
