"""A snippet's references to servers that failed to start, found before it runs.

A configured server that failed to start has no tools in the catalog, so the check before the
run would call ``run_tool("bad:x")`` an unknown tool and ``from tools import bad`` an unknown
module, and the model would go looking for a typo. This scan runs first: the first reference to
such a server ends the run before anything runs, as an uncaught call to it would end it, with
``server_unavailable``, the server's name and the reason it is down.

A reference is a string constant shaped like a tool id of the server (``"bad:x"``, wherever it
stands: ``run_tool``, ``run_tools``, a chain step) or the server's namespace module
(``from tools import bad``, ``import tools.bad``, ``tools.bad``). A server that did start
earlier and still has tools in the catalog is not reported here: its calls reach its backend.
"""

from __future__ import annotations

import ast
import re
from typing import Final

from toolcode._module_views import ToolModules
from toolcode._modules import PACKAGE, module_names
from toolcode._view import CatalogView, server_unavailable
from toolcode.exceptions import CodeExecutionError

__all__ = ["unavailable_reference"]

_TOOL_ID: Final = re.compile(r"([^:\s]{1,200}):[A-Za-z0-9_.\-]{1,128}(?::[^:\s]{1,64})?")


def unavailable_reference(code: str, view: CatalogView, modules: ToolModules) -> CodeExecutionError | None:
    """The error for the first reference in ``code`` to a visible server that failed to start.

    Args:
        code: The snippet.
        view: The caller's view (what it may see, and which servers are down).
        modules: The catalog's namespace modules (a down server's module name follows their rule).

    Returns:
        ``None`` when the code names no such server (or does not parse: the engine reports that);
        otherwise the error, at the line and column of the first reference.
    """
    down = view.unavailable()
    if not down:
        return None
    present = {n.name for n in view.index.namespaces()}
    down = {ns: why for ns, why in down.items() if ns not in present}
    if not down:
        return None
    names = module_names([*present, *down])
    by_module = {names[ns]: ns for ns in down}
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    found: list[tuple[int, int, str, str]] = []  # line, column, server, what was asked
    for node in ast.walk(tree):
        asked: list[str] = []
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = _TOOL_ID.fullmatch(node.value)
            if m is not None and m.group(1) in down:
                found.append((node.lineno, node.col_offset + 1, m.group(1), node.value))
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
            head, _, rest = node.module.partition(".")
            if head == PACKAGE:
                asked = [rest.split(".")[0]] if rest else [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            asked = [a.name.split(".")[1] for a in node.names if a.name.startswith(PACKAGE + ".")]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == PACKAGE:
            asked = [node.attr]
        servers = [by_module[m] for m in asked if m in by_module and modules.namespace_of(m) is None]
        if servers:
            found.append((getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1, servers[0], servers[0]))
    if not found:
        return None
    line, column, server, what = min(found)
    err = server_unavailable(server, down[server], what)
    out = CodeExecutionError(
        "ToolError", err.message, line=line, column=column, tool_id=err.tool_id, tool_code=err.code
    )
    out.hint = err.hint
    return out
