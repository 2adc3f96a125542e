"""What masking secrets costs a 1 MB result, against the same call with nothing to mask.

Usage:
    uv run python bench/redact.py [--json] [--calls N]

Every successful result passes ``DefaultRunner``'s mask of the registered secrets (as they are,
percent-encoded, JSON-escaped, base64). This measures ``runner.run`` on a tool whose backend
hands back a prebuilt 1 MB result at once, so what is timed is the runner's own work:

- ``reference``: a runner with no secrets registered (``redactor=Redactor()``), the path every
  result took before masking existed (one check, nothing scanned);
- ``clean``: five registered secrets (a GitHub token, an API key with ``/+=``, a password, a
  bearer token, a base64-looking key), none in the result: the common case;
- ``one secret``: the same, with one secret (percent-encoded) in the middle of the result;
- ``every item``: a secret in every item (the worst case for a structured result).

Results: ``text`` (one 1 MB string, what a text tool returns), ``json`` (a 1 MB list of
GitHub-issue-like objects), ``mcp`` (an MCP result: a 1 MB JSON text block and its parsed
value, both masked); and ``small`` (a search-shaped object of 150 bytes, 100 times as many
calls), for what masking adds to an everyday call. Reference and masked calls alternate, N of
each, in one event loop; each call is timed in CPU time of this process (the machine is
shared: wall time would mostly measure the other processes) and in wall time. The cost is
p50(masked) - p50(reference).

Reference for scale, measured in the same run: ``parse_ms``, the CPU time of ``json.loads`` of
the ``json`` megabyte, which every backend spends to read such a result. Target: masking a
result without a secret (the common case) costs less than reading it: at most one parse for
``text`` and ``json``, two for ``mcp`` (two copies of the megabyte: the text block and its
parsed value, each scanned).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import quote

import anyio

from toolindex import InMemoryIndex, Tool
from toolrun import BackendResult, DefaultRunner, ProviderBackend, Redactor

MB = 1_000_000
SECRETS = (
    "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "sk-live/Qk+3m=Rv!5yg0a9",
    "hunter2-correct-horse-battery",
    "Bearer-3f9a7c1e5b2d4068",
    "Zm9vYmFyYmF6cXV4eXp6eQ==",
)
TARGET_OF_PARSE = {"text": 1.0, "json": 1.0, "mcp": 2.0}


def _words(rng: random.Random, n: int) -> str:
    vocab = ("the", "issue", "fails", "when", "token", "page", "retry", "server", "returns", "error", "fix", "a")
    return " ".join(rng.choice(vocab) for _ in range(n))


def _issues(secret: str | None, every: bool) -> list[dict[str, Any]]:
    rng = random.Random(7)
    items: list[dict[str, Any]] = []
    size, i = 0, 0
    while size < MB:
        item = {
            "id": i,
            "number": 1000 + i,
            "title": _words(rng, 6),
            "body": _words(rng, 40),
            "url": f"https://api.example.com/repos/o/r/issues/{1000 + i}",
            "labels": [{"name": "bug", "color": "d73a4a"}, {"name": "p2", "color": "0e8a16"}],
            "user": {"login": f"user{i % 97}", "site_admin": False},
            "comments": i % 13,
            "score": i * 0.37,
        }
        items.append(item)
        size += len(json.dumps(item))
        i += 1
    if secret is not None:
        for item in items if every else [items[len(items) // 2]]:
            item["url"] += f"?page=2&key={quote(secret, safe='')}"
    return items


def _results() -> dict[str, dict[str, BackendResult]]:
    rng = random.Random(3)
    text = _words(rng, MB // 5)[:MB]
    one = quote(SECRETS[1], safe="")
    out: dict[str, dict[str, BackendResult]] = {}
    out["text"] = {
        "clean": BackendResult(text),
        "one secret": BackendResult(text[: MB // 2] + f" {one} " + text[MB // 2 :]),
        "every item": BackendResult(text.replace(" fix ", f" {one} ")),
    }
    small = {
        "query": "weather in paris",
        "hits": [{"id": i, "title": f"forecast {i}", "score": 1 / (i + 1)} for i in range(3)],
    }
    out["small"] = {"clean": BackendResult(small), "one secret": BackendResult({**small, "next": f"?key={one}"})}
    for case, secret, every in (
        ("clean", None, False),
        ("one secret", SECRETS[1], False),
        ("every item", SECRETS[1], True),
    ):
        issues = _issues(secret, every)
        out.setdefault("json", {})[case] = BackendResult(issues)
        out.setdefault("mcp", {})[case] = BackendResult(issues, ({"type": "text", "text": json.dumps(issues)},))
    return out


class _Fixed:
    """A provider whose tools return prebuilt results (no work per call)."""

    def __init__(self, results: Mapping[str, BackendResult]) -> None:
        self.results = results

    async def list_tools(self) -> list[Tool | Mapping[str, Any]]:
        return [{"name": name, "inputSchema": {"type": "object"}} for name in self.results]

    async def call_tool(self, name: str, args: Mapping[str, Any]) -> BackendResult:
        return self.results[name]


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


async def _pair(
    n: int, masked: Callable[[], Awaitable[Any]], reference: Callable[[], Awaitable[Any]]
) -> dict[str, float]:
    for _ in range(2):
        await masked()
        await reference()
    times: dict[str, list[float]] = {"masked_cpu": [], "reference_cpu": [], "masked_wall": [], "reference_wall": []}
    gc.collect()
    for i in range(n):
        for name, call in (("masked", masked), ("reference", reference))[:: 1 if i % 2 == 0 else -1]:
            c0, w0 = time.process_time_ns(), time.perf_counter_ns()
            await call()
            c1, w1 = time.process_time_ns(), time.perf_counter_ns()
            times[f"{name}_cpu"].append((c1 - c0) / 1e6)
            times[f"{name}_wall"].append((w1 - w0) / 1e6)
    p50 = {k: _pct(v, 0.5) for k, v in times.items()}
    return {
        "masked_cpu_p50_ms": round(p50["masked_cpu"], 3),
        "reference_cpu_p50_ms": round(p50["reference_cpu"], 3),
        "cost_ms": round(p50["masked_cpu"] - p50["reference_cpu"], 3),
        "masked_wall_p50_ms": round(p50["masked_wall"], 3),
        "reference_wall_p50_ms": round(p50["reference_wall"], 3),
    }


def _parse_ms(text: str, n: int) -> float:
    cpu: list[float] = []
    for _ in range(n):
        c0 = time.process_time_ns()
        json.loads(text)
        cpu.append((time.process_time_ns() - c0) / 1e6)
    return round(_pct(cpu, 0.5), 3)


async def _measure(n: int) -> dict[str, Any]:
    results = _results()
    flat = {f"{kind}.{case.replace(' ', '_')}": r for kind, cases in results.items() for case, r in cases.items()}
    out: dict[str, Any] = {"calls": n, "secrets": len(SECRETS), "bytes": MB, "cases": {}}
    masked_runner = DefaultRunner(InMemoryIndex(), [ProviderBackend("b", _Fixed(flat))], redactor=Redactor(SECRETS))
    plain_runner = DefaultRunner(InMemoryIndex(), [ProviderBackend("b", _Fixed(flat))], redactor=Redactor())
    parse_text = json.dumps(results["json"]["clean"].structured)
    parse: list[float] = []
    async with masked_runner, plain_runner:
        await masked_runner.attach()
        await plain_runner.attach()
        for kind, cases in results.items():
            for case in cases:
                tool = f"b:{kind}.{case.replace(' ', '_')}"
                got = await masked_runner.run(tool)
                shown = json.dumps([got.structured, list(got.content)])
                assert all(s not in shown for s in SECRETS) and (case == "clean" or "***" in shown)
                calls = n * 100 if kind == "small" else n
                row = await _pair(calls, lambda t=tool: masked_runner.run(t), lambda t=tool: plain_runner.run(t))
                out["cases"][f"{kind} / {case}"] = row
                parse.append(_parse_ms(parse_text, 3))  # between the cases, so it sees the same load
    out["parse_ms"] = round(statistics.median(parse), 3)
    out["targets_ms"] = {k: round(f * out["parse_ms"], 3) for k, f in TARGET_OF_PARSE.items()}
    out["meets_targets"] = all(out["cases"][f"{k} / clean"]["cost_ms"] <= t for k, t in out["targets_ms"].items())
    return out


def _table(r: dict[str, Any]) -> str:
    rows = [
        f"Masking {r['secrets']} registered secrets in {r['bytes'] / 1e6:g} MB results (and a small one): "
        f"DefaultRunner.run, {r['calls']} calls per case (small: 100 times as many), alternating with a runner "
        "that has none (the reference)"
    ]
    rows.append(
        f"{'result / case':<22}{'masked CPU ms':>14}{'reference CPU ms':>18}{'cost ms':>10}{'masked wall ms':>16}"
    )
    for name, c in r["cases"].items():
        rows.append(
            f"{name:<22}{c['masked_cpu_p50_ms']:>14.3f}{c['reference_cpu_p50_ms']:>18.3f}"
            f"{c['cost_ms']:>10.3f}{c['masked_wall_p50_ms']:>16.3f}"
        )
    rows.append(f"reference: json.loads of the json megabyte takes {r['parse_ms']:.3f} ms CPU (p50, same run)")
    targets = ", ".join(f"{k} ≤ {v:.3f} ms" for k, v in r["targets_ms"].items())
    rows.append(f"target (no secret in the result): {targets}: {'meets' if r['meets_targets'] else 'MISSES'}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--calls", type=int, default=30, help="calls per case and runner (default 30)")
    ns = parser.parse_args(argv)
    result = anyio.run(_measure, ns.calls)
    print(json.dumps(result, indent=2) if ns.json else _table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
