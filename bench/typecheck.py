"""The check before the run: it never refuses working code, it catches broken code, and what it costs.

Two corpora, each in both call styles (``from tools import ns`` and ``run_tool("ns:name", ...)``),
over one toolbox on the Monty engine:

* **Correct snippets** (``bench/typecheck_corpus.py``): every snippet the docs show (found in
  docs/*.md and README.md), snippets written the way models write them over the demo help desk,
  the real ``mcp-server-time`` and the recorded tools of ``mcp-server-git`` and the npm
  ``server-filesystem``, ``server-memory`` and ``server-everything`` (answered by local fakes of
  their behaviour, ``bench/typecheck_tools.py``), and one call per tool of a sample of vendored
  catalogs (GitHub's MCP server, MCP-Bench and LiveMCPBench servers; each tool answers any call its
  schema accepts). Each runs with the check off (it must succeed: the corpus is checked first) and
  on: a **false reject** is a run refused with ``type_error``.
* **Broken snippets**: one mistake each, of every kind the check catches (unknown tool or module,
  misspelt, missing or positional argument, a literal of the wrong type or outside an enum, a
  wrong literal inside a nested argument, misuse of a typed result), written by hand and derived
  from the vendored calls. *Caught* means refused with ``type_error`` before any tool call. Each
  also runs with the check off: where that run fails, the error code it fails with must be the
  code of one of the check's diagnostics (``code_agreement``); a misspelt optional argument of a
  tool whose schema lets unknown keys through does not fail when run (the tool ignores it).

The ``run_tool`` corpus (``RUN_TOOL_CORRECT``, ``RUN_TOOL_BROKEN``): programs written the way models
write them with ``run_tool("ns:name", {...})``, results misused included; reported apart
(``run_tool_corpus``), goal: every broken one caught, no correct one refused.

Cost: ``check_ms_p50`` times the check alone (warm) for a snippet importing a 2-tool namespace and
one importing the 117-tool GitHub namespace (and the same with its result used, where ``ty`` is
asked too; a snippet that only calls and hands results on is spared it); ``unchecked_ms_p50`` and
``checked_ms_p50`` time the whole run of the GitHub snippet with the check off and on, side by side
in this process;
``added_ms_p50`` is their difference. Goals: 0 false rejects on >= 200 correct snippets (every doc
example among them), >= 0.95 of the broken ones caught before any call in each style, added <= 15 ms,
the 117-tool check <= 1 ms.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _eval import DATA_DIR, load_data
from toolcode import Settings, Toolbox
from toolcode._view import CatalogView
from toolcode.server import log_to_stderr
from toolrun import ProviderBackend
from typecheck_corpus import (
    BROKEN_ARGUMENTS,
    BROKEN_MODULE,
    CALLS,
    DEMO,
    IDIOMS,
    LITERAL_BROKEN,
    LITERAL_IDIOMS,
    NAMESPACES,
    RUN_TOOL_BROKEN,
    RUN_TOOL_CORRECT,
    doc_examples,
    literal_style,
)
from typecheck_tools import corpus_backends, reset

CORRECT_GOAL = 200
CAUGHT_GOAL = 0.95
ADDED_MS_GOAL = 15.0
CHECK_MS_GOAL = 1.0
LONG_CHAIN_RATIO_GOAL = 3.0
"""A long snippet whose names are bound one from another, against one as long whose aren't."""
LONG_LINES = 1300
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
    source: str
    """``docs``, ``idioms`` (written here), ``catalogs`` (vendored calls) or ``demo``."""
    input: Any = None
    session: str | None = None
    run: bool = True
    """``False``: checked only (a saved snippet's code: its input comes from a later call)."""


def _backends() -> list[Any]:
    out: list[Any] = corpus_backends()
    for file, namespaces in NAMESPACES.items():
        tools = load_data(DATA_DIR, file)["tools"]
        for ns in namespaces:
            mine = [t for t in tools if t["namespace"] == ns]
            out.append(ProviderBackend(ns, AcceptAll(mine), namespace=ns))
    return out


def _call(
    style: str, module: str, function: str, tool_id: str, args: Mapping[str, Any], positional: bool = False
) -> str:
    if style == "module":
        if positional:
            first, *rest = args.items()
            parts = [repr(first[1])] + [f"{k}={v!r}" for k, v in rest]
        else:
            parts = [f"{k}={v!r}" for k, v in args.items()]
        return f"from tools import {module}\nr = {module}.{function}({', '.join(parts)})\nr"
    return f"r = run_tool({tool_id!r}, {dict(args)!r})\nr"


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


def _style_of(code: str) -> str:
    return "module" if "from tools" in code or "import tools" in code else "literal"


def corpus(box: Toolbox) -> list[Snippet]:
    modules = box.services.modules.seen_by(CatalogView(box.index))
    out: list[Snippet] = []

    def resolve(module: str, function: str) -> tuple[str, bool] | None:
        ns = modules.namespace_of(module)
        fn = modules.functions(ns).get(function) if ns is not None else None
        return (fn.tool_id, fn.awaitable) if fn is not None else None

    for ex in doc_examples():
        # An example the docs show as refused (``python refused``) belongs to the broken corpus.
        style, kind = _style_of(ex.code), "docs" if ex.refused else "correct"
        run = ex.kind != "saved"
        out.append(Snippet(ex.where, ex.code, ex.refused, style, kind, "docs", ex.input, ex.session, run))
    for name, code in IDIOMS:
        out.append(Snippet(name, code, False, "module", "correct", "idioms"))
        out.append(Snippet(name, literal_style(code, resolve), False, "literal", "correct", "idioms"))
    out.extend(Snippet(name, code, False, "literal", "correct", "idioms") for name, code in LITERAL_IDIOMS)
    for name, code, kind in BROKEN_ARGUMENTS:
        out.append(Snippet(name, code, True, "module", kind, "idioms"))
        out.append(Snippet(name, literal_style(code, resolve), True, "literal", kind, "idioms"))
    out.extend(Snippet(name, code, True, "module", kind, "idioms") for name, code, kind in BROKEN_MODULE)
    out.extend(Snippet(name, code, True, "literal", kind, "idioms") for name, code, kind in LITERAL_BROKEN)
    for i, (tool_id, args) in enumerate(CALLS):
        tool = box.index.get(tool_id)
        module = modules.module_name(tool.namespace)
        assert module is not None, tool_id
        function = next(f for f, fn in modules.functions(tool.namespace).items() if fn.tool_id == tool_id)
        for style in ("module", "literal"):
            code = _call(style, module, function, tool_id, args)
            out.append(Snippet(f"{tool_id} {style}", code, False, style, "correct", "catalogs"))
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
            out.append(Snippet(f"{tool_id} {kind} {style}", code, True, style, kind, "catalogs"))
            made += 1
            if made == 2:
                break
    for name, code, broken in DEMO:
        kind = "typed_result" if broken else "correct"
        out.append(Snippet(f"helpdesk: {name}", code, broken, "module", kind, "demo"))
    out.extend(Snippet(name, code, False, "literal", "correct", "run_tool_corpus") for name, code in RUN_TOOL_CORRECT)
    out.extend(Snippet(name, code, True, "literal", kind, "run_tool_corpus") for name, code, kind in RUN_TOOL_BROKEN)
    return out


def _p50(xs: Sequence[float]) -> float:
    return round(statistics.median(xs), 3)


async def timing(box: Toolbox, repeat: int) -> dict[str, Any]:
    view = CatalogView(box.index, None)
    checker = box.services.checker
    two = "from tools import bing_cn_mcp\nr = bing_cn_mcp.bing_search(query='weather', num_results=3)\nr"
    gh = "from tools import github\nr = github.list_issues(owner='octo', repo='hello', perPage=5)\nr"
    # The same call with its result used: the part of the check that reads typed results runs too.
    used = gh + "\n[i['title'].upper() for i in r]"
    keys = ("2_tools", "117_tools", "117_tools_result_used", "checked", "unchecked")
    out: dict[str, list[float]] = {k: [] for k in keys}
    for i in range(repeat):
        # A new line each time: nothing is cached per snippet text.
        for key, code in (("2_tools", two), ("117_tools", gh), ("117_tools_result_used", used)):
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
    # A snippet near the check's length bound whose names are bound one from another (a helper rebinds
    # the first with ``global``), against one as long whose lines stand alone: what follows the names
    # must cost their number, not its square (it held the one-at-a-time check for 45 s).
    # A wrong argument: what the check found is then judged (the part that follows the names).
    call = "r = run_tool('github:list_issues', {'owner': 'octo', 'repo': 'hello', 'perPage': 'five'})\n"
    chain = "\n".join(f"a{i} = a{i - 1}" for i in range(LONG_LINES, 0, -1))
    apart = "\n".join(f"a{i} = {i}" for i in range(LONG_LINES, 0, -1))
    times: dict[str, list[float]] = {"chained": [], "apart": []}
    for i in range(5):  # alternated, the least of each: a busy machine's swings fall on both alike
        for key, lines in (("chained", chain), ("apart", apart)):
            code = f"def h():\n    global a0\n    a0 = {{}}\n{lines}\n{call}x = {i}"
            t0 = time.perf_counter()
            found = await checker.check(code, view)
            times[key].append((time.perf_counter() - t0) * 1000)
            assert found, key  # the argument is refused, whatever the names before it
    long_ms = {key: round(min(ts), 1) for key, ts in times.items()}
    return {
        "long_snippet_ms": {**long_ms, "ratio": round(long_ms["chained"] / long_ms["apart"], 2)},
        "check_ms_p50": {k: _p50(out[k]) for k in ("2_tools", "117_tools", "117_tools_result_used")},
        "unchecked_ms_p50": unchecked,
        "checked_ms_p50": checked,
        "added_ms_p50": round(checked - unchecked, 3),
    }


@dataclass
class _Tally:
    correct: dict[str, int]
    false_rejects: list[str]
    broken: dict[str, int]
    caught: dict[str, int]
    missed: list[str]
    by_kind: dict[str, list[int]]
    failing_unchecked: int = 0
    codes_agree: int = 0
    code_mismatches: list[str] | None = None
    checked_only: int = 0
    runs_unchecked: list[str] = field(default_factory=list[str])
    """Broken snippets caught by the check whose unchecked run does not fail."""


async def _run(box: Toolbox, s: Snippet, backends: Sequence[Any], check: str) -> Any:
    reset(backends)
    session = f"{s.session}-{check}" if s.session else None
    return await box.codemode.execute(s.code, input=s.input, session=session, options={"type_check": check})


async def run(repeat: int) -> dict[str, Any]:
    backends = _backends()
    async with Toolbox(backends, engine="monty", settings=_settings()) as box:
        # The first check after the catalog loads: stubs rendered, checker session started.
        t0 = time.perf_counter()
        await box.services.checker.check(
            "from tools import github\ngithub.list_issues(owner='octo', repo='hello')", CatalogView(box.index, None)
        )
        cold = (time.perf_counter() - t0) * 1000
        snippets = corpus(box)
        styles = ("module", "literal")
        t = _Tally(
            {k: 0 for k in styles}, [], {k: 0 for k in styles}, {k: 0 for k in styles}, [], {}, code_mismatches=[]
        )
        corpus_errors: list[str] = []
        docs = [s for s in snippets if s.source == "docs" and not s.broken]
        for s in snippets:
            if s.run:
                plain = await _run(box, s, backends, "off")
                if not s.broken and not plain.ok:
                    corpus_errors.append(f"{s.name} ({s.style}): does not run: {plain.error}")
                    continue
            else:
                plain = None
                t.checked_only += 1
            checked = await _run(box, s, backends, "strict")
            err = checked.error
            refused = err is not None and err.code == "type_error" and checked.calls.count == 0
            if not s.broken:
                t.correct[s.style] += 1
                if err is not None and err.code == "type_error":
                    t.false_rejects.append(f"{s.name} ({s.style}): {err.message}")
                continue
            t.broken[s.style] += 1
            t.by_kind.setdefault(s.kind, [0, 0])[1] += 1
            if refused:
                t.caught[s.style] += 1
                t.by_kind[s.kind][0] += 1
            else:
                t.missed.append(f"{s.name} ({s.style})")
            if plain is not None and plain.ok and refused:
                t.runs_unchecked.append(f"{s.name} ({s.style})")
            if plain is not None and not plain.ok and refused and err is not None:
                t.failing_unchecked += 1
                codes = {d.code for d in err.diagnostics or []}
                assert plain.error is not None, (s.name, s.style, plain)
                if plain.error.code in codes:
                    t.codes_agree += 1
                else:
                    assert t.code_mismatches is not None
                    t.code_mismatches.append(
                        f"{s.name} ({s.style}): run {plain.error.code}, check {sorted(map(str, codes))}"
                    )
        if corpus_errors:
            raise SystemExit("the corpus is wrong:\n" + "\n".join(corpus_errors))
        correct = sum(t.correct.values())
        broken = sum(t.broken.values())
        mine = [s for s in snippets if s.source == "run_tool_corpus"]
        run_tool_corpus = {
            "correct": sum(not s.broken for s in mine),
            "false_rejects": sum(f.startswith(f"{s.name} (") for s in mine for f in t.false_rejects),
            "broken": sum(s.broken for s in mine),
            "caught": sum(s.broken for s in mine) - sum(m == f"{s.name} ({s.style})" for s in mine for m in t.missed),
        }
        caught_by_style = {k: round(t.caught[k] / t.broken[k], 4) for k in styles if t.broken[k]}
        result: dict[str, Any] = {
            "correct": {"total": correct, **t.correct, "docs": len(docs), "checked_only": t.checked_only},
            "false_rejects": len(t.false_rejects),
            "broken": {"total": broken, **t.broken},
            "caught_before_run": round(sum(t.caught.values()) / broken, 4),
            "caught_by_style": caught_by_style,
            "by_kind": {k: f"{v[0]}/{v[1]}" for k, v in sorted(t.by_kind.items())},
            "run_tool_corpus": run_tool_corpus,
            "broken_failing_unchecked": t.failing_unchecked,
            "code_agreement": f"{t.codes_agree}/{t.failing_unchecked}",
            **(await timing(box, repeat)),
            "check_ms_cold_117_tools": round(cold, 1),
            "missed": t.missed,
            "false_reject_details": t.false_rejects,
            "code_mismatches": t.code_mismatches,
            "caught_but_running_unchecked": t.runs_unchecked,
        }
        result["goals"] = {
            "correct_snippets": correct >= CORRECT_GOAL,
            "false_rejects": result["false_rejects"] == 0,
            "caught_before_run": all(v >= CAUGHT_GOAL for v in caught_by_style.values()),
            "code_agreement": t.codes_agree == t.failing_unchecked,
            "added_ms_p50": result["added_ms_p50"] <= ADDED_MS_GOAL,
            "check_ms_p50_117_tools": result["check_ms_p50"]["117_tools"] <= CHECK_MS_GOAL,
            "long_chain_ratio": result["long_snippet_ms"]["ratio"] <= LONG_CHAIN_RATIO_GOAL,
            "run_tool_corpus": run_tool_corpus["caught"] == run_tool_corpus["broken"]
            and run_tool_corpus["false_rejects"] == 0,
        }
        return result


def _long(ms: Mapping[str, float]) -> str:
    return f"{ms['chained']:.0f}/{ms['apart']:.0f} {ms['ratio']:.2f}x"


def _settings() -> Settings:
    # Sessions (the docs run some examples in one) need a state store: in memory here. Every call
    # is allowed: the bench measures the check, not approvals.
    return Settings.model_validate({"state": {"memory": True}, "policy": {"preset": "allow-all"}})


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
    c, b = result["correct"], result["broken"]
    print(
        f"correct snippets: {c['total']} ({c['module']} module style, {c['literal']} run_tool style; "
        f"{c['docs']} from the docs, {c['checked_only']} checked only)"
    )
    print(
        f"broken snippets: {b['total']} ({b['module']} module style, {b['literal']} run_tool style; "
        f"{result['broken_failing_unchecked']} of those caught also fail when run unchecked)"
    )
    print(f"{'measure':<38}{'value':>12}{'goal':>12}")
    rows = [
        ("false rejects", str(result["false_rejects"]), "0"),
        ("caught before the run", f"{result['caught_before_run']:.3f}", f">= {CAUGHT_GOAL}"),
        *((f"  caught, {k} style", f"{v:.3f}", f">= {CAUGHT_GOAL}") for k, v in result["caught_by_style"].items()),
        ("run's code among the check's", result["code_agreement"], "all"),
        (
            "run_tool corpus: caught",
            f"{result['run_tool_corpus']['caught']}/{result['run_tool_corpus']['broken']}",
            "all",
        ),
        (
            "run_tool corpus: false rejects",
            f"{result['run_tool_corpus']['false_rejects']} of {result['run_tool_corpus']['correct']}",
            "0",
        ),
        ("check, 2-tool module (ms p50)", f"{result['check_ms_p50']['2_tools']:.2f}", ""),
        ("check, 117-tool module (ms p50)", f"{result['check_ms_p50']['117_tools']:.2f}", f"<= {CHECK_MS_GOAL:g}"),
        ("  same, result used (ms p50)", f"{result['check_ms_p50']['117_tools_result_used']:.2f}", ""),
        ("check, 117 tools, cold (ms)", f"{result['check_ms_cold_117_tools']:.1f}", ""),
        ("run unchecked (ms p50)", f"{result['unchecked_ms_p50']:.2f}", "reference"),
        ("run checked (ms p50)", f"{result['checked_ms_p50']:.2f}", ""),
        ("added by the check (ms p50)", f"{result['added_ms_p50']:.2f}", f"<= {ADDED_MS_GOAL:g}"),
        (f"{LONG_LINES}-line chain / apart (ms)", _long(result["long_snippet_ms"]), f"<= {LONG_CHAIN_RATIO_GOAL:g}x"),
    ]
    for name, value, goal in rows:
        print(f"{name:<38}{value:>12}{goal:>12}")
    print("by kind (caught/broken): " + ", ".join(f"{k} {v}" for k, v in result["by_kind"].items()))
    for name in result["missed"]:
        print(f"  missed: {name}")
    for line in result["false_reject_details"]:
        print(f"  false reject: {line}")
    for line in result["code_mismatches"]:
        print(f"  code mismatch: {line}")
    for name in result["caught_but_running_unchecked"]:
        print(f"  caught, but runs when unchecked: {name}")
    print("goals: " + ", ".join(f"{k} {'met' if v else 'NOT met'}" for k, v in result["goals"].items()))


if __name__ == "__main__":
    main()
