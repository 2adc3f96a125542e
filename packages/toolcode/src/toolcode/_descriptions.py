"""What the model reads: the instructions and each code-mode tool's description, in every door.

The MCP server and the agent-framework integrations (:mod:`toolcode.integrations`) publish
these same words. Written for a model, not a person, and kept short: every word here is paid
for in context tokens on every turn (``bench/tokens.py`` reports the total under
``"surface"``). The snippet API is documented once, in ``execute_code``'s description, where the
model needs it; it is generated from the one list of snippet globals
(:data:`toolcode.SNIPPET_GLOBALS`).
"""

from __future__ import annotations

from toolcode._globals import snippet_api_text

__all__ = ["DESCRIPTIONS", "INSTRUCTIONS", "UNSANDBOXED_NOTE"]

INSTRUCTIONS = (
    "Tools of several servers in one catalog: find them with search_tools, read signatures with "
    "describe_tool, then do the whole task in ONE execute_code call."
)

UNSANDBOXED_NOTE = " WARNING: this server runs code without a sandbox."
"""Appended to the instructions when the engine is not a sandbox."""

DESCRIPTIONS: dict[str, str] = {
    "search_tools": "Find tools by what you want to do. Returns ids, best first.",
    "list_tools": "Browse the catalog, a page at a time.",
    "list_namespaces": "The namespaces (one per server), their tool counts, and servers that failed to start.",
    "describe_tool": "Python signatures of tools by id ('namespace:name'), or level='module' for a namespace.",
    "list_tool_examples": "Worked examples of one tool.",
    "run_tool": "Call one tool and get its whole result. For 2+ calls use execute_code.",
    "run_chain": "Run tools in sequence without code; each step's outcome.",
    "list_sessions": "Your sessions: name, created, last used, size.",
    "reset_session": "Forget a session's variables.",
    "save_snippet": "Save a program that reads `input` as the tool snippets:<name>, callable like any tool.",
    "list_snippets": "The saved snippets, as tool ids with their descriptions.",
    "delete_snippet": "Delete a saved snippet.",
    "resume_execution": "Continue a paused run with a person's decision.",
    "list_paused": "Your runs paused for approval.",
    "approve_tools": "Operator: approve quarantined tools' current definitions.",
    "read_result": "Read a stored result (what did not fit a reply) a page at a time.",
    "execute_code": (
        "Run Python in a sandbox; return a small result (set __out or end with an expression). "
        "Tool ids are 'namespace:name'; each namespace is a module (calls are checked first):\n"
        "  from tools import github; github.list_issues(owner='a', repo='b')  # list_issues_async: awaitable\n"
        + snippet_api_text()
        + "\nFailed calls raise ToolError."
    ),
}
