"""Python identifiers for wire names (tool names, parameter names, keys) and collision detection."""

from __future__ import annotations

import ast
import builtins
import keyword
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["Collision", "NameMap", "class_name", "py_identifier", "unshadowed"]

_NON_IDENT = re.compile(r"\W+")
_CAMEL_SPLIT = re.compile(r"[^0-9A-Za-z]+")

# Names a generated class must not take: they are the stub module's own imports and builtins.
RESERVED_CLASS_NAMES = frozenset(
    {"Any", "Literal", "NotRequired", "Required", "TypedDict", "None", "True", "False", "str", "int", "float", "bool"}
    | {"list", "dict", "tuple", "object", "type"}
)
_SPELLED_FROM = {
    n: "builtins" if hasattr(builtins, n) else "typing" for n in RESERVED_CLASS_NAMES - {"None", "True", "False"}
}
"""The module each name a rendered annotation reads comes from (``list``: builtins, ``Literal``: typing)."""
_IDENTIFIER = re.compile(r"[^\W\d]\w*")
_LINE_END = re.compile(r"\r\n|\r|\n")


def py_identifier(name: str) -> str:
    """A valid Python identifier for a wire name.

    Letters, digits and ``_`` are kept (non-ASCII letters too, after NFKC normalisation,
    which is what Python itself applies to identifiers); every other run of characters
    becomes ``_``; a leading digit gets a ``_`` prefix; a keyword gets a ``_`` suffix
    (``from`` → ``from_``, the PEP 8 convention). Two different names may map to the
    same identifier: :class:`NameMap` detects and resolves that.

    Args:
        name: The wire name, e.g. ``"per-page"``, ``"from"``, ``"2fa.code"``.

    Returns:
        An identifier, e.g. ``per_page``, ``from_``, ``_2fa_code``.
    """
    ident = _NON_IDENT.sub("_", unicodedata.normalize("NFKC", name))
    if not ident:
        return "_"
    if not ident.isidentifier():
        # Starts with a digit, or holds a character Python accepts in \w but not in identifiers.
        ident = "_" + "".join(c if ("a" + c).isidentifier() else "_" for c in ident)
    if keyword.iskeyword(ident):
        ident += "_"
    return ident


def class_name(*parts: str) -> str:
    """A PascalCase class name built from name parts (``("list_issues", "filter")`` → ``ListIssuesFilter``).

    Args:
        *parts: Wire names or words.

    Returns:
        A valid identifier that is not a keyword nor one of the stub module's reserved names.
    """
    words = [w[0].upper() + w[1:] for part in parts for w in _CAMEL_SPLIT.split(part) if w]
    name = py_identifier("".join(words)) if words else "Model"
    if name[0] == "_":
        name = "T" + name
    if name in RESERVED_CLASS_NAMES:
        name += "Type"
    return name


@dataclass(frozen=True, slots=True)
class Collision:
    """Several wire names that map to one Python identifier.

    They are kept apart (the later ones get a numeric suffix), never merged.
    """

    identifier: str
    """The identifier they all map to."""
    wire_names: tuple[str, ...]
    """The wire names, in schema order."""
    where: str
    """Where they meet: ``"parameters"``, a class name, or ``"tools"``."""
    assigned: tuple[str, ...]
    """The identifier each wire name got, in the same order."""

    def __str__(self) -> str:
        pairs = ", ".join(f"{w!r} -> {a}" for w, a in zip(self.wire_names, self.assigned, strict=True))
        return f"name collision in {self.where}: {pairs} (all map to {self.identifier!r})"


class NameMap:
    """Assigns unique identifiers to wire names within one scope and records collisions.

    Example:
        >>> names = NameMap("parameters")
        >>> names.add("per-page"), names.add("per_page")
        ('per_page', 'per_page_2')
        >>> str(names.collisions[0])
        "name collision in parameters: 'per-page' -> per_page, 'per_page' -> per_page_2 (all map to 'per_page')"
        >>> NameMap("parameters").add_all(["per-page", "per_page"])
        ['per_page_2', 'per_page']
    """

    def __init__(self, where: str, reserved: frozenset[str] = frozenset()) -> None:
        self._where = where
        self._reserved = reserved
        self._taken: set[str] = set(reserved)
        self._by_wire: dict[str, str] = {}
        self._groups: dict[str, list[tuple[str, str]]] = {}

    def add(self, wire: str, *, base: str | None = None) -> str:
        """Assign (or return the already assigned) identifier for ``wire``.

        Args:
            wire: The wire name.
            base: The identifier to start from (default: ``py_identifier(wire)``).

        Returns:
            Its identifier in this scope, unique among the names added so far.
        """
        if wire in self._by_wire:
            return self._by_wire[wire]
        base = base or py_identifier(wire)
        ident = base
        n = 2
        while ident in self._taken:
            ident = f"{base}_{n}"
            n += 1
        self._taken.add(ident)
        self._by_wire[wire] = ident
        self._groups.setdefault(base, []).append((wire, ident))
        return ident

    def add_all(self, wires: list[str], *, bases: list[str] | None = None) -> list[str]:
        """Assign identifiers to several names, letting names that need no change keep them.

        ``["per-page", "per_page"]`` gives ``["per_page_2", "per_page"]``: the wire name that
        already is an identifier is not renamed because a sanitised one came first.

        Args:
            wires: Wire names, in order.
            bases: Identifiers to start from, one per wire name (default: ``py_identifier`` of each).

        Returns:
            The identifiers, in the order of ``wires``.
        """
        base_list = bases if bases is not None else [py_identifier(w) for w in wires]
        for wire, base in zip(wires, base_list, strict=True):
            if base == wire:
                self.add(wire, base=base)
        return [self.add(wire, base=base) for wire, base in zip(wires, base_list, strict=True)]

    @property
    def mapping(self) -> dict[str, str]:
        """Wire name → identifier, in the order added."""
        return dict(self._by_wire)

    @property
    def renamed(self) -> dict[str, str]:
        """Identifier → wire name, only for names whose identifier differs from the wire name."""
        return {ident: wire for wire, ident in self._by_wire.items() if ident != wire}

    @property
    def collisions(self) -> list[Collision]:
        """Groups of two or more wire names that share a base identifier."""
        out: list[Collision] = []
        for base, group in self._groups.items():
            if len(group) > 1 or (base in self._reserved and group[0][1] != base):
                out.append(
                    Collision(
                        identifier=base,
                        wire_names=tuple(w for w, _ in group),
                        where=self._where,
                        assigned=tuple(a for _, a in group),
                    )
                )
        return out


def unshadowed(sources: Sequence[str], bound: Iterable[str]) -> tuple[str, tuple[str, ...]]:
    """Stub sources whose annotations still mean the builtins and ``typing`` names a module binds too.

    A module whose function is named after a tool (``def list(...)`` for a tool named ``list``)
    shadows that name in every annotation of the module, whatever their order: to a type checker
    ``list[Entry]`` there subscripts the function, an unknown type, and nothing typed so is checked.
    Each such name the sources read is spelled through an alias of its module instead
    (``_builtins.list[Entry]``), an alias that no identifier of the sources takes. Sources that
    read no shadowed name come back unchanged (the usual case: nothing is parsed).

    Args:
        sources: Stub sources in which every name read is a type (a signature's text is).
        bound: The names the module binds at its top level (its functions).

    Returns:
        The import lines the sources now need (``""`` when nothing is shadowed) and the sources.
    """
    shadowed = {n for n in bound if n in _SPELLED_FROM}
    if not shadowed:
        return "", tuple(sources)
    taken = set(_IDENTIFIER.findall("\n".join(sources)))
    aliases: dict[str, str] = {}
    for module in sorted({_SPELLED_FROM[n] for n in shadowed}):
        alias, n = f"_{module}", 2
        while alias in taken:
            alias, n = f"_{module}_{n}", n + 1
        aliases[module] = alias
    header = "".join(f"import {m} as {a}\n" for m, a in aliases.items())
    return header, tuple(_spelled(s, shadowed, aliases) for s in sources)


def _spelled(source: str, shadowed: set[str], aliases: dict[str, str]) -> str:
    """``source`` with each shadowed name it reads prefixed with its module's alias."""
    if not shadowed.intersection(_IDENTIFIER.findall(source)):
        return source
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a rendered signature always parses; anything else is left as it is
        return source
    spots = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in shadowed]
    # Positions are a line (as Python splits them) and UTF-8 offsets within it.
    parts = _LINE_END.split(source)
    ends = _LINE_END.findall(source)
    lines = [p.encode() for p in parts]
    for n in sorted(spots, key=lambda n: (n.lineno, n.col_offset), reverse=True):
        line = lines[n.lineno - 1]
        spelled = f"{aliases[_SPELLED_FROM[n.id]]}.{n.id}".encode()
        end = n.end_col_offset if n.end_col_offset is not None else n.col_offset + len(n.id.encode())
        lines[n.lineno - 1] = line[: n.col_offset] + spelled + line[end:]
    return "".join(line.decode() + end for line, end in zip(lines, [*ends, ""], strict=True))
