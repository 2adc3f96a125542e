"""A filtered view of the catalog: what one caller may see.

The filter is the namespaces the caller may use (``allowed_namespaces``) and the index partitions
it reads besides the public tools (``partitions``: its own; other callers' private saved snippets
are in theirs). The index applies the partitions itself, to every read: another caller's private
snippet is neither scored (its words would show in the caller's scores), resolved, suggested,
counted nor paged, so it takes no place a caller could notice missing (a suggestion, a page entry).

Every operation of the core goes through a view, so the filter applies the same way to search,
listing, describe, suggestions and runs; a tool outside the view does not exist for the caller:
it is never found, listed, suggested or run.

A view also knows the configured servers that failed to start (``Toolbox.failed``): such a
server is a namespace the caller can see, without tools, and asking for it or for one of its
tools answers ``server_unavailable`` with the reason instead of ``unknown_tool``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
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
        partitions: The index partitions the caller reads besides the public tools (their own
            private snippets'); ``None``: every tool, as a plain index lookup (a view of no
            caller's, such as the whole catalog's; its search reads the public tools only).
    """

    __slots__ = ("_allowed", "_partitions", "_unavailable", "index")

    def __init__(
        self,
        index: Index,
        allowed_namespaces: Sequence[str] | None = None,
        unavailable: Mapping[str, str] | None = None,
        *,
        partitions: Collection[str] | None = None,
    ) -> None:
        self.index = index
        self._partitions = frozenset(partitions) if partitions is not None else None
        self._allowed = frozenset(allowed_namespaces) if allowed_namespaces is not None else None
        self._unavailable: Mapping[str, str] = unavailable if unavailable is not None else {}

    @property
    def partitions(self) -> frozenset[str] | None:
        """The index partitions the view reads besides the public tools (``None``: every tool)."""
        return self._partitions

    @property
    def filtered(self) -> bool:
        """Whether some registered tool may be out of sight (an id must then be resolved through :meth:`get`)."""
        return self._allowed is not None or self._partitions is not None

    def key(self) -> tuple[object, ...]:
        """What tells this view's answers apart from another's over the same catalog version."""
        return self._allowed, self._partitions, tuple(sorted(self._unavailable.items()))

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
        """Visible ids close to ``tool_id``, best first (at most three; the index compares visible ids only)."""
        suggest = getattr(self.index, "suggest", None)
        if not callable(suggest):
            return []
        among = sorted(self._allowed) if self._allowed is not None else None
        return cast("list[str]", suggest(tool_id, _SUGGESTIONS, namespaces=among, partitions=self._partitions))

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
            tool = self.index.get(tool_id, partitions=self._partitions)
        except ToolNotFoundError:
            down = self.unavailable_error(tool_id)
            if down is not None:
                raise down from None
            raise ToolNotFoundError(tool_id, self.suggest(tool_id)) from None
        except AmbiguousToolIDError as e:
            mine = [c for c in e.candidates if self.visible(c.split(":", 1)[0])]
            if len(mine) == 1:
                return self.index.get(mine[0], partitions=self._partitions)
            if not mine:
                raise ToolNotFoundError(tool_id, self.suggest(tool_id)) from None
            raise AmbiguousToolIDError(e.name, mine) from None
        if not self.visible(tool.namespace):
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
        # Another partition's tools are neither returned nor scored with.
        return self.index.search(query, limit=limit, namespaces=ns, partitions=self._partitions or ())

    def namespaces(self) -> list[NamespaceInfo]:
        """Visible namespaces, sorted by name (a count is of the tools the view reads)."""
        return [n for n in self.index.namespaces(partitions=self._partitions) if self.visible(n.name)]

    def list_tools(self, *, cursor: str | None, limit: int, namespace: str | None) -> ToolPage:
        """A page of visible tools in id order (the index's cursors).

        Raises:
            ToolError: ``server_unavailable``, if ``namespace`` is a server that failed to start.
            ValueError: If the cursor is not one the index made.
        """
        if namespace is not None and not self.visible(namespace):
            return ToolPage(tools=(), next_cursor=None)
        # The index leaves other partitions out itself: a page or a cursor never shows where one stands.
        parts = self._partitions
        if namespace is not None and (down := self.unavailable_error(namespace)) is not None:
            page = self.index.list_tools(cursor=cursor, limit=limit, namespace=namespace, partitions=parts)
            if not page.tools:
                raise down
            return page
        among = sorted(self._allowed) if self._allowed is not None else None
        return self.index.list_tools(
            cursor=cursor, limit=limit, namespace=namespace, namespaces=among, partitions=parts
        )
