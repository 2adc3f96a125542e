"""The argument parser of the ``toolcode`` command."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from toolcode._settings import DEFAULT_TOOLS, META_TOOLS

__all__ = ["EXIT_BY_CODE", "EXIT_CODES", "SNIPPET_FAILED_EXIT", "USAGE_EXIT", "build_parser", "exit_code"]

SNIPPET_FAILED_EXIT = 1
"""The snippet or a tool failed."""
USAGE_EXIT = 2
"""The command was used wrongly: its own arguments or options."""

EXIT_CODES: dict[int, str] = {
    0: "success",
    SNIPPET_FAILED_EXIT: "the snippet or a tool failed (syntax_error, runtime_error, type_error, tool_error, "
    "unknown_tool, ...; also invalid_arguments of a tool called inside the snippet)",
    USAGE_EXIT: "usage error: the command's own arguments or options are invalid (invalid_arguments)",
    3: "configuration error: config file, engine name, server entry (config_error)",
    4: "a limit stopped the run (timeout, tool_call_limit, output_limit, memory_limit, session_limit, quota_exceeded, "
    "response_too_large)",
    5: "an upstream server or the state store was unreachable, the engine failed or was busy "
    "(upstream_unavailable, server_unavailable, state_unavailable, engine_error, busy)",
    6: "the run is paused, waiting for an approval (approval_required)",
    130: "interrupted (Ctrl-C)",
}

EXIT_BY_CODE: dict[str, int] = {
    **dict.fromkeys(("syntax_error", "runtime_error", "type_error", "tool_error", "unknown_tool"), 1),
    **dict.fromkeys(("not_allowed", "approval_denied", "invalid_reference", "definition_changed"), 1),
    "invalid_arguments": 2,
    "config_error": 3,
    **dict.fromkeys(
        (
            "timeout",
            "tool_call_limit",
            "output_limit",
            "memory_limit",
            "session_limit",
            "quota_exceeded",
            "response_too_large",
        ),
        4,
    ),
    **dict.fromkeys(("busy", "upstream_unavailable", "server_unavailable", "engine_error", "state_unavailable"), 5),
    "approval_required": 6,
}
"""The one table from an error code (:class:`toolcode.ErrorCode`) to the exit code."""


def exit_code(code: str) -> int:
    """The exit code for an error code (1 for a code this table does not know)."""
    return EXIT_BY_CODE.get(code, 1)


_EPILOG = "exit codes:\n" + "\n".join(f"  {code:<4} {text}" for code, text in EXIT_CODES.items())


def _catalog_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("catalog")
    g.add_argument(
        "--config",
        metavar="FILE",
        help='MCP client config ({"mcpServers": {...}}); default: $TOOLCODE_CONFIG',
    )
    g.add_argument("--demo", action="store_true", help="use the embedded demo catalog instead of a config file")
    g.add_argument("--strict", action="store_true", help="fail if any configured server cannot start")
    st = p.add_argument_group("state (sessions, saved snippets, learned result shapes)")
    st.add_argument(
        "--state-dir", metavar="DIR", help="folder of the state file (default: the config's, else the user state dir)"
    )
    st.add_argument("--no-state", action="store_true", help="keep state in memory only, for this command")


def _http_check(name: str) -> Callable[[str], Any]:
    """An option's type: a check of the HTTP door's (``toolcode.server`` is imported only when the option is given)."""

    def check(value: str) -> Any:
        from toolcode.server import _http_address

        try:
            return getattr(_http_address, name)(value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from exc

    return check


def _at_least(low: float, kind: Callable[[str], Any]) -> Callable[[str], Any]:
    """An option's type: a number (``int`` or ``float``) of at least ``low``."""

    def check(value: str) -> Any:
        try:
            number = kind(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
        if not number >= low:  # NaN too
            raise argparse.ArgumentTypeError(f"{value!r} is below {low:g}")
        return number

    return check


def _tool_list(names: Sequence[str]) -> str:
    return ", ".join(names[:-1]) + " and " + names[-1]


def build_parser() -> argparse.ArgumentParser:
    """The parser for every subcommand."""
    fmt = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="toolcode",
        description="Code mode over MCP tools: search a tool catalog, read the docs you need, "
        "run one short Python program that calls many tools.",
        epilog=_EPILOG,
        formatter_class=fmt,
        allow_abbrev=False,  # an option is spelt whole: '--token' must not be taken for '--token-file'
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (to stderr); repeat for debug")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    with_options: list[tuple[argparse.ArgumentParser, bool, bool]] = []

    def command(
        name: str, help: str, description: str | None = None, *, catalog: bool = True, json: bool = True
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(
            name, help=help, description=description, epilog=_EPILOG, formatter_class=fmt, allow_abbrev=False
        )
        with_options.append((p, catalog, json))  # added last: after the command's own, in --help too
        return p

    p = command(
        "demo",
        "walk through code mode on an embedded catalog (no config, no network)",
        "Build an embedded catalog (local demo tools and the mcp-server-time server), then search, "
        "describe, run one snippet that loops over several tools, show the trace and the token comparison.",
        catalog=False,
    )

    p = command(
        "serve",
        "run the code-mode MCP server in front of the configured servers",
        f"Serve the code-mode tools over stdio (default) or streamable HTTP: {_tool_list(DEFAULT_TOOLS)}, "
        "or those the config's toolcode.tools lists (any of: "
        + ", ".join(META_TOOLS)
        + "), and upstream tools published with --expose.",
        catalog=False,
        json=False,
    )
    _catalog_options(p)  # before the HTTP door's own options, in --help too
    p.add_argument(
        "--http",
        metavar="HOST:PORT",
        type=_http_check("parse_http_address"),
        help="serve streamable HTTP at http://HOST:PORT/mcp ([IPv6]:PORT; :PORT for every interface; PORT 0: any); "
        "off loopback, bearer tokens are required",
    )
    g = p.add_argument_group("HTTP door (with --http; see 'Running the HTTP door' in docs/security.md)")
    g.add_argument(
        "--token-file",
        metavar="FILE",
        help="bearer tokens callers must send, one NAME:TOKEN (or TOKEN) per line, # comments; re-read when it "
        "changes. Also read: $TOOLCODE_HTTP_TOKENS (comma-separated). Never given on the command line",
    )
    g.add_argument(
        "--allow-host",
        metavar="HOST[:PORT]",
        action="append",
        default=[],
        type=_http_check("allowed_host"),
        help="also accept this Host header, e.g. the public name behind a reverse proxy (repeatable)",
    )
    g.add_argument(
        "--allow-origin",
        metavar="ORIGIN",
        action="append",
        default=[],
        type=_http_check("normalize_origin"),
        help="also accept requests from this browser Origin, e.g. https://app.example.com (repeatable; "
        "default: same-host origins only)",
    )
    g.add_argument(
        "--sessions-per-caller",
        metavar="N",
        type=_at_least(1, int),
        help="with tokens, the 2025-11-25 sessions one caller may hold; opening one more ends its least recently used "
        "(default: 100)",
    )
    g.add_argument(
        "--session-idle-timeout",
        metavar="SECONDS",
        type=_at_least(1, float),
        help="seconds a 2025-11-25 session may go without a request before it ends (default: 1800)",
    )
    g.add_argument(
        "--stop-grace",
        metavar="SECONDS",
        type=_at_least(1, float),
        help="on SIGTERM or SIGINT, seconds the requests in flight may take to finish before they are cancelled "
        "(default: 10)",
    )
    p.add_argument(
        "--expose",
        metavar="NS:NAME",
        action="append",
        default=[],
        help="also publish this upstream tool directly, as NS__NAME (repeatable; * wildcards allowed)",
    )
    p.add_argument("--engine", metavar="NAME", help="sandbox engine (entry point of toolcode.engines)")

    p = command(
        "exec",
        "run a snippet against the catalog",
        "Run Python code (from FILE, -c CODE, or stdin) that calls tools; print its value, stdout and "
        "the summary of its tool calls. Limits: 0 switches one off.",
    )
    p.add_argument("file", nargs="?", metavar="FILE", help="file with the code (UTF-8; '-' or nothing: stdin)")
    p.add_argument("-c", dest="code", metavar="CODE", help="the code as a string")
    p.add_argument("--input", metavar="JSON", help="any JSON value the code reads as `input`")
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="limit for the whole run (0: none)")
    p.add_argument("--max-tool-calls", type=int, metavar="N", help="stop after N tool calls (0: no limit)")
    p.add_argument("--max-output-chars", type=int, metavar="N", help="output budget in characters (0: no limit)")
    p.add_argument("--allow", metavar="NS", action="append", help="only these namespaces are visible (repeatable)")
    p.add_argument(
        "--trace",
        choices=("summary", "full", "none"),
        help="how much of the tool-call trace to return (default: none; the terminal shows the call count anyway)",
    )
    p.add_argument(
        "--no-type-check",
        dest="type_check",
        action="store_const",
        const="off",
        help="run without first checking the tool calls against their signatures",
    )
    p.add_argument(
        "--no-speculate",
        dest="speculate",
        action="store_const",
        const=False,
        help="start no call before the snippet reaches it (by default, known reads start early)",
    )
    p.add_argument("--session", metavar="NAME", help="run in this session: variables persist from run to run")
    p.add_argument(
        "--approve",
        choices=("all", "none"),
        help="decide calls the policy asks about without a prompt: all (approve) or none (deny; the snippet "
        "gets approval_denied). Without it, a terminal prompts; otherwise the run stays paused (exit 6)",
    )
    p.add_argument("--engine", metavar="NAME", help="sandbox engine (entry point of toolcode.engines)")

    p = command(
        "resume",
        "decide about a paused run and continue it",
        "Continue a run that paused at a call the policy asks about (`exec` exited with 6).",
    )
    p.add_argument("execution_id", metavar="EXECUTION_ID")
    p.add_argument("decision", choices=("approve", "approve_run", "deny", "abort"))

    p = command("result", "read a stored result (what did not fit a reply), or write it whole to a file")
    p.add_argument("ref", metavar="REF", help="the reference a truncated reply gave (r-...)")
    p.add_argument("--offset", type=int, default=0, help="first character (default: %(default)s)")
    p.add_argument("--limit", type=int, help="characters to read (default: 100,000)")
    p.add_argument("--output", "-o", metavar="FILE", help="write the whole content to FILE instead")

    p = command("paused", "list the runs that wait for a decision")

    p = command("audit", "print the audit log: every tool call made from code and every decision")
    p.add_argument(
        "--since", metavar="WHEN", help="only entries since: an ISO date/time, or an age such as 30m, 2h, 7d"
    )
    p.add_argument("--limit", type=int, default=1000, help="most entries, the newest (default: %(default)s)")

    p = command(
        "sessions",
        "list or reset sessions",
        "The sessions of the state store (`exec --session NAME`, `execute_code(session=...)`).",
    )
    p.add_argument("action", nargs="?", choices=("list", "reset"), default="list")
    p.add_argument("name", nargs="?", metavar="NAME", help="the session to reset")

    p = command(
        "snippets",
        "list, show, save or delete saved snippets",
        "Saved snippets are programs that read `input`, offered as the tools snippets:<NAME>.",
    )
    p.add_argument("action", nargs="?", choices=("list", "show", "save", "delete"), default="list")
    p.add_argument("name", nargs="?", metavar="NAME")
    p.add_argument("file", nargs="?", metavar="FILE", help="save: the code (UTF-8; '-': stdin)")
    p.add_argument("-c", dest="code", metavar="CODE", help="save: the code as a string")
    p.add_argument("--description", metavar="TEXT", help="save: what the snippet does")
    p.add_argument("--input-schema", metavar="JSON", help="save: JSON Schema of its arguments")
    p.add_argument(
        "--shared", action="store_true", help="save: publish it to every caller (the local user is an operator)"
    )

    p = command("search", "search the catalog")
    p.add_argument("query", help="what you want to do, in words")
    p.add_argument("--limit", type=int, default=10, help="maximum hits, 1-50 (default: %(default)s)")
    p.add_argument("--detail", choices=("name", "summary", "schema"), default="summary", help="what each hit shows")
    p.add_argument("--namespace", action="append", metavar="NS", help="only this namespace (repeatable)")

    p = command("describe", "show tools' documentation")
    p.add_argument("tool_id", metavar="ID", nargs="+", help="tool id(s), namespace:name")
    p.add_argument("--level", choices=("summary", "schema", "full"), default="schema", help="detail (default: schema)")

    p = command(
        "tools",
        "list the tools of the catalog, a page at a time; approve quarantined ones",
        "list: the catalog, a page at a time. quarantined: the tools that are new or changed since "
        "approved (policy.quarantine), with the digest of each definition. approve ID@DIGEST...: approve these "
        "definitions, each named by the digest shown with it (one that changed since is refused: "
        "definition_changed); an ID or a glob without a digest approves nothing and prints the definitions it "
        "covers, with the command that approves exactly those.",
    )
    p.add_argument("action", nargs="?", choices=("list", "quarantined", "approve"), default="list")
    p.add_argument(
        "patterns", nargs="*", metavar="PATTERN", help="approve: ID@DIGEST (an id or a glob alone: show what it covers)"
    )
    p.add_argument("--namespace", metavar="NS", help="only this namespace")
    p.add_argument("--cursor", metavar="CURSOR", help="continue after an earlier page")
    p.add_argument("--limit", type=int, default=1000, help="page size, 1-1000 (default: %(default)s)")

    p = command("run", "call one tool directly")
    p.add_argument("tool_id", metavar="ID", help="tool id, namespace:name")
    p.add_argument("--args", metavar="JSON", help="the tool's arguments as a JSON object")
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="seconds before the call is abandoned")

    p = command(
        "chain",
        "run tools in sequence without code",
        'Run a chain of steps: [{"tool_id", "args", "use_previous", "on_error"}, ...].',
    )
    p.add_argument("--steps", metavar="JSON", required=True, help="the steps as JSON, or @FILE")

    p = command("namespaces", "list the namespaces and their tool counts")

    p = command(
        "report",
        "context tokens of your servers' tool definitions vs the code-mode server's",
        "Connect to the configured servers and count (tiktoken cl100k_base) the tokens their tool "
        "definitions take in a model's context, against the code-mode server's definitions.",
    )
    for p, catalog, json in with_options:
        if catalog:
            _catalog_options(p)
        if json:
            p.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    return parser
