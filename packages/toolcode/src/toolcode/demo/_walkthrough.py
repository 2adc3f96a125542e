"""``toolcode demo``: the code-mode loop, step by step, on the embedded catalog.

Everything goes through the real code-mode MCP server (connected in-process with the ``mcp``
SDK client): a search, a describe, one snippet that loops over several tools (local ones and
the ``mcp-server-time`` child process), its trace, and the context tokens of the same task
done by calling the tools directly.
"""

from __future__ import annotations

import json
from typing import Any

from mcp import Client
from rich.console import Console
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table

from toolcode._app import ConnectEvent, Toolbox
from toolcode._cli._render import print_json, trace_table
from toolcode._settings import Settings
from toolcode._tokens import ENCODING, TokenLedger
from toolcode._types import ToolCallRecord
from toolcode.demo._catalog import demo_backends
from toolcode.server import CodeModeServer

__all__ = ["DEMO_SNIPPET", "DEMO_TASK", "demo_toolbox", "run_demo"]

DEMO_TASK = "Which offices are open right now, and how many urgent tickets does each have?"

DEMO_SNIPPET = """\
offices = run_tool("helpdesk:list_offices", {})
report = []
for office in offices:
    now = run_tool("time:get_current_time", {"timezone": office["timezone"]})
    hour = int(now["datetime"][11:13])
    tickets = run_tool("helpdesk:list_tickets", {"office": office["city"]})
    urgent = [t["id"] for t in tickets if t["priority"] == "urgent"]
    report.append({
        "office": office["city"],
        "local_time": now["datetime"][11:16],
        "open": 9 <= hour < 18,
        "urgent": len(urgent),
        "oldest_urgent": urgent[:1],
    })
println(f"checked {len(offices)} offices")
__out = sorted(report, key=lambda r: -r["urgent"])
"""


def demo_toolbox(engine: str | None = None, *, settings: Settings | None = None) -> Toolbox:
    """A toolbox over the demo catalog (not yet connected).

    Args:
        engine: Engine name, or ``None`` for the default sandbox.
        settings: Server-wide settings (where state lives, limits); default: the built-in ones.

    Returns:
        The toolbox.
    """
    return Toolbox(demo_backends(), engine=engine, settings=settings)


async def run_demo(*, json_output: bool = False, console: Console | None = None) -> int:
    """Run the walkthrough and print it (or one JSON document).

    Args:
        json_output: Print one JSON document instead of the rich walkthrough.
        console: Where to print (default: stdout).

    Returns:
        The exit code: 0 on success.

    Raises:
        toolcode.exceptions.ToolCodeError: If the snippet fails (it should not).
    """
    out = Console(quiet=True) if json_output else console or Console(highlight=False)

    def step(title: str) -> None:
        out.rule(f"[b]{title}[/]", align="left")

    out.print(Panel.fit(f"[b]toolcode demo[/] — code mode on an embedded catalog\n[i]task:[/] {DEMO_TASK}"))
    step("1. connect: local help-desk tools + mcp-server-time (child process)")
    box = demo_toolbox()

    def on_event(event: ConnectEvent) -> None:
        name = "helpdesk (local Python functions)" if event.backend == "local" else f"{event.backend} (MCP server)"
        if event.state == "ready":
            out.print(f"  [green]✓[/] {name}: {event.tools} tools in {event.duration_ms:.0f} ms")
        elif event.state == "failed":
            out.print(f"  [red]✗[/] {event.backend}: {event.error}")

    records: list[ToolCallRecord] = []

    async def record(r: ToolCallRecord) -> None:
        records.append(r)

    try:
        await box.connect(on_event)
        box.observe_tool_calls(record)
        server = CodeModeServer(box)
        codemode = TokenLedger()
        notes: list[str] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            notes.append(message or "")
            out.print(f"  [dim]progress {progress:.0f}: {message}[/]")

        async with Client(server.server) as client:
            listed = await client.list_tools()
            codemode.add_definitions(t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in listed.tools)

            async def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
                codemode.add_call(name, args)
                res = await client.call_tool(name, args, progress_callback=on_progress)
                wire: dict[str, Any] = res.model_dump(by_alias=True, mode="json", exclude_none=True)
                codemode.add_result(name, wire)
                if res.is_error:
                    raise RuntimeError(f"{name} failed: {wire}")
                return dict(res.structured_content or {})

            step("2. search_tools: find the tools for the task")
            found = await call("search_tools", {"query": "open help-desk tickets of an office", "limit": 4})
            table = Table("id", "score", "summary", box=None)
            for h in found["hits"]:
                table.add_row(h["id"], f"{h['score']:.2f}", h["summary"])
            out.print(table)

            step("3. describe_tool: read one signature, not the whole catalog")
            doc = await call("describe_tool", {"tool_id": "helpdesk:list_tickets", "level": "schema"})
            out.print(Panel(doc["text"], title="helpdesk:list_tickets", title_align="left", expand=False))

            step("4. execute_code: one snippet loops over offices, calling two servers")
            out.print(Syntax(DEMO_SNIPPET, "python", theme="ansi_dark", line_numbers=True))
            result = await call("execute_code", {"code": DEMO_SNIPPET})

        step("5. the result: only the small answer comes back")
        out.print_json(json.dumps(result["value"]))
        if result.get("stdout"):
            out.print(f"stdout: {result['stdout'].strip()}")
        out.print(trace_table(records))

        # The same task by calling the tools directly: every definition in context, every
        # call and its full result fed back.
        direct = TokenLedger()
        direct.add_definitions(t.to_mcp() for t in box.index.list_tools(limit=1000).tools)
        for r in records:
            direct.add_call(r.tool_id.split(":", 1)[1], dict(r.args))
            direct.add_result(r.tool_id, json.dumps(r.structured, ensure_ascii=False))
        ratio = direct.total / codemode.total if codemode.total else 0.0

        if json_output:
            print_json(
                {
                    "task": DEMO_TASK,
                    "value": result["value"],
                    "tool_calls": result["calls"]["count"],
                    "progress_notifications": len(notes),
                    "tokens": {
                        "encoding": ENCODING,
                        "direct": direct.to_dict(),
                        "codemode": codemode.to_dict(),
                        "ratio": round(ratio, 2),
                    },
                }
            )
            return 0
        step(f"6. context tokens for this task (tiktoken {ENCODING})")
        table = Table("", "direct tool calling", "code mode", box=None)
        table.add_row("tool definitions", f"{direct.definitions:,}", f"{codemode.definitions:,}")
        table.add_row("calls written by the model", f"{direct.calls:,}", f"{codemode.calls:,}")
        table.add_row("results read by the model", f"{direct.results:,}", f"{codemode.results:,}")
        table.add_row("[b]total[/]", f"[b]{direct.total:,}[/]", f"[b]{codemode.total:,}[/]")
        table.add_row("model turns (tool calls)", str(direct.tool_calls), str(codemode.tool_calls))
        out.print(table)
        out.print(
            f"Code mode used [b]{ratio:.1f}x[/] fewer context tokens and "
            f"{direct.tool_calls - codemode.tool_calls} fewer "
            "turns. The gap grows with the catalog and the data: see `python bench/tokens.py`."
        )
        out.print("[dim]Next: `toolcode serve --config mcp.json` puts this in front of your own MCP servers.[/]")
        return 0
    finally:
        await box.aclose()
