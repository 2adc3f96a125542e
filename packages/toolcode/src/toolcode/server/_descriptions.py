"""What the model reads: the server's instructions and each tool's description.

Written for a model, not a person: when to reach for code mode, the snippet API in one
screen, how results and errors look. Kept short because every word here is paid for in
context tokens on every turn.
"""

from __future__ import annotations

__all__ = ["DESCRIPTIONS", "INSTRUCTIONS"]

INSTRUCTIONS = """\
This server fronts a catalog of tools from several MCP servers. Do not call those tools one
by one: find them with search_tools, read what you need with describe_tool, then do the whole
task in ONE execute_code call — a short Python program that calls the tools, loops, filters
and returns only the small result you need. Tool ids look like "namespace:name".
"""

_SNIPPET_API = """\
Inside the code these functions are available (no imports needed):
  run_tool(tool_id, args) -> value      call a tool; args is a dict. Raises on failure (catch with try/except).
  run_chain(steps) -> list              steps: [{"tool_id", "args", "use_previous", "on_error"}].
  search_tools(query, limit=10), describe_tool(tool_id, level="schema"), list_tool_examples(tool_id),
  list_namespaces()                     the same lookups as the tools of this server.
  print(*values)                        goes to stdout (returned separately; keep it short).
The value named `input` holds the `input` argument. Set `__out = <value>` to return a result
(or end with an expression). Return small, JSON-serialisable data: counts, ids, summaries —
never whole raw results you could filter in code."""

DESCRIPTIONS: dict[str, str] = {
    "search_tools": (
        "Search the tool catalog by what you want to do (free text, e.g. 'list open pull requests'). "
        "Returns the best matching tool ids with a one-line summary. Use it first, before describe_tool. "
        "Narrow with `namespaces` when you know the server."
    ),
    "list_namespaces": (
        "List the namespaces (one per upstream MCP server) and how many tools each has. "
        "Cheap; use it to learn what the catalog covers."
    ),
    "describe_tool": (
        "Read the documentation of one tool by id ('namespace:name'). level='summary' is one line, "
        "'schema' (default) adds the Python call signature with parameter types, required fields and "
        "defaults, 'full' adds examples and the learned result shape. Read 'schema' before calling a tool "
        "you have not used yet. Unknown ids return the nearest tool names."
    ),
    "list_tool_examples": (
        "List worked examples for one tool: arguments that work and what the result looks like. "
        "Use when the schema alone leaves you unsure how to call it."
    ),
    "run_tool": (
        "Call one tool directly with a JSON object of arguments and get its full result. Only for a single, "
        "one-off call whose whole result you actually need; for anything with two or more calls, loops or "
        "filtering, use execute_code instead."
    ),
    "run_chain": (
        "Run tools in sequence without writing code. Each step is {tool_id, args, use_previous, on_error}; "
        "use_previous=true passes the previous step's result as args['previous']; on_error is 'abort' "
        "(default) or 'continue'. Returns every step's outcome. Prefer execute_code when you need to "
        "transform data between steps."
    ),
    "execute_code": (
        "Run a short Python program in a sandbox that calls many tools and returns only what you need. "
        "ALWAYS prefer this for tasks with 2+ tool calls, loops over items, or filtering large results: "
        "intermediate results stay out of your context.\n\n"
        + _SNIPPET_API
        + "\n\nThe result has `value` (your __out), `stdout`, and `trace` (one entry per tool call: tool id, ok, "
        "duration). On failure the result is an error that says what went wrong and where: the line of a "
        "syntax or runtime error, the tool id and its error for a failed call, the limit that was hit, or "
        "the nearest tool names for an unknown id — fix the code and run it again.\n"
        "`options` per call: timeout (seconds), max_tool_calls, allowed_namespaces (restrict which servers "
        "the code may use), trace ('summary' default, 'full' adds args and results, 'none')."
    ),
}
