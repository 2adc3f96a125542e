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
In the code these are plain functions (no imports):
  run_tool(tool_id, args) -> value     call a tool (args: dict). A failure raises ToolError (a RuntimeError): catch it.
  run_tools([(tool_id, args), ...])    several calls at once, in parallel -> list of values.
  run_chain(steps)                     steps: [{"tool_id", "args", "use_previous", "on_error"}].
  search_tools(query, limit=10), describe_tool(tool_id, level="schema"), list_tool_examples(tool_id),
  list_namespaces()                    the same lookups as this server's tools, as dicts and lists.
  print(*values)                       goes to stdout (returned separately; keep it short).
`input` holds the `input` argument. Set `__out = <value>` to return a result (or end with an
expression). Return small JSON data — counts, ids, summaries — never raw results you could filter."""


DESCRIPTIONS: dict[str, str] = {
    "search_tools": (
        "Find tools by what you want to do (free text). Returns tool ids with a one-line summary, best first. "
        "Start here."
    ),
    "list_namespaces": "List the namespaces (one per upstream server) and their tool counts.",
    "describe_tool": (
        "Read one tool's docs by id ('namespace:name'): level 'summary' (one line), 'schema' (default: Python "
        "signature, types, required fields, defaults) or 'full' (+ examples, result shape). Unknown ids get the "
        "nearest names."
    ),
    "list_tool_examples": "Worked examples for one tool: arguments that work and what the result looks like.",
    "run_tool": (
        "Call one tool directly and get its whole result. Only for a single call whose full result you need; "
        "for 2+ calls, loops or filtering use execute_code."
    ),
    "run_chain": (
        "Run tools in sequence without code: steps of {tool_id, args, use_previous (pass the previous result "
        "as args['previous']), on_error: 'abort'|'continue'}. Returns every step's outcome."
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
