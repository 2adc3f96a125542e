"""The check before the run: what it catches, what it never refuses, and what it costs.

Loads GitHub's 117-tool MCP server, several MCP-Bench and LiveMCPBench servers (vendored
catalogs; each tool answers any call its schema accepts) and the demo help-desk tools (typed
results) into one toolbox on the Monty engine, then runs the corpus of ``bench/typecheck_corpus.py``:

* every correct snippet with the check off (it must run: the corpus is checked first) and on;
* every broken snippet with the check on: *caught* when the run is refused with ``type_error``
  before any tool call (and with the check off, to count those that would fail at run time:
  a misspelt optional parameter is accepted by a schema that does not close its object, and
  silently ignored by the tool).

Cost: ``check_ms_p50`` times the check alone (warm) for a snippet importing a 2-tool namespace
and one importing the 117-tool GitHub namespace; ``unchecked_ms_p50`` and ``checked_ms_p50`` time
the whole run of the GitHub snippet with the check off and on, side by side in this process;
``added_ms_p50`` is their difference. Goals: caught >= 0.95, false rejects 0, added <= 15 ms.

Usage: ``uv run python bench/typecheck.py [--json] [--repeat N]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _eval import DATA_DIR, load_data
from toolcode import Toolbox
from toolcode._view import CatalogView
from toolcode.demo import helpdesk_backend
from toolcode.server import log_to_stderr
from toolrun import ProviderBackend
from typecheck_corpus import CALLS, DEMO, NAMESPACES

CAUGHT_GOAL = 0.95
ADDED_MS_GOAL = 15.0
MUTATIONS = ("misspelt_parameter", "missing_parameter", "wrong_type", "enum_value", "unknown_tool", "positional")


class AcceptAll:
    """A provider of catalog tools that answers every call (the runner has validated its arguments)."""

    def __init__(self, tools: Sequence[Mapping[str, Any]]) -> None:
        self._tools = [
            {"name": t["name"], "description": t.get("description") or "", "inputSchema": t["input_schema"]}
            for t in tools
        ]

    async def list_tools(self) -> Sequence[Mapping[str, Any]]:
        return self._tools

    async def call_tool(self, name: str, args: Mapping[str, Any]) -> Any:
        return {"tool": name, "args": dict(args)}


@dataclass(frozen=True)
class Snippet:
    name: str
    code: str
    broken: bool
    style: str
    kind: str


def _backends() -> list[Any]:
    out: list[Any] = [helpdesk_backend()]
    for file, namespaces in NAMESPACES.items():
        tools = load_data(DATA_DIR, file)["tools"]
        for ns in namespaces:
            mine = [t for t in tools if t["namespace"] == ns]
            out.append(ProviderBackend(ns, AcceptAll(mine), namespace=ns))
    return out


def _py(value: Any) -> str:
    return repr(value)


def _call(
    style: str, module: str, function: str, tool_id: str, args: Mapping[str, Any], positional: bool = False
) -> str:
    if style == "module":
        if positional:
            first, *rest = args.items()
            parts = [_py(first[1])] + [f"{k}={_py(v)}" for k, v in rest]
        else:
            parts = [f"{k}={_py(v)}" for k, v in args.items()]
        return f"from tools import {module}\nr = {module}.{function}({', '.join(parts)})\nr"
    return f"r = run_tool({tool_id!r}, {_py(dict(args))})\nr"


def _mutate(kind: str, schema: Mapping[str, Any], args: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
    """One mistake in ``args`` (``None`` when this call has no place for it)."""
    props: Mapping[str, Any] = schema.get("properties") or {}
    required = [r for r in schema.get("required") or [] if r in args]
    if kind == "misspelt_parameter":
        name = next(iter(args))
        wrong = name[:-1] if len(name) > 3 else name + "x"
        return {(wrong if k == name else k): v for k, v in args.items()}, ""
    if kind == "missing_parameter" and required:
        return {k: v for k, v in args.items() if k != required[-1]}, ""
    if kind == "wrong_type":
        for k, v in args.items():
            t = props.get(k, {}).get("type")
            if t == "string" and "enum" not in props[k]:
                return {**args, k: 12345}, ""
            if t in ("number", "integer") and not isinstance(v, bool):
                return {**args, k: "many"}, ""
            if t == "array":
                return {**args, k: "not a list"}, ""
    if kind == "enum_value":
        for k in args:
            if "enum" in props.get(k, {}):
                return {**args, k: "no-such-value"}, ""
    if kind in ("unknown_tool", "positional"):
        return dict(args), kind
    return None


def corpus(box: Toolbox) -> list[Snippet]:
    modules = box.executor.modules
    out: list[Snippet] = []
    for i, (tool_id, args) in enumerate(CALLS):
        tool = box.index.get(tool_id)
        module = modules.module_name(tool.namespace)
        assert module is not None, tool_id
        function = next(f for f, fn in modules.functions(tool.namespace).items() if fn.tool_id == tool_id)
        for style in ("module", "literal"):
            code = _call(style, module, function, tool_id, args)
            out.append(Snippet(f"{tool_id} {style}", code, False, style, "correct"))
        # Two mistakes per call, the kinds in turn, the styles alternating.
        made = 0
        for k in range(len(MUTATIONS)):
            kind = MUTATIONS[(2 * i + k) % len(MUTATIONS)]
            style = "module" if (i + made) % 2 == 0 or kind == "positional" else "literal"
            mutated = _mutate(kind, tool.input_schema, dict(args))
            if mutated is None:
                continue
            new_args, special = mutated
            if special == "unknown_tool":
                fn, tid = function[:-1], tool_id[:-1]
                code = _call(style, module, fn, tid, new_args)
            else:
                code = _call(style, module, function, tool_id, new_args, positional=special == "positional")
            out.append(Snippet(f"{tool_id} {kind} {style}", code, True, style, kind))
            made += 1
            if made == 2:
                break
    for name, code, broken in DEMO:
        out.append(Snippet(f"helpdesk: {name}", code, broken, "module", "typed_result" if broken else "correct"))
    return out


def _p50(xs: Sequence[float]) -> float:
    return round(statistics.median(xs), 3)


async def timing(box: Toolbox, repeat: int) -> dict[str, Any]:
    view = CatalogView(box.index, None)
    checker = box.executor.checker
    two = "from tools import bing_cn_mcp\nr = bing_cn_mcp.bing_search(query='weather', num_results=3)\nr"
    gh = "from tools import github\nr = github.list_issues(owner='octo', repo='hello', perPage=5)\nr"
    out: dict[str, list[float]] = {"2_tools": [], "117_tools": [], "checked": [], "unchecked": []}
    for i in range(repeat):
        # A new line each time: nothing is cached per snippet text.
        for key, code in (("2_tools", two), ("117_tools", gh)):
            t0 = time.perf_counter()
            found = await checker.check(f"{code}\nx = {i}", view)
            out[key].append((time.perf_counter() - t0) * 1000)
            assert not found, found
        for key, mode in (("unchecked", "off"), ("checked", "strict")):
            t0 = time.perf_counter()
            res = await box.codemode.execute(f"{gh}\nx = {i}", options={"type_check": mode})
            out[key].append((time.perf_counter() - t0) * 1000)
            assert res.ok, res.error
    checked, unchecked = _p50(out["checked"]), _p50(out["unchecked"])
    return {
        "check_ms_p50": {"2_tools": _p50(out["2_tools"]), "117_tools": _p50(out["117_tools"])},
        "unchecked_ms_p50": unchecked,
        "checked_ms_p50": checked,
        "added_ms_p50": round(checked - unchecked, 3),
    }


async def run(repeat: int) -> dict[str, Any]:
    async with Toolbox(_backends(), engine="monty") as box:
        # The first check after the catalog loads: stubs rendered, checker session started.
        t0 = time.perf_counter()
        await box.executor.checker.check(
            "from tools import github\ngithub.list_issues(owner='octo', repo='hello')", CatalogView(box.index, None)
        )
        cold = (time.perf_counter() - t0) * 1000
        snippets = corpus(box)
        fail_unchecked = 0
        corpus_errors: list[str] = []
        caught: list[str] = []
        missed: list[str] = []
        false_rejects: list[str] = []
        for s in snippets:
            plain = await box.codemode.execute(s.code, options={"type_check": "off"})
            if not s.broken and not plain.ok:
                corpus_errors.append(f"{s.name}: does not run: {plain.error}")
                continue
            fail_unchecked += s.broken and not plain.ok
            checked = await box.codemode.execute(s.code)
            refused = checked.error is not None and checked.error.code == "type_error" and checked.calls.count == 0
            if s.broken:
                (caught if refused else missed).append(s.name)
            elif refused:
                assert checked.error is not None
                false_rejects.append(f"{s.name}: {checked.error.message}")
        if corpus_errors:
            raise SystemExit("the corpus is wrong:\n" + "\n".join(corpus_errors))
        broken = sum(s.broken for s in snippets)
        result: dict[str, Any] = {
            "caught_before_run": round(len(caught) / broken, 4),
            "false_rejects": len(false_rejects),
            **(await timing(box, repeat)),
            "check_ms_cold_117_tools": round(cold, 1),
            "snippets": {"broken": broken, "correct": len(snippets) - broken},
            "broken_failing_unchecked": fail_unchecked,
            "by_kind": {
                kind: f"{sum(1 for s in snippets if s.kind == kind and s.name in caught)}/"
                f"{sum(1 for s in snippets if s.kind == kind)}"
                for kind in (*MUTATIONS, "typed_result")
            },
            "missed": missed,
            "false_reject_details": false_rejects,
        }
        result["goals"] = {
            "caught_before_run": result["caught_before_run"] >= CAUGHT_GOAL,
            "false_rejects": result["false_rejects"] == 0,
            "added_ms_p50": result["added_ms_p50"] <= ADDED_MS_GOAL,
        }
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--repeat", type=int, default=50, help="timed repetitions (default: %(default)s)")
    args = parser.parse_args()
    log_to_stderr(logging.WARNING)
    result = asyncio.run(run(args.repeat))
    if args.json:
        print(json.dumps(result, indent=2))
        return
    snip = result["snippets"]
    print(
        f"corpus: {snip['broken']} broken snippets ({result['broken_failing_unchecked']} of them also fail "
        f"when run unchecked), {snip['correct']} correct ones"
    )
    print(f"{'measure':<34}{'value':>12}{'goal':>12}")
    rows = [
        ("caught before the run", f"{result['caught_before_run']:.3f}", f">= {CAUGHT_GOAL}"),
        ("false rejects", str(result["false_rejects"]), "0"),
        ("check, 2-tool module (ms p50)", f"{result['check_ms_p50']['2_tools']:.2f}", ""),
        ("check, 117-tool module (ms p50)", f"{result['check_ms_p50']['117_tools']:.2f}", ""),
        ("check, 117 tools, cold (ms)", f"{result['check_ms_cold_117_tools']:.1f}", ""),
        ("run unchecked (ms p50)", f"{result['unchecked_ms_p50']:.2f}", "reference"),
        ("run checked (ms p50)", f"{result['checked_ms_p50']:.2f}", ""),
        ("added by the check (ms p50)", f"{result['added_ms_p50']:.2f}", f"<= {ADDED_MS_GOAL:g}"),
    ]
    for name, value, goal in rows:
        print(f"{name:<34}{value:>12}{goal:>12}")
    print("by kind (caught/broken): " + ", ".join(f"{k} {v}" for k, v in result["by_kind"].items()))
    for name in result["missed"]:
        print(f"  missed: {name}")
    for line in result["false_reject_details"]:
        print(f"  false reject: {line}")
    print("goals: " + ", ".join(f"{k} {'met' if v else 'NOT met'}" for k, v in result["goals"].items()))


if __name__ == "__main__":
    main()
