r"""Registered secrets out of the tool definitions a backend lists, before the index sees them.

What an upstream lists (description, title, schemas, annotations, ``_meta``) reaches every caller
and model through search, docs, stubs and digests, all of which read the index; so a definition
is masked once, where a backend lists it, exactly as a result is (:func:`~toolrun.mask_secrets`).

One difference: inside a schema's regular expressions (``pattern`` values, ``patternProperties``
keys) the mask is written as a regex literal (``\*\*\*``), since ``***`` is no regular
expression and would make the whole tool unusable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

from toolindex import InvalidToolError, Tool
from toolrun._redact import MASK, mask_secrets

__all__ = ["masked_definitions", "masked_listing"]

_LITERAL_MASK = re.escape(MASK)
_SCHEMAS = ("inputSchema", "outputSchema", "input_schema", "output_schema")


def masked_definitions(entries: list[Any]) -> list[Any]:
    """Listed definitions (MCP wire or snake_case mappings) with every registered secret masked, in one scan.

    Args:
        entries: The definitions.

    Returns:
        ``entries`` itself when none holds a secret; else a list in which only the definitions
        that held one are new.
    """
    masked = mask_secrets(entries)
    if masked is entries:
        return entries
    # Only a definition the mask changed is walked again (a non-object entry is skipped as invalid later).
    pairs = zip(entries, masked, strict=True)
    return [_literal_masks(cast(dict[str, Any], m)) if m is not e and isinstance(m, dict) else m for e, m in pairs]


def masked_listing(entries: Sequence[Tool | Mapping[str, Any]]) -> list[Tool | Mapping[str, Any] | InvalidToolError]:
    """A provider's listed tools with every registered secret masked, in one scan of the listing.

    One scan of the whole listing, not one per entry: a large catalog's entries share their
    ``$defs`` (Microsoft Graph: 11 MB serialised as a listing, 55 MB entry by entry).

    Args:
        entries: Tools, or MCP-style mappings (wire or snake_case form).

    Returns:
        One item per entry: the entry itself when it holds no secret; else the masked definition
        as a mapping (a :class:`~toolindex.Tool` as its snake_case fields, to validate again), or
        the error that says why it cannot be masked (it contains itself).
    """
    plain = [_fields(e) if isinstance(e, Tool) else e if isinstance(e, dict) else dict(e) for e in entries]
    try:
        shown: list[Any] = masked_definitions(plain)
    except ValueError:  # an entry contains itself: mask one by one, so only that one is lost
        shown = [_masked_alone(p) for p in plain]
    return [e if m is p else m for e, p, m in zip(entries, plain, shown, strict=True)]


def _fields(tool: Tool) -> dict[str, Any]:
    return {f: getattr(tool, f) for f in Tool.model_fields}


def _masked_alone(entry: dict[str, Any]) -> dict[str, Any] | InvalidToolError:
    try:
        return masked_definitions([entry])[0]
    except ValueError:
        return InvalidToolError(mask_secrets(str(entry.get("name", "?"))), None, "it contains itself")


def _literal_masks(definition: dict[str, Any]) -> dict[str, Any]:
    """``definition`` with the masks in its schemas' regular expressions written as regex literals.

    Runs only on a definition that held a secret, so it may walk (and copy) its schemas.
    """
    out = dict(definition)
    for key in _SCHEMAS:
        if key in out:
            out[key] = _regex_safe(out[key])
    return out


def _regex_safe(node: Any) -> Any:
    # Iterative: a hostile schema may be nested deeper than the recursion limit.
    if not isinstance(node, dict | list):
        return node
    root: Any = _copy(node)
    todo: list[Any] = [root]
    while todo:
        current = todo.pop()
        if isinstance(current, list):
            items = cast(list[Any], current)
            for i, v in enumerate(items):
                if isinstance(v, dict | list):
                    items[i] = _copy(v)
                    todo.append(items[i])
            continue
        obj = cast(dict[str, Any], current)
        for k, v in list(obj.items()):
            if k == "pattern" and isinstance(v, str) and MASK in v:
                obj[k] = v.replace(MASK, _LITERAL_MASK)
            elif k == "patternProperties" and isinstance(v, dict):
                renamed = {p.replace(MASK, _LITERAL_MASK): s for p, s in cast(dict[str, Any], v).items()}
                obj[k] = renamed
                todo.append(renamed)
            elif isinstance(v, dict | list):
                obj[k] = _copy(v)
                todo.append(obj[k])
    return root


def _copy(node: Any) -> Any:
    return dict(cast(dict[str, Any], node)) if isinstance(node, dict) else list(cast(list[Any], node))
