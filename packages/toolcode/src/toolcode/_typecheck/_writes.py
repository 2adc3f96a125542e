"""What a snippet does to the values it reads: keys it writes or tests for, names ``ty`` types loosely.

A result is a plain dict at run time: a key the snippet adds to one is there when it reads it back,
a value it writes over is what it reads back, and a key it tests for first is not read when it is
missing; an attribute it sets on an instance from outside its class holds what it set, whatever
type the class's methods give it. :mod:`._findings` leaves ``ty``'s findings about such reads to the run.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Collection, Sequence
from typing import Final

from toolcode._names import bound_names, rebound_by_functions

__all__ = [
    "loose_attributes",
    "loose_names",
    "loosely_typed",
    "mentions",
    "rebound_names",
    "tested_keys",
    "written_keys",
]


_NO_KEYS: Final = (ast.Set, ast.SetComp, ast.Constant, ast.BinOp)
"""Operands of ``|`` that make it no dict merge (a number, a set; ``a | b | c`` is judged at each ``|``)."""


def written_keys(tree: ast.Module) -> frozenset[str | int] | None:
    """The keys and indexes the snippet may write to (a key to a dict); ``None`` when some are computed at run time.

    Keys are added by ``d["k"] = v``, ``d.update({"k": v})`` or ``d.update(k=v)``,
    ``d.setdefault("k", v)``, ``d |= {"k": v}`` and ``d | {"k": v}``; ``d[name] = v``,
    ``d.update(other)`` or ``d |= other`` may add any key. A dict written in the snippet and put in
    a list (``append``, ``insert``, ``extend``, ``+=``, directly or through a name bound to it)
    brings its keys along. A result is a plain dict at run time: a key the snippet adds to one is there when it
    reads it back, though the result's declared type lacks it, and a value it writes over one
    (``t["age"] = f"{t['age']} days"``, ``offices[0] = "HQ"``) is what it reads back, whatever the
    declared type. Which dict or list was written to is not followed (a missed mistake costs less
    than refusing working code), but for a dict the snippet makes itself and binds to a name that
    is never bound to anything else (:func:`_own_dicts`, ``counts = {}`` then
    ``counts[o["city"]] = n``): any key it gets is its own, never a result's.
    """
    out: set[str | int] = set()
    computed = False
    own = _own_dicts(tree)
    bound: dict[str, list[ast.Dict]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bound.setdefault(target.id, []).append(node.value)

    def literal(node: ast.expr | None) -> None:
        nonlocal computed
        if isinstance(node, ast.Constant) and isinstance(node.value, str | int):
            out.add(node.value)
        elif not isinstance(node, ast.Constant):
            computed = True

    def display(node: ast.expr) -> None:
        nonlocal computed
        if isinstance(node, ast.Dict):
            for k in node.keys:
                literal(k)
        else:
            computed = True

    def owned(node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and node.id in own

    def joined(values: Sequence[ast.expr]) -> None:
        """The keys of the dicts ``values`` hold, written there or bound to a name: put into a list."""
        for part in (sub for value in values for sub in ast.walk(value)):
            if isinstance(part, ast.Name):
                for d in bound.get(part.id, ()):
                    display(d)
            elif isinstance(part, ast.Dict):
                display(part)

    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            if not owned(node.value):
                literal(node.slice)
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.BitOr):
            if not owned(node.target):
                display(node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
            joined([node.value])  # ``rows += [{...}]``: ``extend``
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            sides = (node.left, node.right)
            if any(isinstance(side, _NO_KEYS) for side in sides):
                continue  # a number or a set: no key
            for side in sides:
                if isinstance(side, ast.Dict):
                    display(side)
                elif side is node.right:
                    computed = True  # ``result | other``: the other's keys, whichever they are
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not owned(node.func.value):
            if node.func.attr == "update":
                for arg in node.args:
                    display(arg)
                for k in node.keywords:
                    if k.arg is None:
                        computed = True  # d.update(**other)
                    else:
                        out.add(k.arg)
            elif node.func.attr == "setdefault" and node.args:
                literal(node.args[0])
            elif node.func.attr in ("append", "insert", "extend"):
                joined(node.args)
    return None if computed else frozenset(out)


_MAKERS: Final = frozenset({"dict", "defaultdict", "Counter", "OrderedDict"})
"""Calls that make a new dict (of a copy, at most: ``dict(result)`` shares no key with ``result`` later)."""


def _own_dicts(tree: ast.Module) -> frozenset[str]:
    """Names bound only to dicts the snippet makes (``{}``, a dict comprehension, ``dict(...)``), kept in.

    Every binding of such a name, in any scope, is a plain assignment of a new dict (never a loop,
    ``with``, ``except``, ``match`` or comprehension target, an unpacking, a parameter, a
    ``global``, a walrus, an import, a ``def`` or a ``del``), so no result is one of them; and the
    dict is only read, written, tested, measured, printed or made the run's value (:func:`_stays`),
    never put into anything else, so no result gets its keys. A key written to one is its own.
    """
    fresh: set[str] = set()
    other: set[str] = set()
    plain: Counter[str] = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign):
            new = node.value is not None and _makes_dict(node.value)
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(t, ast.Name):
                    plain[t.id] += 1
                    (fresh if new else other).add(t.id)
        elif isinstance(node, ast.alias):
            other.add(node.asname or node.name.partition(".")[0])
    bound = Counter(bound_names(ast.walk(tree)))
    own = {n for n in fresh - other if bound[n] == plain[n]}
    if own:
        parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in own:
                if not _stays(node, parents):
                    own.discard(node.id)
    return frozenset(own)


_KEEPING: Final = frozenset({"get", "setdefault", "update", "pop", "clear", "items", "keys", "values"})
"""A dict's methods that give out its keys, its values or nothing, never the dict itself."""
_MEASURING: Final = frozenset(
    {"len", "bool", "print", "println", "sorted", "list", "set", "tuple", "min", "max", "sum", "any", "all"}
)
"""Builtins that, given a dict, read its keys (or measure or print it) and keep none of it."""


def _stays(name: ast.Name, parents: dict[ast.AST, ast.AST]) -> bool:
    """Whether this use of a dict leaves it where it is (nothing else gets the dict itself).

    Its keys and values may go elsewhere (``d.items()``, ``sorted(d)``, ``for k in d``): a key written
    under a computed name anywhere else is a computed write there (:func:`written_keys`).
    """
    parent = parents.get(name)
    if isinstance(parent, ast.Subscript):
        return parent.value is name
    if isinstance(parent, ast.Attribute):
        return parent.value is name and parent.attr in _KEEPING
    if isinstance(parent, ast.Compare):
        return name is not parent.left  # ``k in d``
    if isinstance(parent, ast.Call):
        return isinstance(parent.func, ast.Name) and parent.func.id in _MEASURING and name in parent.args
    if isinstance(parent, ast.For | ast.AsyncFor | ast.comprehension):
        return parent.iter is name  # its keys, one by one
    if isinstance(parent, ast.Dict | ast.List | ast.Tuple) and name not in getattr(parent, "keys", ()):
        parent = parents.get(parent)  # in a display that is the run's value (``__out = {"by": d}``)
        if not isinstance(parent, ast.Assign):
            return False
    if isinstance(parent, ast.Assign):  # the run's value
        return all(isinstance(t, ast.Name) and t.id == "__out" for t in parent.targets)
    return isinstance(parent, ast.Expr | ast.FormattedValue)


def _makes_dict(value: ast.expr) -> bool:
    if isinstance(value, ast.Dict | ast.DictComp):
        return True
    if isinstance(value, ast.Call):
        f = value.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        return name in _MAKERS
    return False


def mentions(tree: ast.Module, skip: Collection[ast.AST] = ()) -> frozenset[str]:
    """The strings the snippet names other than as a key it reads or builds, or in ``skip``.

    A key or a tool the snippet names anywhere else is one it may test for before it reads or
    calls it, in more ways than can be listed: ``"k" in d``, ``d.get(k)`` after ``k = "k"``,
    ``all(k in d for k in ("k",))``, ``case {"k": _}``, ``has(d, "k")``, ``id.endswith(":tool")``,
    ``getattr(module, "tool", None)``. A key written only where it is read (``t["titel"]``) or
    built (``{"title": t["title"]}``) is the usual mistake, and stays a finding. F-string parts
    and docstrings are text, not names.
    """
    left_out: set[ast.AST] = set(skip)
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            left_out.add(node.slice)
        elif isinstance(node, ast.Dict):
            left_out.update(k for k in node.keys if k is not None)
        elif isinstance(node, ast.JoinedStr):
            left_out.update(node.values)
        elif isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                left_out.add(first.value)
    return frozenset(
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n not in left_out
    )


def tested_keys(tree: ast.Module) -> frozenset[str | int]:
    """Keys the snippet may test for first: the strings it :func:`mentions`, and the numbers it compares or gets.

    ``ty`` narrows a result on ``"k" in d`` alone; ``if d.get("k"): d["k"]``, ``"k" in d.keys()`` or
    ``any("k" in o for o in offices)`` guard the read as well (a key a result lacks at run time is
    then not read).
    """
    out: set[str | int] = set(mentions(tree))

    def numbers(side: ast.expr) -> None:
        for part in side.elts if isinstance(side, ast.Set | ast.List | ast.Tuple) else [side]:
            if isinstance(part, ast.Constant) and isinstance(part.value, int) and not isinstance(part.value, bool):
                out.add(part.value)

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                numbers(side)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "pop", "issubset", "issuperset", "isdisjoint")
        ):
            for side in (node.func.value, *node.args[:1]):
                numbers(side)
    return frozenset(out)


def loose_attributes(tree: ast.Module) -> frozenset[str]:
    """Attributes the snippet sets outside its classes' own methods (``cfg.office = "Paris"``).

    ``ty`` types an instance's attribute by what the class's methods assign to it (``self.office =
    0`` in ``__init__``) and keeps that type whatever is assigned from outside; the run reads what
    was assigned last. An attribute set through a method's first parameter (``self``) is the class's own.
    """
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and not _own(node, parents):
            out.add(node.attr)
    return frozenset(out)


def _own(node: ast.Attribute, parents: dict[ast.AST, ast.AST]) -> bool:
    """Whether ``node`` (stored to) is an attribute of ``self`` in a method of a class."""
    scope = parents.get(node)
    while scope is not None and not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        scope = parents.get(scope)
    if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) or not scope.args.args:
        return False
    this = scope.args.args[0].arg
    return isinstance(parents.get(scope), ast.ClassDef) and isinstance(node.value, ast.Name) and node.value.id == this


def loose_names(
    tree: ast.Module, written: frozenset[str | int] | None, attributes: frozenset[str] = frozenset()
) -> frozenset[str]:
    """Names whose type at run time may not be the one ``ty`` gives them (its findings there are left to the run).

    - a name declared ``global`` or ``nonlocal`` (the check wraps the snippet in a function, so a
      helper's ``global x`` is not the snippet's ``x`` there);
    - a name bound to ``await asyncio.gather(...)`` (a list in the sandbox, a tuple to ``ty``);
    - a list or dict the snippet writes items into at an index or a computed key
      (``offices[i] = o["city"]``), and a name bound to one of its items or to a key the snippet
      writes (``label = t["age"]`` after ``t["age"] = "6 days"``);
    - a name bound to one of ``attributes`` (:func:`loose_attributes`: ``o = cfg.office``);
    - a name bound from (or looping over) any of these.
    """
    loose: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Global | ast.Nonlocal):
            loose.update(node.names)
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name):
            if not (isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
                loose.add(node.value.id)  # its items replaced (a key written by name is followed as a key)
    bindings = _bindings(tree)
    for targets, value in bindings:
        if _gathers(value) or _reads_written(value, written) or _reads_attribute(value, attributes):
            loose.update(_bound(targets))
    return _spread(loose, bindings)


def rebound_names(tree: ast.Module) -> frozenset[str]:
    """Names a function of the snippet declares ``global`` or ``nonlocal`` and binds, and names bound from them.

    The check wraps the snippet in a function, so ``ty`` types such a name by the snippet's own
    bindings of it alone: after ``current = offices[0]``, ``current["priority"]`` reads a key
    ``Office`` lacks, though a helper's ``global current; current = ticket`` has run by then.
    Unlike the other :func:`loose_names`, the keys read from these are left to the run too.
    """
    return _spread(set(rebound_by_functions(tree, (ast.Global, ast.Nonlocal))), _bindings(tree))


def _bindings(tree: ast.Module) -> list[tuple[list[ast.expr], ast.expr]]:
    """Each binding of the snippet to a value: its targets and the value (a loop's: what it iterates)."""
    bindings: list[tuple[list[ast.expr], ast.expr]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            bindings.append((node.targets, node.value))
        elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr) and node.value is not None:
            bindings.append(([node.target], node.value))
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            bindings.append(([node.target], node.iter))
    return bindings


def _spread(loose: set[str], bindings: Sequence[tuple[list[ast.expr], ast.expr]]) -> frozenset[str]:
    """``loose`` and every name bound from (or looping over) one of them, repeatedly.

    Each name is followed once, to the bindings that read it: a chain of ``a1 = a0`` lines costs
    its length, not its length squared (re-scanning every binding until nothing changed did).
    """
    readers: dict[str, list[set[str]]] = {}
    for targets, value in bindings:
        names = _bound(targets)
        for read in {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}:
            readers.setdefault(read, []).append(names)
    out = set(loose)
    todo = list(out)
    while todo:
        for names in readers.get(todo.pop(), ()):
            new = names - out
            out |= new
            todo.extend(new)
    return frozenset(out)


def _gathers(node: ast.expr) -> bool:
    if not isinstance(node, ast.Await) or not isinstance(node.value, ast.Call):
        return False
    func = node.value.func
    return (isinstance(func, ast.Attribute) and func.attr == "gather") or (
        isinstance(func, ast.Name) and func.id == "gather"
    )


def _bound(targets: Sequence[ast.expr]) -> set[str]:
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def loosely_typed(
    node: ast.expr | None,
    written: frozenset[str | int] | None,
    loose: frozenset[str],
    attributes: frozenset[str] = frozenset(),
) -> bool:
    """Whether ``node`` reads a key the snippet writes, a name of :func:`loose_names` or one of ``attributes``."""
    if node is None:
        return False
    if loose and any(isinstance(n, ast.Name) and n.id in loose for n in ast.walk(node)):
        return True
    return _reads_written(node, written) or _reads_attribute(node, attributes)


def _reads_attribute(node: ast.expr, attributes: frozenset[str]) -> bool:
    """Whether ``node`` reads one of ``attributes`` (of any value)."""
    return bool(attributes) and any(
        isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load) and n.attr in attributes for n in ast.walk(node)
    )


def _reads_written(node: ast.expr | None, written: frozenset[str | int] | None) -> bool:
    """Whether ``node`` reads a key or index the snippet writes to: its type is then the written value's."""
    for n in ast.walk(node) if node is not None else ():
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load):
            key = n.slice
            if written is None or (isinstance(key, ast.Constant) and key.value in written):
                return True
    return False
