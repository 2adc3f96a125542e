"""How an approval of quarantined tools names the definitions it covers: each by the digest shown with it.

An approval covers only a definition someone was shown: every door (the ``approve_tools`` tool,
:meth:`~toolcode.CodeMode.approve_tools`, ``toolcode tools approve``, the console) reads what it is
given with :func:`approval_request`, and refuses what names no digest with :func:`unbound_text`.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

from toolcode.exceptions import InvalidArgumentsError, clip
from toolcode.models import ToolApprovalEntry
from toolindex import Index, Tool, ToolIndexError

__all__ = ["APPROVAL_FORM", "DIGEST_FORM", "approval_request", "named_tool", "unbound_text"]

APPROVAL_FORM: Final = "{'ns:name': 'DIGEST'} or ['ns:name@DIGEST']"
"""How an approval of quarantined tools names each definition: by the digest shown with it."""
DIGEST_FORM: Final = "32 lowercase hexadecimal characters"
"""What :func:`tool_hash` gives, and so the only digest an approval may name."""
_DIGEST: Final = re.compile(r"[0-9a-f]{32}")
_MAX_APPROVALS: Final = 1_000


def approval_request(tools: Any) -> tuple[dict[str, str], list[str]]:
    """What an approval of quarantined tools names: ``({tool_id: digest}, patterns named without a digest)``.

    ``tools``: ``{tool_id: digest}``, a list of ``"tool_id@digest"`` strings, or one such string.
    An entry without a digest (an id or a glob) binds nothing: the caller refuses it. A list entry
    with an ``@`` after its ``:`` names a digest (a tool's name never holds an ``@``).

    Raises:
        InvalidArgumentsError: If ``tools`` is none of these forms (or names over 1,000 tools), or a
            digest named is not one (:data:`DIGEST_FORM`): ``field`` says where, ``tool_id`` which tool.
    """
    shape = f"must be {APPROVAL_FORM}: each tool with the digest of the definition reviewed"
    bound: dict[str, str] = {}
    unbound: list[str] = []
    if isinstance(tools, str):
        tools = [tools]
    if isinstance(tools, Mapping):
        items = list(cast("Mapping[Any, Any]", tools).items())
        if not all(isinstance(k, str) for k, _ in items):
            raise InvalidArgumentsError("tools", shape)
        for tool_id, digest in cast("list[tuple[str, Any]]", items):
            bound[tool_id] = _digest(f"tools[{clip(tool_id, 80)!r}]", tool_id, digest)
    elif isinstance(tools, list) and all(isinstance(p, str) for p in cast("list[Any]", tools)):
        for i, p in enumerate(cast("list[str]", tools)):
            tool_id, at, digest = p.rpartition("@")
            if at and ":" in tool_id and ":" not in digest:
                bound[tool_id] = _digest(f"tools[{i}]", tool_id, digest)
            else:
                unbound.append(p)
    else:
        raise InvalidArgumentsError("tools", shape)
    if len(bound) + len(unbound) > _MAX_APPROVALS:
        raise InvalidArgumentsError("tools", f"at most {_MAX_APPROVALS:,} tools at once")
    return bound, unbound


def _digest(field: str, tool_id: str, digest: Any) -> str:
    """``digest`` if it is one (:data:`DIGEST_FORM`); else what is wrong, naming the tool."""
    if isinstance(digest, str) and _DIGEST.fullmatch(digest):
        return digest
    got = clip(ascii(digest), 60) if isinstance(digest, str) else type(digest).__name__
    raise InvalidArgumentsError(
        field,
        f"the digest named for {clip(tool_id, 80)!r} is not one (got {got}): a digest is {DIGEST_FORM}, "
        "the one shown with the definition reviewed (describe_tool at level 'full')",
        tool_id=tool_id,
    )


def unbound_text(patterns: Sequence[str], blocked: Sequence[ToolApprovalEntry]) -> str:
    """Why an approval that names tools without digests is refused, and what it would cover, with the digests now."""
    covered = [e for e in blocked if any(fnmatch.fnmatchcase(e.tool_id, p) for p in patterns)]
    named = ", ".join(repr(clip(p, 80)) for p in patterns[:5]) + (" ..." if len(patterns) > 5 else "")
    shown = "; ".join(f"{e.tool_id}@{e.digest} ({e.state})" for e in covered[:10])
    more = f"; and {len(covered) - 10} more" if len(covered) > 10 else ""
    cover = f"it covers {shown}{more}" if covered else "it covers no quarantined tool now"
    return (
        f"{named} names no definition: an approval covers only the definition the approver was shown, so "
        f"name each tool with its digest ({APPROVAL_FORM}). {cover}. Each digest is of the definition now: "
        "review it (describe_tool at level 'full' shows it with its digest) before approving that digest"
    )


def named_tool(index: Index, tool_id: str) -> Tool | None:
    """The catalog's tool of exactly the id an approval names (``None``: no such tool now).

    A bare name or an earlier version that the index resolves to another id counts as none: an
    approval covers the tool it names, never one it happens to resolve to.
    """
    try:
        tool = index.get(tool_id)
    except ToolIndexError:
        return None
    return tool if tool.id == tool_id else None
