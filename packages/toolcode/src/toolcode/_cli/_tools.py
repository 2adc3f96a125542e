"""``toolcode tools``: list the catalog, list the quarantined tools, approve reviewed definitions."""

from __future__ import annotations

import argparse
import getpass
from fnmatch import fnmatchcase
from typing import Any

from rich.console import Console

from toolcode._app import Toolbox
from toolcode._approval_request import approval_request
from toolcode._audit import tool_definition, tool_hash
from toolcode._cli._common import UsageError, again, operation, reply_text, stdout, table, when
from toolcode._cli._render import safe
from toolcode._metatools import as_operator
from toolcode._outcome import definition_text
from toolindex import ToolIndexError

__all__ = ["cmd_tools"]


async def cmd_tools(args: argparse.Namespace) -> int:
    if args.action == "approve":
        if not args.patterns:
            raise UsageError("tools approve needs tool ids with their digests (ID@DIGEST ...)")
        by = f"operator:{getpass.getuser()}"

        async def approve(box: Toolbox) -> Any:
            as_operator(box.codemode, None)  # the local user, held to policy.operators as at every door
            _show_definitions(args, box, list(args.patterns))
            return await box.codemode.approve_tools(list(args.patterns), by=by)

        return await operation(args, approve, reply_text)
    if args.action == "quarantined":

        async def quarantined(box: Toolbox) -> Any:
            return box.codemode.quarantined_tools()

        def show_quarantined(out: Console, r: Any, box: Toolbox) -> None:
            rows = [(t.tool_id, t.state, t.digest, t.approved_by or "-", when(t.approved_at)) for t in r.tools]
            columns = ("id", "state", "digest", "approved by", "approved")
            table(out, f"{len(r.tools)} quarantined tools", columns, rows)
            if r.tools:
                words = ("tools", "approve", "ID@DIGEST", "...")
                review = again(args, "describe", "ID", "--level", "full")
                out.print(f"review one, its whole definition with its digest: {review}", markup=False)
                out.print(f"approve what you reviewed: {again(args, *words)}", markup=False)

        return await operation(args, quarantined, show_quarantined)

    def show(out: Console, r: Any, box: Toolbox) -> None:
        table(out, f"{len(r.tools)} tools", ("id", "summary"), [(t.id, t.summary) for t in r.tools])
        if r.next_cursor:
            page = ["--limit", str(args.limit)] + (["--namespace", args.namespace] if args.namespace else [])
            out.print(f"more: {again(args, 'tools', '--cursor', r.next_cursor, *page)}", markup=False)

    return await operation(args, lambda box: box.codemode.list_tools(args.namespace, args.cursor, args.limit), show)


def _show_definitions(args: argparse.Namespace, box: Toolbox, named: list[str]) -> None:
    """Print each definition ``tools approve`` would approve, whole, with its digest (not with ``--json``).

    Named with digests, these are the definitions approved (one whose digest differs is refused);
    named without (ids, globs), nothing is approved and the command to approve exactly the
    definitions printed follows them.
    """
    if args.json:
        return
    bound, unbound = approval_request(named)
    cm, out = box.codemode, stdout()
    blocked = cm.quarantined_tools().tools
    covered = {t.tool_id: t.digest for t in blocked if any(fnmatchcase(t.tool_id, p) for p in unbound)}
    for tool_id in [*bound, *covered]:
        try:
            tool = cm.services.index.get(tool_id)
        except ToolIndexError:
            continue
        digest = tool_hash(tool)
        out.print(safe(f"# {tool.id} (digest: {digest})\n{definition_text(tool_definition(tool))}\n"), markup=False)
    if covered:
        line = again(args, "tools", "approve", *(f"{t}@{d}" for t, d in covered.items()))
        out.print(f"to approve exactly the definitions above: {line}", markup=False)
