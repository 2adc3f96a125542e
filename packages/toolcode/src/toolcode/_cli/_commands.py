"""What each ``toolcode`` subcommand does."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from toolcode._app import ConnectEvent, Toolbox
from toolcode._cli._render import print_json, render_result, trace_table
from toolcode._errors import describe_error
from toolcode.exceptions import ConfigurationError, ToolCodeError

__all__ = ["UsageError", "connected", "run_command"]


class UsageError(Exception):
    """Bad command-line usage that argparse could not catch (exit code 2)."""


def _stdout() -> Console:
    return Console(highlight=False, soft_wrap=True)


def _stderr() -> Console:
    return Console(stderr=True, highlight=False)


def _build_toolbox(args: argparse.Namespace) -> Toolbox:
    engine = getattr(args, "engine", None)
    if getattr(args, "demo", False):
        from toolcode.demo import demo_toolbox

        return demo_toolbox(engine=engine)
    config = args.config or os.environ.get("TOOLCODE_CONFIG")
    if config is None and args.command in ("search", "describe", "tools", "namespaces", "report", "serve"):
        raise ConfigurationError(
            "config", "no servers configured: pass --config FILE (or --demo), or set TOOLCODE_CONFIG"
        )
    return Toolbox.from_config(config, engine=engine, strict=args.strict)


@asynccontextmanager
async def connected(args: argparse.Namespace) -> AsyncGenerator[Toolbox]:
    """A connected toolbox for the command, with progress on a terminal; closed on exit."""
    box = _build_toolbox(args)
    err = _stderr()
    try:
        if err.is_terminal and box.backends:
            with err.status("connecting to servers…") as status:
                ready: list[str] = []

                def on_event(event: ConnectEvent) -> None:
                    if event.state == "ready":
                        ready.append(event.backend)
                        err.print(
                            f"[green]✓[/] {escape(event.backend)}: {event.tools} tools ({event.duration_ms:.0f} ms)"
                        )
                    elif event.state == "failed":
                        err.print(f"[red]✗[/] {escape(event.backend)}: {escape(event.error or '')}")
                    status.update(f"connecting to servers… {len(ready)}/{len(box.backends)} ready")

                await box.connect(on_event)
        else:
            await box.connect()
        yield box
    finally:
        await box.aclose()


def _read_code(args: argparse.Namespace) -> str:
    if args.code is not None and args.file is not None:
        raise UsageError("give the code either with -c or as FILE, not both")
    if args.code is not None:
        return str(args.code)
    if args.file is not None and args.file != "-":
        with open(args.file, encoding="utf-8") as f:
            return f.read()
    if sys.stdin.isatty():
        raise UsageError("no code: pass FILE, -c CODE, or pipe the code on stdin")
    return sys.stdin.read()


async def cmd_exec(args: argparse.Namespace) -> int:
    code = _read_code(args)
    try:
        data: Any = json.loads(args.input) if args.input is not None else None
    except json.JSONDecodeError as exc:
        raise UsageError(f"--input is not valid JSON: {exc}") from exc
    async with connected(args) as box:
        try:
            result = await box.execute(
                code, input=data, timeout=args.timeout, max_tool_calls=args.max_tool_calls, namespaces=args.allow
            )
        except ToolCodeError as exc:
            if args.json:
                partial = exc.result.to_dict() if exc.result is not None else None
                print_json(
                    {
                        "ok": False,
                        "error": describe_error(exc, box.index),
                        "type": type(exc).__name__,
                        "result": partial,
                    }
                )
            else:
                err = _stderr()
                if exc.stdout:
                    _stdout().print(exc.stdout, end="" if exc.stdout.endswith("\n") else "\n", markup=False)
                if exc.tool_calls:
                    err.print(trace_table(exc.tool_calls))
                err.print(f"[red]error:[/] {escape(describe_error(exc, box.index))}")
            raise _Handled(exc) from exc
        if args.json:
            print_json({"ok": True, **result.to_dict()})
        else:
            render_result(_stdout(), result)
    return 0


class _Handled(Exception):
    """An error already shown to the user; only its exit code remains to be decided."""

    def __init__(self, cause: BaseException) -> None:
        self.cause = cause


async def cmd_search(args: argparse.Namespace) -> int:
    async with connected(args) as box:
        hits = box.index.search(args.query, limit=args.limit, namespaces=args.namespace)
        if args.json:
            print_json({"hits": [h.model_dump() for h in hits]})
            return 0
        table = Table("id", "score", "summary", title=f"search: {args.query}", title_justify="left")
        for h in hits:
            table.add_row(h.id, f"{h.score:.2f}", h.summary)
        _stdout().print(table)
    return 0


async def cmd_describe(args: argparse.Namespace) -> int:
    async with connected(args) as box:
        tool = box.index.get(args.tool_id)
        doc = box.store.describe(tool.id, args.level)
        if args.json:
            print_json(doc.to_dict())
        else:
            _stdout().print(doc.render(), markup=False)
    return 0


async def cmd_tools(args: argparse.Namespace) -> int:
    async with connected(args) as box:
        tools: list[Any] = []
        cursor: str | None = None
        while True:
            page = box.index.list_tools(cursor=cursor, limit=500, namespace=args.namespace)
            tools.extend(page.tools)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        if args.json:
            print_json({"tools": [{"id": t.id, "summary": t.summary} for t in tools]})
            return 0
        table = Table("id", "summary", title=f"{len(tools)} tools", title_justify="left")
        for t in tools:
            table.add_row(t.id, t.summary)
        _stdout().print(table)
    return 0


async def cmd_namespaces(args: argparse.Namespace) -> int:
    async with connected(args) as box:
        spaces = box.index.namespaces()
        if args.json:
            print_json({"namespaces": [n.model_dump() for n in spaces], "failed": box.failed})
            return 0
        table = Table("namespace", "tools", title="namespaces", title_justify="left")
        for n in spaces:
            table.add_row(n.name, str(n.tool_count))
        for name, why in box.failed.items():
            table.add_row(f"[red]{escape(name)}[/]", f"[red]failed: {escape(why)}[/]")
        _stdout().print(table)
    return 0


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
            table.add_row(ns["name"], str(ns["tools"]), f"{ns['tokens']:,}")
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
            await serve_stdio(box, expose=args.expose)
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
            expose=args.expose,
            on_ready=ready,
            tokens=tokens,
            allowed_hosts=args.allow_host,
            allowed_origins=args.allow_origin,
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
    "report": cmd_report,
    "serve": cmd_serve,
    "demo": cmd_demo,
}


async def run_command(args: argparse.Namespace) -> int:
    """Dispatch to the subcommand; errors propagate to :func:`toolcode.cli.main`."""
    return await _COMMANDS[args.command](args)
