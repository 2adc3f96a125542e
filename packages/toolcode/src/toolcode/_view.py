"""A filtered view of the catalog: what one caller may see (``allowed_namespaces``).

Every operation of the core goes through a view, so the filter applies the same way to search,
listing, describe, suggestions and runs; a tool outside the view does not exist for the caller:
it is never found, listed, suggested or run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from toolindex import AmbiguousToolIDError, Index, NamespaceInfo, SearchHit, Tool, ToolNotFoundError, ToolPage

__all__ = ["CatalogView"]

_SUGGESTIONS = 3


class CatalogView:
    """The part of an index one caller may use.

    Args:
        index: The whole catalog.
        allowed_namespaces: The namespaces visible to the caller (``None``: all of them).
    """

    __slots__ = ("_allowed", "index")

    def __init__(self, index: Index, allowed_namespaces: Sequence[str] | None = None) -> None:
        self.index = index
        self._allowed = frozenset(allowed_namespaces) if allowed_namespaces is not None else None

    @property
    def allowed_namespaces(self) -> frozenset[str] | None:
        """The visible namespaces, or ``None`` when everything is visible."""
        return self._allowed

    def visible(self, namespace: str) -> bool:
        """Whether tools of ``namespace`` are visible."""
        return self._allowed is None or namespace in self._allowed

    def suggest(self, tool_id: str) -> list[str]:
        """Visible ids close to ``tool_id``, best first (at most three)."""
        suggest = getattr(self.index, "suggest", None)
        if not callable(suggest):
            return []
        ids = cast("list[str]", suggest(tool_id, 8 if self._allowed is not None else _SUGGESTIONS))
        return [i for i in ids if self.visible(i.split(":", 1)[0])][:_SUGGESTIONS]

    def get(self, tool_id: str) -> Tool:
        """The visible tool with this id.

        Raises:
            ToolNotFoundError: If no visible tool has the id (suggestions are visible ids only).
            AmbiguousToolIDError: If a bare name matches several visible tools.
            toolindex.InvalidToolIDError: If the id is malformed.
        """
        try:
            tool = self.index.get(tool_id)
        except ToolNotFoundError:
            raise ToolNotFoundError(tool_id, self.suggest(tool_id)) from None
        except AmbiguousToolIDError as e:
            mine = [c for c in e.candidates if self.visible(c.split(":", 1)[0])]
            if len(mine) == 1:
                return self.index.get(mine[0])
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
        return self.index.search(query, limit=limit, namespaces=ns)

    def namespaces(self) -> list[NamespaceInfo]:
        """Visible namespaces, sorted by name."""
        return [n for n in self.index.namespaces() if self.visible(n.name)]

    def list_tools(self, *, cursor: str | None, limit: int, namespace: str | None) -> ToolPage:
        """A page of visible tools in id order (the index's cursors)."""
        if namespace is not None and not self.visible(namespace):
            return ToolPage(tools=(), next_cursor=None)
        among = sorted(self._allowed) if self._allowed is not None else None
        return self.index.list_tools(cursor=cursor, limit=limit, namespace=namespace, namespaces=among)
