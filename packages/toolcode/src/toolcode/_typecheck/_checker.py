"""Check a snippet's tool calls before anything runs, refusing only what would certainly fail, as the run would say it.

- **Names** (``unknown_tool``): a ``tools`` module the caller cannot use, a function its module
  lacks, a literal tool id (``run_tool("ns:x", ...)``, ``run_tools([...])``) no visible tool has.
- **Arguments** (``invalid_arguments``, :mod:`._arguments`): in both call styles (:mod:`._calls`),
  what the text settles of each call's arguments, validated by the run's own validator.
- **Typed results** (``runtime_error``, :mod:`._ty`): what the snippet does with the tools' typed
  results, kept only when it fails for every value of the types named. A ``run_tool`` (or
  ``run_tool_async``) call with a literal id is typed as the module function of its tool.

What the text cannot settle (a value computed at run time, a tool id built from strings) is left
to the run. A problem inside a ``try`` whose handler catches what it raises is the snippet's own,
and one in code the snippet's own constants rule out (``DEBUG = False`` then ``if DEBUG: ...``,
:mod:`._dead`) is no problem of the run.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import re
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Final

import anyio

from toolcode._module_views import ModulesView, ToolModules
from toolcode._modules import PACKAGE
from toolcode._offload import Runs, run_here, runs_for
from toolcode._typecheck._arguments import ArgumentChecker
from toolcode._typecheck._calls import Scan, ToolCall, parsed
from toolcode._typecheck._dead import DeadCode
from toolcode._typecheck._declared import declared_types
from toolcode._typecheck._diagnostic import Diagnostic, Handlers, Positions, near
from toolcode._typecheck._findings import may_fail
from toolcode._typecheck._ty import MAX_CHARS, Ty, Unanswered
from toolcode._typecheck._writes import mentions
from toolcode._view import CatalogView
from toolcode.exceptions import ErrorCode
from toolindex import Tool, ToolIndexError
from toolindex.log import get_logger
from toolrun import CompiledSchema, ToolRunError

_log = get_logger("toolcode.typecheck")

__all__ = ["TypeChecker"]

_Static = tuple[
    ast.Module,
    Positions,
    Scan,
    list[Diagnostic],
    dict[str, str],
    dict[ast.Call, tuple[str, ...]],
    dict[ast.AST, Tool],
    ModulesView,
]
"""What the text alone settles (see ``TypeChecker._static``)."""
_ANSWERS = 256
"""Checked snippets whose answers are kept (by digest, per catalog version and view)."""


class TypeChecker:
    """Checks snippets before they run (see the module docstring).

    Args:
        modules: The catalog's namespace modules (names and stubs; each check reads them as its view holds them).
        max_modules: Modules ``ty``'s warm session may hold before it starts over with just what
            a snippet needs.
        timeout: Seconds ``ty``'s check may take before the run goes on unchecked.
    """

    def __init__(self, modules: ToolModules, *, max_modules: int = 32, timeout: float = 10.0) -> None:
        self._modules = modules
        self._ty = Ty(max_modules, timeout)
        self._large = anyio.Lock()
        self._schemas: dict[str, CompiledSchema | None] = {}
        self._schemas_version = -1
        self._answers: OrderedDict[tuple[object, ...], tuple[Diagnostic, ...]] = OrderedDict()

    async def check(
        self, code: str, view: CatalogView, *, preamble: Sequence[str] = (), caller: str | None = None
    ) -> list[Diagnostic]:
        """The problems of ``code``, in line order (empty: nothing found, or nothing to check).

        Args:
            code: The snippet.
            view: The caller's view of the catalog (what it may import and call).
            preamble: Lines that ran before ``code`` (a session's earlier ``tools`` imports):
                checked with it, never reported.
            caller: Who asks: a caller's checks by ``ty`` go one at a time, and wait for no other
                caller's slow one (see :mod:`._ty`).

        Returns:
            The diagnostics; a snippet that does not parse gives none (the engine reports it).
        """
        if preamble:
            shift = len(preamble)
            found = await self.check("\n".join(preamble) + "\n" + code, view, caller=caller)
            return [dataclasses.replace(d, line=d.line - shift, fails_at=None) for d in found if d.line > shift]
        if PACKAGE not in code and "run_tool" not in code:
            return []  # nothing that names a tool: no parse
        if len(code) > MAX_CHARS:
            _log.info("typecheck.skipped", reason=f"longer than {MAX_CHARS:,} characters", chars=len(code))
            return []
        # The same snippet in the same view of the same catalog has the same answer (a saved snippet
        # is checked on every call, a model may send a snippet again); so does one ``ty`` ran out of
        # time on, which would cost that time again.
        digest = hashlib.blake2b(code.encode(errors="surrogatepass"), digest_size=16).digest()
        key = (self._modules.version, view.key(), digest)
        hit = self._answers.get(key)
        if hit is not None:
            self._answers.move_to_end(key)
            return list(hit)
        run = runs_for(code)
        if run is run_here:
            found, complete = await self._check(code, view, run, caller)
        else:
            # A long snippet's check takes time in proportion (seconds for thousands of lines): it runs
            # in a worker thread, one such check at a time, while the event loop serves everyone else.
            async with self._large:
                try:
                    found, complete = await self._check(code, view, run, caller)
                except RuntimeError as e:  # the catalog changed under the thread: the run goes on unchecked
                    _log.warning("typecheck.skipped", error=repr(e)[:300])
                    return []
        if complete:
            self._answers[key] = tuple(found)
            while len(self._answers) > _ANSWERS:
                self._answers.popitem(last=False)
        return found

    async def _check(
        self, code: str, view: CatalogView, run: Runs, caller: str | None
    ) -> tuple[list[Diagnostic], bool]:
        """The diagnostics, and whether the answer is to be kept (``ty`` may not answer, and may be asked again)."""
        static = await run(self._static, code, view)
        if static is None:
            return [], True
        tree, positions, found, out, visible, typed, results, modules = static
        complete = True
        # ``ty`` is asked only where it could find something (its check costs about a millisecond).
        if visible and await run(may_fail, tree, found):
            await modules.render_ahead(visible.values())
            declared = declared_types(tree, found, results, modules)
            text = found.text or code
            findings = await self._ty.findings(
                text, tree, found.bindings, visible, modules, positions, run, typed, declared, caller
            )
            if isinstance(findings, Unanswered):
                complete = not findings.again
            else:
                out.extend(findings)
        return await run(_reported, tree, positions, found, out), complete

    def _static(self, code: str, view: CatalogView) -> _Static | None:
        """What the text alone settles: names and arguments (``None``: it does not parse).

        Also the modules ``ty`` needs (name → namespace), and each ``run_tool`` call with a literal
        id as its module function (``<module>.<name>``), so that its result is typed alike.
        """
        read = parsed(code)
        if read is None:
            return None
        tree, found = read
        positions = Positions(code)
        modules = self._modules.seen_by(view)
        out, visible = self._names(found, modules, positions)
        arguments = ArgumentChecker(view, self._input_schema)
        calls: list[tuple[ToolCall, Tool]] = []
        typed: dict[ast.Call, tuple[str, ...]] = {}
        # The expressions whose value is the tool's result: a call, or the ``await`` of an awaitable one.
        results: dict[ast.AST, Tool] = {}
        pairs: dict[ast.Call, list[str | None]] = {}  # each ``run_tools([...])`` call's pairs, in order
        for call in found.calls:
            if call.module is not None:
                tool = self._tool_of(call, visible, modules)
                if tool is not None:
                    calls.append((call, tool))
                    function = (modules.module_name(tool.namespace), call.module.name)
                    if modules.function_of(tool) == function:
                        results[call.node] = tool
                    elif modules.function_of(tool, awaitable=True) == function:
                        _awaited(found, call.node, tool, results)
                continue
            unknown = arguments.unknown_tool(call, positions)
            if unknown is not None:
                out.append(unknown)
                continue
            assert call.tool_id is not None
            tool = view.get(call.tool_id)
            calls.append((call, tool))
            func = call.node.func
            awaitable = call.node in found.parents and isinstance(func, ast.Name) and func.id != "run_tool"
            function = modules.function_of(tool, awaitable=awaitable)
            if function is not None:
                visible.setdefault(function[0], tool.namespace)
            if call.node not in found.parents:  # one of ``run_tools``' pairs
                node: ast.AST | None = call.id_node
                while node is not None and not isinstance(node, ast.Call):
                    node = found.parents.get(node)
                if node is not None:
                    pairs.setdefault(node, []).append(".".join(function) if function else None)
            elif function is not None:
                typed[call.node] = (".".join(function),)
                if not awaitable:
                    results[call.node] = tool
                else:
                    _awaited(found, call.node, tool, results)
        typed.update(_unpacked(found, pairs))
        out.extend(arguments.check(tree, found, calls, positions))
        return tree, positions, found, out, visible, typed, results, modules

    def _names(
        self, found: Scan, modules: ModulesView, positions: Positions
    ) -> tuple[list[Diagnostic], dict[str, str]]:
        """Unknown modules and unknown functions of known ones; the visible modules named (name → namespace)."""
        out: list[Diagnostic] = []
        visible: dict[str, str] = {}
        for name, node in sorted(found.modules.items()):
            ns = modules.namespace_of(name)
            if ns is not None:
                visible[name] = ns
                continue
            hint = near(name, modules.module_names())
            msg = f"no namespace module `{PACKAGE}.{name}`{hint} (list_namespaces() lists the namespaces)"
            raises = _missing(node, module=True)
            out.append(positions.at(node, msg, "unknown-module", ErrorCode.UNKNOWN_TOOL, raises, subject=name))
        for ref in found.references:
            ns = visible.get(ref.module)
            if ns is None:
                continue
            functions = modules.functions(ns)
            if ref.name not in functions:
                msg = (
                    f"module '{PACKAGE}.{ref.module}' has no attribute '{ref.name}'{near(ref.name, functions)} "
                    f"(list_tools({ns!r}) lists its tools)"
                )
                raises = _missing(ref.node, module=False)
                code = ErrorCode.UNKNOWN_TOOL
                out.append(positions.at(ref.node, msg, "unknown-tool", code, raises, subject=ref.name))
        return out, visible

    def _input_schema(self, tool: Tool) -> CompiledSchema | None:
        """The tool's input schema compiled, once per catalog version (``None``: it does not compile)."""
        version = self._modules.version
        if version != self._schemas_version or len(self._schemas) > 4096:
            self._schemas.clear()
            self._schemas_version = version
        if tool.id not in self._schemas:
            try:
                self._schemas[tool.id] = CompiledSchema(tool.input_schema)
            except ToolRunError:
                self._schemas[tool.id] = None
        return self._schemas[tool.id]

    @staticmethod
    def _tool_of(call: ToolCall, visible: Mapping[str, str], modules: ModulesView) -> Tool | None:
        assert call.module is not None
        ns = visible.get(call.module.module)
        fn = modules.functions(ns).get(call.module.name) if ns is not None else None
        if fn is None:
            return None
        try:
            return modules.index.get(fn.tool_id)
        except ToolIndexError:
            return None

    async def aclose(self) -> None:
        """Close ``ty``'s warm session and worker pool; idempotent (a later check starts them again)."""
        await self._ty.aclose()


def _awaited(found: Scan, call: ast.Call, tool: Tool, results: dict[ast.AST, Tool]) -> None:
    """``await ns.x_async(...)``: the ``await`` is the tool's result (a call not awaited there is not)."""
    parent = found.parents.get(call)
    if isinstance(parent, ast.Await):
        results[parent] = tool


def _unpacked(found: Scan, pairs: Mapping[ast.Call, Sequence[str | None]]) -> dict[ast.Call, tuple[str, ...]]:
    """``a, b = run_tools([("ns:x", ...), ("ns:y", ...)])``: each name typed as its call's result.

    Only where every pair has a literal id and the list is unpacked whole into names: the value
    itself is a list, which a tuple of the results would not be.
    """
    out: dict[ast.Call, tuple[str, ...]] = {}
    for node, functions in pairs.items():
        assign = found.parents.get(node)
        given = node.args[0] if node.args else None
        if not (
            isinstance(node.func, ast.Name)
            and node.func.id == "run_tools"
            and isinstance(given, ast.List | ast.Tuple)
            and isinstance(assign, ast.Assign)
            and assign.value is node
            and len(assign.targets) == 1
        ):
            continue
        target = assign.targets[0]
        names = target.elts if isinstance(target, ast.Tuple | ast.List) else []
        if len(names) == len(given.elts) == len(functions) and all(isinstance(n, ast.Name) for n in names):
            known = [f for f in functions if f is not None]
            if len(known) == len(functions):
                out[node] = tuple(known)
    return out


def _missing(node: ast.AST, *, module: bool) -> str:
    """The exception the run raises where ``node`` names a module (or a function) the catalog lacks.

    As Python's import does: ``from tools import nope`` and ``from tools.ns import nope`` raise
    ``ImportError`` (cannot import name), ``import tools.nope`` and ``from tools.nope import f``
    ``ModuleNotFoundError``, and ``tools.nope`` or ``ns.nope`` read as an attribute ``AttributeError``.
    A handler the run's exception would not reach does not make the problem the snippet's own.
    """
    if isinstance(node, ast.ImportFrom):
        return "ModuleNotFoundError" if module and node.module != PACKAGE else "ImportError"
    return "ModuleNotFoundError" if isinstance(node, ast.Import) else "AttributeError"


def _tested(subject: str, named: frozenset[str]) -> bool:
    """Whether the snippet names the tool or module ``subject`` anywhere but where it calls it.

    A snippet that tests whether a tool exists before calling it works whether it exists or not,
    and tests come in more forms than can be listed (``"ns:tool" in ids``, ``hasattr(ns, "tool")``,
    ``h["id"].endswith(":tool")``, ``describe_tool("ns:tool")`` in a ``try``): a string naming it,
    whole or as one part of an id, is taken for one.
    """
    name = re.split(r"[:.]", subject)[-1]
    return any(text == subject or name in _PARTS.split(text) for text in named)


_PARTS: Final = re.compile(r"[\s:./,]+")


def _reported(tree: ast.Module, positions: Positions, found: Scan, out: list[Diagnostic]) -> list[Diagnostic]:
    """The diagnostics a run reports, in line order: not those a ``try`` catches, nor a snippet saved meanwhile.

    Nor those where the run cannot get (:mod:`._dead`), whichever part of the check found them.
    """
    if found.saves_snippets:
        # A snippet saved by this very run is a tool once that line has run.
        out = [d for d in out if not any(s in d.message for s in ("snippets:", "tools.snippets", "'snippets'"))]
    if out:
        dead = DeadCode(tree, found, positions)
        out = [d for d in out if not dead.covers(d.fails_at or (d.line, d.column))]
    handlers = Handlers(tree, positions)
    named = mentions(tree, [c.id_node for c in found.calls if c.id_node is not None])
    unique = {
        (d.line, d.column, d.message): d
        for d in out
        if not handlers.catch(d) and not (d.subject and _tested(d.subject, named))
    }
    return sorted(unique.values(), key=lambda d: (d.line, d.column))
