"""A filtered view of the catalog: what one caller may see.

The filter is the namespaces the caller may use (``allowed_namespaces``) and the tools that are
other callers' own (``hidden``: their private saved snippets). Search does not filter its hits
afterwards: private snippets are in their owner's partition of the index (``partitions``: the
caller's own), which another caller's search neither finds nor is scored with, so they change
nothing of its scores or order (their words would show in them).

Every operation of the core goes through a view, so the filter applies the same way to search,
listing, describe, suggestions and runs; a tool outside the view does not exist for the caller:
it is never found, listed, suggested or run.

A view also knows the configured servers that failed to start (``Toolbox.failed``): such a
server is a namespace the caller can see, without tools, and asking for it or for one of its
tools answers ``server_unavailable`` with the reason instead of ``unknown_tool``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence, Set
from typing import cast

from toolcode.exceptions import ErrorCode, ToolError, clip
from toolindex import AmbiguousToolIDError, Index, NamespaceInfo, SearchHit, Tool, ToolNotFoundError, ToolPage

__all__ = ["UNAVAILABLE_HINT", "CatalogView", "server_unavailable"]

_SUGGESTIONS = 3
_MAX_REASON = 500
UNAVAILABLE_HINT = (
    "the server failed to start, so its tools cannot be called now: use other tools, or have its config entry fixed"
)


def server_unavailable(server: str, reason: str, tool_id: str | None = None) -> ToolError:
    """The error for a call to (or a lookup in) a server that failed to start.

    Args:
        server: The server's name (its namespace).
        reason: Why it is unavailable (``Toolbox.failed``).
        tool_id: The id asked for (the server's name when the namespace itself was asked for).

    Returns:
        A :class:`ToolError` with code ``server_unavailable`` naming the server and the reason.
    """
    err = ToolError(
        tool_id or server,
        f"server {clip(server)!r} is unavailable: {clip(reason, _MAX_REASON)}",
        "resolve",
        code=ErrorCode.SERVER_UNAVAILABLE,
    )
    err.hint = UNAVAILABLE_HINT
    return err


class CatalogView:
    """The part of an index one caller may use.

    Args:
        index: The whole catalog.
        allowed_namespaces: The namespaces visible to the caller (``None``: all of them).
        unavailable: Servers that failed to start, with the reason (a live mapping:
            ``Toolbox.failed``, which a later successful connect clears).
        hidden: Tool ids out of sight for this caller whatever their namespace; or a function
            giving them as they are now (read at each use: a view may outlive a change, such as
            another caller's private snippet saved during a run).
        partitions: The index partitions the caller's search reads besides the public tools
            (their own private snippets'); every hidden tool is in another partition.
    """

    __slots__ = ("_allowed", "_fixed", "_live", "_partitions", "_unavailable", "index")

    def __init__(
        self,
        index: Index,
        allowed_namespaces: Sequence[str] | None = None,
        unavailable: Mapping[str, str] | None = None,
        hidden: Set[str] | Callable[[], Set[str]] = frozenset(),
        *,
        partitions: Sequence[str] = (),
    ) -> None:
        self.index = index
        self._partitions = tuple(partitions)
        self._allowed = frozenset(allowed_namespaces) if allowed_namespaces is not None else None
        self._unavailable: Mapping[str, str] = unavailable if unavailable is not None else {}
        self._live: Callable[[], Set[str]] | None = hidden if callable(hidden) else None
        self._fixed: Set[str] = frozenset() if callable(hidden) else hidden

    @property
    def _hidden(self) -> Set[str]:
        return self._fixed if self._live is None else self._live()

    @property
    def hidden(self) -> frozenset[str]:
        """The tool ids out of sight for this caller whatever their namespace, as they are now."""
        return frozenset(self._hidden)  # the same object when it already is one

    @property
    def filtered(self) -> bool:
        """Whether some registered tool is out of sight (an id must then be resolved through :meth:`get`)."""
        return self._allowed is not None or bool(self._fixed if self._live is None else self._live())

    def key(self) -> tuple[object, ...]:
        """What tells this view's answers apart from another's over the same catalog version."""
        return self._allowed, self.hidden, self._partitions, tuple(sorted(self._unavailable.items()))

    def _shown(self, tool_id: str) -> bool:
        return tool_id not in self._hidden

    @property
    def allowed_namespaces(self) -> frozenset[str] | None:
        """The visible namespaces, or ``None`` when everything is visible."""
        return self._allowed

    def visible(self, namespace: str) -> bool:
        """Whether tools of ``namespace`` are visible."""
        return self._allowed is None or namespace in self._allowed

    def unavailable(self) -> dict[str, str]:
        """Visible servers that failed to start, with the reason, by name."""
        return {name: why for name, why in sorted(self._unavailable.items()) if self.visible(name)}

    def unavailable_error(self, asked: str) -> ToolError | None:
        """The ``server_unavailable`` error for an id (or a namespace) of a server that failed to start.

        Args:
            asked: A tool id (``server:name``) or a bare namespace.

        Returns:
            The error, or ``None`` when ``asked`` is not about an unavailable visible server.
        """
        if not self._unavailable:
            return None
        server = asked.split(":", 1)[0] if ":" in asked else asked
        reason = self._unavailable.get(server)
        if reason is None or not self.visible(server):
            return None
        return server_unavailable(server, reason, asked)

    def suggest(self, tool_id: str) -> list[str]:
        """Visible ids close to ``tool_id``, best first (at most three)."""
        suggest = getattr(self.index, "suggest", None)
        if not callable(suggest):
            return []
        ids = cast("list[str]", suggest(tool_id, 8 if self._allowed is not None else _SUGGESTIONS))
        return [i for i in ids if self.visible(i.split(":", 1)[0]) and self._shown(i)][:_SUGGESTIONS]

    def get(self, tool_id: str) -> Tool:
        """The visible tool with this id.

        Raises:
            ToolNotFoundError: If no visible tool has the id (suggestions are visible ids only).
            AmbiguousToolIDError: If a bare name matches several visible tools.
            toolindex.InvalidToolIDError: If the id is malformed.
            ToolError: ``server_unavailable``, if the id (or a bare name) names a visible server
                that failed to start.
        """
        try:
            tool = self.index.get(tool_id)
        except ToolNotFoundError:
            down = self.unavailable_error(tool_id)
            if down is not None:
                raise down from None
            raise ToolNotFoundError(tool_id, self.suggest(tool_id)) from None
        except AmbiguousToolIDError as e:
            mine = [c for c in e.candidates if self.visible(c.split(":", 1)[0]) and self._shown(c)]
            if len(mine) == 1:
                return self.index.get(mine[0])
            if not mine:
                raise ToolNotFoundError(tool_id, self.suggest(tool_id)) from None
            raise AmbiguousToolIDError(e.name, mine) from None
        if not self.visible(tool.namespace) or not self._shown(tool.id):
            raise ToolNotFoundError(tool_id, self.suggest(tool_id))
        return tool

    def search(self, query: str, *, limit: int, namespaces: Sequence[str] | None = None) -> list[SearchHit]:
        """Search within the view (and within ``namespaces`` when given)."""
        if self._allowed is None:
            ns = list(namespaces) if namespaces is not None else None
        else:
            ns = sorted(self._allowed if namespaces is None else self._allowed.intersection(namespaces))
            if not ns:
                return []
        # No hidden tool is in the view's partitions: the index neither returns one nor scores with it.
        return self.index.search(query, limit=limit, namespaces=ns, partitions=self._partitions)

    def namespaces(self) -> list[NamespaceInfo]:
        """Visible namespaces, sorted by name (a count leaves out the tools hidden from this caller)."""
        hidden = Counter(i.split(":", 1)[0] for i in self._hidden)
        out: list[NamespaceInfo] = []
        for n in self.index.namespaces():
            gone = hidden[n.name]
            if self.visible(n.name) and n.tool_count > gone:
                out.append(n.model_copy(update={"tool_count": n.tool_count - gone}) if gone else n)
        return out

    def list_tools(self, *, cursor: str | None, limit: int, namespace: str | None) -> ToolPage:
        """A page of visible tools in id order (the index's cursors).

        Raises:
            ToolError: ``server_unavailable``, if ``namespace`` is a server that failed to start.
            ValueError: If the cursor is not one the index made.
        """
        if namespace is not None and not self.visible(namespace):
            return ToolPage(tools=(), next_cursor=None)
        hidden = self._hidden  # left out by the index: a page or a cursor never shows where one stands
        if namespace is not None and (down := self.unavailable_error(namespace)) is not None:
            page = self.index.list_tools(cursor=cursor, limit=limit, namespace=namespace, exclude=hidden)
            if not page.tools:
                raise down
            return page
        among = sorted(self._allowed) if self._allowed is not None else None
        return self.index.list_tools(cursor=cursor, limit=limit, namespace=namespace, namespaces=among, exclude=hidden)
