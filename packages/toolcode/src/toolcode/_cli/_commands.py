"""What each ``toolcode`` subcommand does: thin adapters over the core's operations.

Every command calls the :class:`~toolcode.CodeMode` operation of the same name; ``--json``
prints the operation's result model (the same shape the MCP server returns as
``structuredContent`` and a snippet receives), or ``{"ok": false, "error": {...}}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime
from typing import Any

import anyio
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from toolcode._app import Toolbox
from toolcode._cli._common import (
    Handled,
    UsageError,
    again,
    connected,
    json_arg,
    operation,
    read_code,
    reply_text,
    stderr,
    table,
    terminal_asker,
    when,
)
from toolcode._cli._exec import cmd_exec, cmd_resume
from toolcode._cli._render import safe
from toolcode._cli._tools import cmd_tools
from toolcode._metatools import delete_snippet, reset_session

__all__ = ["run_command"]


def _show_search(out: Console, r: Any, box: Toolbox) -> None:
    table(out, "search", ("id", "score", "summary"), [(h.id, f"{h.score:.2f}", h.summary or "") for h in r.hits])
    for text in [r.hint, *(h.signature for h in r.hits)]:
        if text:
            out.print(safe(text), markup=False)


async def cmd_search(args: argparse.Namespace) -> int:
    return await operation(
        args, lambda box: box.codemode.search_tools(args.query, args.limit, args.detail, args.namespace), _show_search
    )


def _show_docs(out: Console, r: Any, box: Toolbox) -> None:
    out.print(safe(r.text), markup=False)
    for e in r.errors:
        out.print(Text.assemble(("error: ", "red"), safe(e.message + (f" ({e.hint})" if e.hint else ""))))


async def cmd_describe(args: argparse.Namespace) -> int:
    ids = args.tool_id if len(args.tool_id) > 1 else args.tool_id[0]
    return await operation(args, lambda box: box.codemode.describe_tool(ids, args.level), _show_docs)


def _show_namespaces(out: Console, r: Any, box: Toolbox) -> None:
    rows = [(n.name, f"unavailable: {n.unavailable}" if n.unavailable else str(n.tool_count)) for n in r.namespaces]
    table(out, "namespaces", ("namespace", "tools"), rows)


async def cmd_namespaces(args: argparse.Namespace) -> int:
    return await operation(args, lambda box: box.codemode.list_namespaces(), _show_namespaces)


def _show_value(out: Console, r: Any, box: Toolbox) -> None:
    out.print(safe(json.dumps(r.model_dump(mode="json"), ensure_ascii=False, indent=2, default=str)), markup=False)


async def cmd_run(args: argparse.Namespace) -> int:
    tool_args = json_arg(args.args, "--args")
    return await operation(
        args,
        lambda box: box.codemode.run_tool(args.tool_id, tool_args, timeout=args.timeout, ask=terminal_asker()),
        _show_value,
    )


async def cmd_chain(args: argparse.Namespace) -> int:
    text = args.steps
    if text.startswith("@"):
        try:
            text = await anyio.Path(text[1:]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read {text[1:]}: {exc}") from exc
    steps = json_arg(text, "--steps")
    failed: list[str] = []

    async def call(box: Toolbox) -> Any:
        out = await box.codemode.run_chain(steps, ask=terminal_asker())
        if out.aborted:
            error = next(s for s in reversed(out.steps) if not s.ok).error
            failed.append(error.code if error is not None else "tool_error")
        return out

    await operation(args, call, _show_value)
    if failed:
        raise Handled(failed[0])
    return 0


async def cmd_result(args: argparse.Namespace) -> int:
    async def whole(box: Toolbox) -> None:
        offset: int | None = 0
        chunks: list[str] = []
        while offset is not None:
            page = await box.codemode.read_result(args.ref, offset, 1_000_000)
            chunks.append(page.text)
            offset = page.next_offset
        await anyio.Path(args.output).write_text("".join(chunks), encoding="utf-8", errors="surrogatepass")
        stderr().print(f"wrote {sum(len(c) for c in chunks):,} characters to {args.output}", markup=False)

    def show(out: Console, page: Any, box: Toolbox) -> None:
        sys.stdout.write(page.text)
        if page.next_offset is not None:
            more = again(args, "result", args.ref, "--offset", str(page.next_offset))
            stderr().print(f"\n[{page.total_chars:,} chars; more: {more}]", markup=False)

    if args.output:
        return await operation(args, whole, show)
    return await operation(args, lambda box: box.codemode.read_result(args.ref, args.offset, args.limit), show)


# -- state: paused runs, the audit log, sessions, saved snippets ----------------------------------


async def cmd_paused(args: argparse.Namespace) -> int:
    def show(out: Console, r: Any, box: Toolbox) -> None:
        rows = [
            (
                e.execution_id,
                ", ".join(f"{p.tool_id} ({p.tier})" for p in e.pending),
                str(e.line or "-"),
                when(e.paused_at),
                when(e.expires),
            )
            for e in r.paused
        ]
        columns = ("execution_id", "waits for", "line", "paused", "expires")
        table(out, f"paused runs ({box.state.name})", columns, rows)

    return await operation(args, lambda box: box.codemode.list_paused(), show)


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

    async def call(box: Toolbox) -> dict[str, Any]:
        # As in the console: the local user's own entries, everyone's only for an operator.
        own = None if box.services.is_operator(None) else "local"
        return {"entries": await box.stores.audit.read(since=since, limit=max(1, args.limit), caller=own)}

    def show(out: Console, r: Any, box: Toolbox) -> None:
        rows = [
            (
                when(e.get("at")),
                str(e.get("tool_id", "")),
                str(e.get("tier") or ""),
                str(e.get("decision", "")),
                str(e.get("decided_by", "")),
                "" if "ok" not in e else ("ok" if e["ok"] else f"failed ({e.get('code')})"),
                f"{e['duration_ms']:.1f}" if isinstance(e.get("duration_ms"), int | float) else "",
            )
            for e in r["entries"]
        ]
        columns = ("when", "tool", "tier", "decision", "by", "ok", "ms")
        table(out, f"audit ({box.state.name})", columns, rows)

    return await operation(args, call, show)


async def cmd_sessions(args: argparse.Namespace) -> int:
    if args.action == "reset":
        if not args.name:
            raise UsageError("sessions reset needs the session's NAME")
        return await operation(args, lambda box: reset_session(box.codemode, args.name), reply_text)

    def show(out: Console, r: Any, box: Toolbox) -> None:
        rows = [(e.name, str(e.runs), f"{e.size_bytes:,} B", when(e.last_used), when(e.expires)) for e in r.sessions]
        table(out, f"sessions ({box.state.name})", ("name", "runs", "size", "last used", "expires"), rows)

    return await operation(args, lambda box: box.codemode.list_sessions(), show)


async def cmd_snippets(args: argparse.Namespace) -> int:
    action = args.action
    if action in ("show", "save", "delete") and not args.name:
        raise UsageError(f"snippets {action} needs the snippet's NAME")
    if action == "save":
        code = read_code(args)
        if not args.description:
            raise UsageError("snippets save needs --description TEXT (how search finds it)")
        schema = json_arg(args.input_schema, "--input-schema")
        return await operation(
            args,
            lambda box: box.codemode.save_snippet(args.name, code, args.description, schema, shared=args.shared),
            reply_text,
        )
    if action == "show":

        def show(out: Console, e: Any, box: Toolbox) -> None:
            out.print(safe(f"# {e.tool_id}: {e.description}\n{e.code}"), markup=False)

        return await operation(args, lambda box: box.codemode.show_snippet(args.name), show)
    if action == "delete":
        return await operation(args, lambda box: delete_snippet(box.codemode, args.name), reply_text)
    return await operation(args, lambda box: box.codemode.list_snippets(), reply_text)


# -- the door and the walkthrough ---------------------------------------------------------------


async def cmd_report(args: argparse.Namespace) -> int:
    from toolcode._tokens import definitions_report

    async def call(box: Toolbox) -> dict[str, Any]:
        return definitions_report(box)

    def show(out: Console, report: Any, box: Toolbox) -> None:
        shown = Table("namespace", "tools", "definition tokens", title="tool definitions in context")
        shown.title_justify = "left"
        for ns in report["namespaces"]:
            shown.add_row(escape(safe(ns["name"])), str(ns["tools"]), f"{ns['tokens']:,}")
        d, c = report["direct"], report["codemode"]
        shown.add_row("[b]direct: all upstream tools[/]", str(d["tools"]), f"[b]{d['tokens']:,}[/]")
        shown.add_row("[b]code mode: toolcode serve[/]", str(c["tools"]), f"[b]{c['tokens']:,}[/]")
        out.print(shown)
        if d["tokens"] >= c["tokens"]:
            fewer = f"[b]{report['ratio']:.1f}x[/] fewer definition tokens in context"
            out.print(f"Code mode puts {fewer} ({d['tokens']:,} → {c['tokens']:,}).")
        else:
            out.print(
                f"Your {d['tools']} tools take fewer definition tokens than the code-mode server "
                f"({d['tokens']:,} vs {c['tokens']:,}); code mode pays off here through the calls and results it "
                "keeps out of context."
            )
        encoding = report["encoding"]
        out.print(f"[dim]tokens: tiktoken {encoding}; definitions only — see bench/tokens.py for whole tasks.[/]")

    return await operation(args, call, show)


SERVE_SWITCH_INTERVAL = 0.0005
"""Seconds a thread holds the interpreter lock before another that waits for it gets it, in the
``serve`` process (Python's default is 0.005). A long snippet's check runs in a worker thread; each
time the event loop thread wakes up (a request, an upstream reply) it waits for that thread's turn
to end, several times per request, so shorter turns keep a bystander's trivial run quick while
other callers' long checks run (``bench/bystander.py --only typecheck_flood``)."""


async def cmd_serve(args: argparse.Namespace) -> int:
    from toolcode.server import TOKENS_ENV, BearerTokens, serve_http, serve_stdio
    from toolcode.server._http_address import check_bind
    from toolcode.server._http_guard import MAX_SESSIONS_PER_CALLER
    from toolcode.server._http_stopping import STOP_GRACE
    from toolcode.server._serve import SESSION_IDLE_TIMEOUT

    sys.setswitchinterval(SERVE_SWITCH_INTERVAL)  # this process is the server: the setting is its own

    if args.http is None:
        numbers = (args.sessions_per_caller, args.session_idle_timeout, args.stop_grace)
        if args.token_file or args.allow_host or args.allow_origin or any(v is not None for v in numbers):
            raise UsageError(
                "--token-file, --allow-host, --allow-origin, --sessions-per-caller, --session-idle-timeout and "
                "--stop-grace apply to --http only"
            )
        async with connected(args) as box:
            await serve_stdio(box, expose=args.expose or None)
        return 0
    host, port = args.http
    # Checked before any upstream server starts: a refused door should not cost their start-up.
    tokens = BearerTokens.load(env=TOKENS_ENV, file=args.token_file)
    check_bind(host, tokens, hint=f"one NAME:TOKEN per line in a file passed as --token-file FILE, or set {TOKENS_ENV}")
    async with connected(args) as box:

        def ready(url: str) -> None:
            stderr().print(f"toolcode serve: listening on {url}", markup=False)

        await serve_http(
            box,
            host,
            port,
            expose=args.expose or None,
            on_ready=ready,
            tokens=tokens,
            allowed_hosts=args.allow_host,
            allowed_origins=args.allow_origin,
            sessions_per_caller=args.sessions_per_caller or MAX_SESSIONS_PER_CALLER,
            session_idle_timeout=args.session_idle_timeout or SESSION_IDLE_TIMEOUT,
            stop_grace=args.stop_grace or STOP_GRACE,
        )
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
