"""What each ``toolcode`` subcommand does: thin adapters over the core's operations.

Every command calls the :class:`~toolcode.CodeMode` operation of the same name; ``--json``
prints the operation's result model (the same shape the MCP server returns as
``structuredContent`` and a snippet receives), or ``{"ok": false, "error": {...}}``.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import shlex
import sys
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from toolcode._app import UNSANDBOXED_WARNING, ConnectEvent, Toolbox
from toolcode._cli._parser import SNIPPET_FAILED_EXIT, USAGE_EXIT, exit_code
from toolcode._cli._render import print_json, render_outcome, safe
from toolcode._errors import describe_error, error_info
from toolcode._settings import Settings, StateSettings
from toolcode.calls import Asker, PendingCall
from toolcode.exceptions import ConfigurationError, ToolCodeError
from toolcode.models import ApprovalRequest, ExecuteOutcome

__all__ = ["Handled", "UsageError", "connected", "run_command"]


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


def _stdout() -> Console:
    return Console(highlight=False, soft_wrap=True)


def _stderr() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def _state(args: argparse.Namespace) -> StateSettings | None:
    if getattr(args, "no_state", False):
        if getattr(args, "state_dir", None):
            raise UsageError("give --state-dir or --no-state, not both")
        return StateSettings(memory=True)
    if getattr(args, "state_dir", None):
        return StateSettings(dir=args.state_dir)
    return None


def _build_toolbox(args: argparse.Namespace) -> Toolbox:
    engine = getattr(args, "engine", None)
    state = _state(args)
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
    err = _stderr()
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


def _json_arg(text: str | None, flag: str) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{flag} is not valid JSON: {exc}") from exc


def _read_code(args: argparse.Namespace) -> str:
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


def _fail(args: argparse.Namespace, exc: ToolCodeError, box: Toolbox) -> Handled:
    """Show a failed operation (JSON on stdout with --json, text on stderr otherwise)."""
    if getattr(args, "json", False):
        print_json({"ok": False, "error": error_info(exc, box.codemode.view()).model_dump(mode="json")})
    else:
        _stderr().print(Text.assemble(("error: ", "red"), safe(describe_error(exc, box.codemode.view()))))
    return Handled(exc.code.value)


async def _operation(
    args: argparse.Namespace,
    call: Callable[[Toolbox], Awaitable[BaseModel]],
    show: Callable[[Console, Any], None],
) -> int:
    async with connected(args) as box:
        try:
            out = await call(box)
        except ToolCodeError as exc:
            raise _fail(args, exc, box) from exc
        if args.json:
            print_json(out.model_dump(mode="json"))
        else:
            show(_stdout(), out)
    return 0


async def cmd_exec(args: argparse.Namespace) -> int:
    code = _read_code(args)
    data = _json_arg(args.input, "--input")
    options: dict[str, Any] = {
        "timeout": args.timeout,
        "max_tool_calls": args.max_tool_calls,
        "max_output_chars": args.max_output_chars,
        "allowed_namespaces": args.allow,
        "trace": args.trace,
        "type_check": args.type_check,
    }
    async with connected(args) as box:
        outcome: ExecuteOutcome = await box.codemode.execute(
            code, input=data, options={k: v for k, v in options.items() if v is not None}, session=args.session
        )
        outcome = await _decide(box, outcome, code, args.approve)
        _print_outcome(args, outcome)
    return _exit_for(outcome)


def _print_outcome(args: argparse.Namespace, outcome: ExecuteOutcome) -> None:
    if args.json:
        print_json(outcome.model_dump(mode="json"))
    else:
        render_outcome(_stdout(), _stderr(), outcome, resume_hint=lambda execution_id: _resume_hint(args, execution_id))


def _program() -> list[str]:
    """How the person started this command, as words to paste: ``uv run toolcode`` under ``uv run``."""
    # uv sets this variable in the environment of what `uv run` starts (to notice recursion).
    return ["uv", "run", "toolcode"] if os.environ.get("UV_RUN_RECURSION_DEPTH") else ["toolcode"]


def _again(args: argparse.Namespace, *words: str) -> str:
    """A command line to paste: ``toolcode WORDS`` with this command's catalog and state options."""
    line = [*_program(), *words]
    if getattr(args, "demo", False):
        line.append("--demo")
    elif getattr(args, "config", None):
        line += ["--config", args.config]
    if getattr(args, "state_dir", None):
        line += ["--state-dir", args.state_dir]
    return shlex.join(line)


def _resume_hint(args: argparse.Namespace, execution_id: str) -> str:
    """How to continue a paused run: a command line that works as pasted, and the other decisions."""
    if getattr(args, "no_state", False):
        return (
            "--no-state keeps no paused run after this command: run it again with --approve=all or "
            "--approve=none, or without --no-state to decide later"
        )
    return (
        f"continue with: {_again(args, 'resume', execution_id, 'approve')}\n"
        "  (or approve_run, deny or abort in place of approve; or run exec again with --approve=all|none)"
    )


def _exit_for(outcome: ExecuteOutcome) -> int:
    if outcome.approval is not None:
        raise Handled("approval_required")
    if not outcome.ok and outcome.error is not None:
        if outcome.error.line is not None and exit_code(outcome.error.code) == USAGE_EXIT:
            # Wrong arguments to a tool inside the snippet are the snippet's failure, not this command's usage.
            raise Handled(outcome.error.code, exit=SNIPPET_FAILED_EXIT)
        raise Handled(outcome.error.code)
    return 0


def _interactive() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty()


async def _decide(box: Toolbox, outcome: ExecuteOutcome, code: str, approve: str | None) -> ExecuteOutcome:
    """Answer a paused run's questions: from --approve, or by asking at the terminal; else leave it paused."""
    for _ in range(1000):
        approval = outcome.approval
        if approval is None:
            return outcome
        if approve == "all":
            decision, who = "approve_run", "flag:--approve=all"
        elif approve == "none":
            decision, who = "deny", "flag:--approve=none"
        elif _interactive():
            decision, who = _prompt(approval, code), f"person:{getpass.getuser()}"
            if decision is None:
                return outcome  # left paused
        else:
            return outcome
        outcome = await box.codemode.resume(approval.execution_id, decision, by=who)
    return outcome


_ANSWERS = {"y": "approve", "r": "approve_run", "n": "deny", "a": "abort", "l": None}


def _prompt(approval: ApprovalRequest, code: str) -> str | None:
    return _ask_terminal(approval.pending, approval.line, code)


def _ask_terminal(pending: Sequence[Any], line: int | None, code: str) -> str | None:
    """Ask the person at the terminal about pending calls; ``None``: leave the run paused."""
    err = _stderr()
    lines = code.splitlines()
    for p in pending:
        err.print(
            Text.assemble(
                ("approval needed: ", "yellow"),
                safe(f"{p.tool_id} ({p.tier}) {json.dumps(p.args, ensure_ascii=False, default=str)[:500]}"),
            )
        )
        err.print(Text(safe(f"  why: {p.reason}")))
    if line is not None and 0 < line <= len(lines):
        err.print(Text(safe(f"  line {line}: {lines[line - 1].strip()[:300]}")))
    while True:
        err.print("[y] approve once  [r] approve for this run  [n] deny  [a] abort  [l] leave paused: ", end="")
        try:
            answer = input().strip().lower()[:1]
        except EOFError:
            return None
        if answer in _ANSWERS:
            return _ANSWERS[answer]


def _terminal_asker() -> Asker | None:
    """For a direct call (``run``, ``chain``): ask at the terminal, when there is one."""
    if not _interactive():
        return None

    async def ask(pending: Sequence[PendingCall], line: int | None) -> tuple[str, str]:
        return _ask_terminal(pending, line, "") or "abort", f"person:{getpass.getuser()}"

    return ask


async def cmd_resume(args: argparse.Namespace) -> int:
    async with connected(args) as box:
        outcome = await box.codemode.resume(args.execution_id, args.decision, by=f"person:{getpass.getuser()}")
        _print_outcome(args, outcome)
    return _exit_for(outcome)


async def cmd_result(args: argparse.Namespace) -> int:
    async with connected(args) as box:
        try:
            if args.output:
                offset, chunks = 0, list[str]()
                while True:
                    page = await box.codemode.read_result(args.ref, offset, 1_000_000)
                    chunks.append(page.text)
                    if page.next_offset is None:
                        break
                    offset = page.next_offset
                await anyio.Path(args.output).write_text("".join(chunks), encoding="utf-8", errors="surrogatepass")
                total = sum(len(c) for c in chunks)
                _stderr().print(f"wrote {total:,} characters to {args.output}", markup=False)
                return 0
            page = await box.codemode.read_result(args.ref, args.offset, args.limit)
        except ToolCodeError as exc:
            raise _fail(args, exc, box) from exc
        if args.json:
            print_json(page.model_dump(mode="json"))
        else:
            sys.stdout.write(page.text)
            if page.next_offset is not None:
                more = _again(args, "result", args.ref, "--offset", str(page.next_offset))
                _stderr().print(f"\n[{page.total_chars:,} chars; more: {more}]", markup=False)
    return 0


async def cmd_paused(args: argparse.Namespace) -> int:
    async with connected(args) as box:
        listed = await box.codemode.list_paused()
        if args.json:
            print_json(listed.model_dump(mode="json"))
            return 0
        table = _table(f"paused runs ({box.state.name})", "execution_id", "waits for", "line", "paused", "expires")
        for r in listed.paused:
            waits = ", ".join(f"{p.tool_id} ({p.tier})" for p in r.pending)
            table.add_row(r.execution_id, escape(safe(waits)), str(r.line or "-"), _when(r.paused_at), _when(r.expires))
        _stdout().print(table)
    return 0


def _since(value: str | None) -> float | None:
    if value is None:
        return None
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    if value[-1:] in units and value[:-1].replace(".", "", 1).isdigit():
        return time.time() - float(value[:-1]) * units[value[-1]]
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        raise UsageError(f"--since: expected an ISO date/time or an age such as 30m, 2h, 7d; got {value!r}") from None


async def cmd_audit(args: argparse.Namespace) -> int:
    since = _since(args.since)
    async with connected(args) as box:
        entries = await box.stores.audit.read(since=since, limit=max(1, args.limit))
        if args.json:
            print_json({"entries": entries})
            return 0
        table = _table(f"audit ({box.state.name})", "when", "tool", "tier", "decision", "by", "ok", "ms")
        for e in entries:
            ok = "" if "ok" not in e else ("ok" if e["ok"] else f"failed ({e.get('code')})")
            ms = f"{e['duration_ms']:.1f}" if isinstance(e.get("duration_ms"), int | float) else ""
            table.add_row(
                _when(e.get("at")),
                escape(safe(str(e.get("tool_id", "")))),
                str(e.get("tier") or ""),
                str(e.get("decision", "")),
                escape(safe(str(e.get("decided_by", "")))),
                ok,
                ms,
            )
        _stdout().print(table)
    return 0


def _table(title: str, *columns: str) -> Table:
    return Table(*columns, title=escape(safe(title)), title_justify="left")


def _show_search(out: Console, r: Any) -> None:
    table = _table(f"search: {r.query}" if hasattr(r, "query") else "search", "id", "score", "summary")
    for h in r.hits:
        table.add_row(escape(safe(h.id)), f"{h.score:.2f}", escape(safe(h.summary or "")))
    out.print(table)
    if r.hint:
        out.print(escape(safe(r.hint)), markup=False)
    for h in r.hits:
        if h.signature:
            out.print(safe(h.signature), markup=False)


async def cmd_search(args: argparse.Namespace) -> int:
    return await _operation(
        args, lambda box: box.codemode.search_tools(args.query, args.limit, args.detail, args.namespace), _show_search
    )


def _show_docs(out: Console, r: Any) -> None:
    out.print(safe(r.text), markup=False)
    for e in r.errors:
        out.print(Text.assemble(("error: ", "red"), safe(e.message + (f" ({e.hint})" if e.hint else ""))))


async def cmd_describe(args: argparse.Namespace) -> int:
    ids = args.tool_id if len(args.tool_id) > 1 else args.tool_id[0]
    return await _operation(args, lambda box: box.codemode.describe_tool(ids, args.level), _show_docs)


def _show_tools(args: argparse.Namespace, out: Console, r: Any) -> None:
    table = _table(f"{len(r.tools)} tools", "id", "summary")
    for t in r.tools:
        table.add_row(escape(safe(t.id)), escape(safe(t.summary)))
    out.print(table)
    if r.next_cursor:
        page = ["--limit", str(args.limit)] + (["--namespace", args.namespace] if args.namespace else [])
        out.print(f"more: {_again(args, 'tools', '--cursor', r.next_cursor, *page)}", markup=False)


async def cmd_tools(args: argparse.Namespace) -> int:
    if args.action == "approve":
        if not args.patterns:
            raise UsageError("tools approve needs tool ids or globs (PATTERN ...)")
        by = f"operator:{getpass.getuser()}"
        return await _operation(
            args,
            lambda box: box.codemode.approve_tools(list(args.patterns), by=by),
            lambda out, r: out.print(
                "approved: " + (", ".join(r.approved) or "nothing (no tool matched)"), markup=False
            ),
        )
    if args.action == "quarantined":

        async def quarantined(box: Toolbox) -> Any:
            return box.codemode.quarantined_tools()

        def show(out: Console, r: Any) -> None:
            table = _table(f"{len(r.tools)} quarantined tools", "id", "state", "approved by", "approved")
            for t in r.tools:
                table.add_row(
                    escape(safe(t.tool_id)), t.state, escape(safe(t.approved_by or "-")), _when(t.approved_at)
                )
            out.print(table)

        return await _operation(args, quarantined, show)
    return await _operation(
        args,
        lambda box: box.codemode.list_tools(args.namespace, args.cursor, args.limit),
        lambda out, r: _show_tools(args, out, r),
    )


def _show_namespaces(out: Console, r: Any) -> None:
    table = _table("namespaces", "namespace", "tools")
    for n in r.namespaces:
        table.add_row(
            escape(safe(n.name)), escape(safe(f"unavailable: {n.unavailable}")) if n.unavailable else str(n.tool_count)
        )
    out.print(table)


async def cmd_namespaces(args: argparse.Namespace) -> int:
    return await _operation(args, lambda box: box.codemode.list_namespaces(), _show_namespaces)


def _show_value(out: Console, r: Any) -> None:
    out.print(safe(json.dumps(r.model_dump(mode="json"), ensure_ascii=False, indent=2, default=str)), markup=False)


async def cmd_run(args: argparse.Namespace) -> int:
    tool_args = _json_arg(args.args, "--args")
    return await _operation(
        args,
        lambda box: box.codemode.run_tool(args.tool_id, tool_args, timeout=args.timeout, ask=_terminal_asker()),
        _show_value,
    )


async def cmd_chain(args: argparse.Namespace) -> int:
    text = args.steps
    if text.startswith("@"):
        try:
            text = await anyio.Path(text[1:]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read {text[1:]}: {exc}") from exc
    steps = _json_arg(text, "--steps")

    async def call(box: Toolbox) -> BaseModel:
        out = await box.codemode.run_chain(steps, ask=_terminal_asker())
        if out.aborted:
            failed = next(s for s in reversed(out.steps) if not s.ok)
            if args.json:
                print_json(out.model_dump(mode="json"))
            else:
                _show_value(_stdout(), out)
            raise Handled(failed.error.code if failed.error is not None else "tool_error")
        return out

    return await _operation(args, call, _show_value)


async def cmd_report(args: argparse.Namespace) -> int:
    from toolcode._tokens import definitions_report

    async with connected(args) as box:
        report = definitions_report(box)
        if args.json:
            print_json(report)
            return 0
        table = Table(
            "namespace", "tools", "definition tokens", title="tool definitions in context", title_justify="left"
        )
        for ns in report["namespaces"]:
            table.add_row(escape(safe(ns["name"])), str(ns["tools"]), f"{ns['tokens']:,}")
        table.add_row(
            "[b]direct: all upstream tools[/]", str(report["direct"]["tools"]), f"[b]{report['direct']['tokens']:,}[/]"
        )
        table.add_row(
            "[b]code mode: toolcode serve[/]",
            str(report["codemode"]["tools"]),
            f"[b]{report['codemode']['tokens']:,}[/]",
        )
        out = _stdout()
        out.print(table)
        d, c = report["direct"]["tokens"], report["codemode"]["tokens"]
        if d >= c:
            out.print(
                f"Code mode puts [b]{report['ratio']:.1f}x[/] fewer definition tokens in context ({d:,} → {c:,})."
            )
        else:
            out.print(
                f"Your {report['direct']['tools']} tools take fewer definition tokens than the code-mode server "
                f"({d:,} vs {c:,}); code mode pays off here through the calls and results it keeps out of context."
            )
        out.print(
            f"[dim]tokens: tiktoken {report['encoding']}; definitions only — see bench/tokens.py for whole tasks.[/]"
        )
    return 0


async def cmd_serve(args: argparse.Namespace) -> int:
    from toolcode.server import TOKENS_ENV, BearerTokens, serve_http, serve_stdio
    from toolcode.server._http_guard import check_bind

    if args.http is None:
        if args.token_file or args.allow_host or args.allow_origin:
            raise UsageError("--token-file, --allow-host and --allow-origin apply to --http only")
        async with connected(args) as box:
            await serve_stdio(box, expose=args.expose or None)
        return 0
    host, port = args.http
    # Checked before any upstream server starts: a refused door should not cost their start-up.
    tokens = BearerTokens.load(env=TOKENS_ENV, file=args.token_file)
    check_bind(host, tokens, hint=f"one NAME:TOKEN per line in a file passed as --token-file FILE, or set {TOKENS_ENV}")
    async with connected(args) as box:

        def ready(url: str) -> None:
            _stderr().print(f"toolcode serve: listening on {url}", markup=False)

        await serve_http(
            box,
            host,
            port,
            expose=args.expose or None,
            on_ready=ready,
            tokens=tokens,
            allowed_hosts=args.allow_host,
            allowed_origins=args.allow_origin,
        )
    return 0


async def cmd_sessions(args: argparse.Namespace) -> int:
    async with connected(args) as box:
        if args.action == "reset":
            if not args.name:
                raise UsageError("sessions reset needs the session's NAME")
            gone = await box.codemode.reset_session(args.name)
            if args.json:
                print_json({"session": args.name, "reset": gone})
            else:
                _stdout().print(f"session {args.name!r} " + ("reset" if gone else "had no state"), markup=False)
            return 0
        listed = await box.codemode.list_sessions()
        if args.json:
            print_json(listed.model_dump(mode="json"))
            return 0
        table = _table(f"sessions ({box.state.name})", "name", "runs", "size", "last used", "expires")
        for e in listed.sessions:
            table.add_row(
                escape(safe(e.name)), str(e.runs), f"{e.size_bytes:,} B", _when(e.last_used), _when(e.expires)
            )
        _stdout().print(table)
    return 0


def _when(t: float | None) -> str:
    if t is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


async def cmd_snippets(args: argparse.Namespace) -> int:
    action = args.action
    if action in ("show", "save", "delete") and not args.name:
        raise UsageError(f"snippets {action} needs the snippet's NAME")
    code: str | None = None
    if action == "save":
        code = _read_code(args)
        if not args.description:
            raise UsageError("snippets save needs --description TEXT (how search finds it)")
    schema = _json_arg(args.input_schema, "--input-schema")
    async with connected(args) as box:
        cm = box.codemode
        if action == "save":
            entry = await cm.save_snippet(args.name, code, args.description, schema)
            doc: Any = entry.model_dump(mode="json")
            text = f"saved as {entry.tool_id}"
        elif action == "show":
            entry = await cm.show_snippet(args.name)
            doc, text = entry.model_dump(mode="json"), f"# {entry.tool_id}: {entry.description}\n{entry.code}"
        elif action == "delete":
            gone = await cm.delete_snippet(args.name)
            doc, text = (
                {"name": args.name, "deleted": gone},
                f"snippets:{args.name} " + ("deleted" if gone else "did not exist"),
            )
        else:
            listed = await cm.list_snippets()
            doc = listed.model_dump(mode="json")
            text = "\n".join(f"{e.tool_id} — {e.description}" for e in listed.snippets) or "no saved snippets"
        if args.json:
            print_json(doc)
        else:
            _stdout().print(safe(text), markup=False)
    return 0


async def cmd_demo(args: argparse.Namespace) -> int:
    from toolcode.demo import run_demo

    return await run_demo(json_output=args.json)


_COMMANDS = {
    "exec": cmd_exec,
    "search": cmd_search,
    "describe": cmd_describe,
    "tools": cmd_tools,
    "namespaces": cmd_namespaces,
    "run": cmd_run,
    "chain": cmd_chain,
    "report": cmd_report,
    "serve": cmd_serve,
    "demo": cmd_demo,
    "sessions": cmd_sessions,
    "resume": cmd_resume,
    "paused": cmd_paused,
    "result": cmd_result,
    "audit": cmd_audit,
    "snippets": cmd_snippets,
}


async def run_command(args: argparse.Namespace) -> int:
    """Dispatch to the subcommand; errors propagate to :func:`toolcode.cli.main`."""
    return await _COMMANDS[args.command](args)
