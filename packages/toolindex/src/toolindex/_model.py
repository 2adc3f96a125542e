"""The data the index holds: tools, backend references, search hits, change events."""

from __future__ import annotations

import functools
import re
import reprlib
from collections.abc import Mapping
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from toolindex._ids import ToolID, validate_name, validate_namespace
from toolindex.exceptions import InvalidToolError, InvalidToolIDError

__all__ = [
    "DEFAULT_NAMESPACE",
    "BackendKind",
    "BackendRef",
    "ChangeEvent",
    "ChangeKind",
    "NamespaceInfo",
    "SearchHit",
    "Tool",
    "ToolPage",
    "summarize",
]

#: Namespace given to tools registered without one.
DEFAULT_NAMESPACE = "default"

BackendKind = Literal["local", "mcp", "provider"]
ChangeKind = Literal["registered", "unregistered", "updated"]

# camelCase wire names of the MCP Tool object, mapped onto our snake_case fields.
_WIRE_ALIASES = {
    "inputSchema": "input_schema",
    "outputSchema": "output_schema",
    "_meta": "meta",
}


_SPACES = re.compile(r"\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[`\"'])")


@functools.lru_cache(maxsize=8192)  # asked for each tool of every listed page: once per description
def summarize(text: str | None, limit: int = 160) -> str:
    """First sentence (or line) of a description, whitespace-collapsed and capped.

    Args:
        text: A description, possibly long, multi-line or ``None``.
        limit: Maximum length in characters; longer summaries end in ``…``.

    Returns:
        A single line of at most ``limit`` characters (empty for no text).
    """
    if not text:
        return ""
    # The summary comes from the head of the text: a megabyte-long description costs no more.
    first = text[: max(64 * limit, 4096)].strip().split("\n\n", 1)[0]
    first = _SPACES.sub(" ", first).strip()
    m = _SENTENCE_END.search(first)
    if m and m.start() >= 20:
        first = first[: m.start()]
    if len(first) > limit:
        first = first[: limit - 1].rstrip() + "…"
    return first


class Tool(BaseModel):
    """A tool as the index knows it: the MCP tool fields plus namespace, version and tags.

    Build one from an MCP tool mapping (camelCase wire JSON or snake_case) with
    :meth:`from_mcp`; ``mcp`` itself is never imported.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    name: str
    """MCP tool name (1-128 of ``[A-Za-z0-9_.-]``)."""
    namespace: str = DEFAULT_NAMESPACE
    """Namespace (usually the MCP server's name); may not contain ``:``."""
    version: str | None = None
    """Optional version; ``get`` without a version resolves to the latest."""
    title: str | None = None
    """Human-readable title."""
    description: str = ""
    """Description for the model."""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    """JSON Schema of the arguments (an object schema)."""
    output_schema: dict[str, Any] | None = None
    """JSON Schema of ``structured_content``, if the tool declares one."""
    annotations: dict[str, Any] | None = None
    """MCP tool annotations (``readOnlyHint``, ...), kept as given."""
    meta: dict[str, Any] | None = None
    """MCP ``_meta``, kept as given."""
    tags: tuple[str, ...] = ()
    """Tags, normalised: lower case, trimmed, inner whitespace as ``-``, unique, sorted."""

    @field_validator("name")
    @classmethod
    def _check_name(cls, v: str) -> str:
        try:
            return validate_name(v)
        except InvalidToolIDError as e:
            raise ValueError(e.reason) from None

    @field_validator("namespace")
    @classmethod
    def _check_namespace(cls, v: str) -> str:
        try:
            return validate_namespace(v)
        except InvalidToolIDError as e:
            raise ValueError(e.reason) from None

    @field_validator("tags", mode="before")
    @classmethod
    def _normalise_tags(cls, v: Any) -> tuple[str, ...]:
        if v is None:
            return ()
        if isinstance(v, str):
            v = [v]
        out: set[str] = set()
        for t in v:
            if not isinstance(t, str):
                raise ValueError(f"tags must be strings, got {type(t).__name__}")
            norm = _SPACES.sub("-", t.strip().lower())
            if norm:
                out.add(norm)
        return tuple(sorted(out))

    @field_validator("input_schema")
    @classmethod
    def _check_input_schema(cls, v: dict[str, Any]) -> dict[str, Any]:
        t = v.get("type", "object")
        if t != "object" and not (isinstance(t, list) and "object" in t):
            shown = reprlib.repr(cast("object", t))  # the type may be megabytes of text
            raise ValueError(f"input_schema must describe an object, its type is {shown}")
        props = v.get("properties")
        if props is not None and not isinstance(props, dict):
            raise ValueError("input_schema.properties must be an object")
        return v

    @model_validator(mode="after")
    def _check_version(self) -> Tool:
        if self.version is not None:
            ToolID(self.namespace, self.name, self.version)
        return self

    @classmethod
    def from_mcp(
        cls,
        data: Mapping[str, Any],
        *,
        namespace: str = DEFAULT_NAMESPACE,
        version: str | None = None,
        tags: tuple[str, ...] | list[str] = (),
    ) -> Tool:
        """Build a tool from an MCP tool mapping.

        Accepts the wire form (``inputSchema``, ``outputSchema``, ``_meta``) and the
        snake_case form; unknown keys (such as ``icons``) are dropped.

        Args:
            data: The MCP tool, e.g. ``tool.model_dump(by_alias=True)`` or JSON from ``tools/list``.
            namespace: Namespace to put the tool in (overrides one in ``data``).
            version: Version to give the tool (overrides one in ``data``).
            tags: Extra tags, merged with any in ``data``.

        Returns:
            The tool.

        Raises:
            InvalidToolError: If a field is missing or invalid; names the tool and the field.
        """
        known = set(cls.model_fields)
        fields: dict[str, Any] = {}
        for key, value in data.items():
            k = _WIRE_ALIASES.get(key, key)
            if k in known:
                fields[k] = value
        fields["namespace"] = namespace if namespace != DEFAULT_NAMESPACE else fields.get("namespace", namespace)
        if version is not None:
            fields["version"] = version
        if tags:
            fields["tags"] = [*(fields.get("tags") or ()), *tags]
        if fields.get("description") is None:
            fields["description"] = ""
        if fields.get("input_schema") is None:
            fields["input_schema"] = {"type": "object"}
        return cls.validated(**fields)

    @classmethod
    def validated(cls, **fields: Any) -> Tool:
        """Construct a tool, turning pydantic errors into :class:`InvalidToolError`.

        Args:
            **fields: Tool fields.

        Returns:
            The tool.

        Raises:
            InvalidToolError: Naming the tool and the first invalid field.
        """
        try:
            return cls(**fields)
        except ValidationError as e:
            err = e.errors()[0]
            field = ".".join(str(p) for p in err["loc"]) or None
            msg = err["msg"].removeprefix("Value error, ")
            raise InvalidToolError(str(fields.get("name", "?")), field, msg) from e

    @property
    def id(self) -> str:
        """Fully qualified id: ``namespace:name`` or ``namespace:name:version``."""
        # What str(self.tool_id) gives, without checking again the parts the model checked when made.
        if self.version is None:
            return f"{self.namespace}:{self.name}"
        return f"{self.namespace}:{self.name}:{self.version}"

    @property
    def key(self) -> str:
        """``namespace:name`` without the version."""
        return f"{self.namespace}:{self.name}"

    @property
    def tool_id(self) -> ToolID:
        """The parsed id of this tool."""
        return ToolID(self.namespace, self.name, self.version)

    @property
    def summary(self) -> str:
        """One-line summary of the description (at most 160 characters)."""
        return summarize(self.description) or summarize(self.title) or self.name

    def to_mcp(self) -> dict[str, Any]:
        """The MCP wire form of this tool (camelCase), without namespace, version or tags."""
        out: dict[str, Any] = {"name": self.name, "description": self.description, "inputSchema": self.input_schema}
        if self.title is not None:
            out["title"] = self.title
        if self.output_schema is not None:
            out["outputSchema"] = self.output_schema
        if self.annotations is not None:
            out["annotations"] = self.annotations
        if self.meta is not None:
            out["_meta"] = self.meta
        return out


class BackendRef(BaseModel):
    """Where a tool runs.

    - ``local``: ``name`` is the registered local function's name;
    - ``mcp``: ``server`` is the configured server's name, ``tool`` the server's tool name;
    - ``provider``: ``provider`` is the provider id, ``tool`` the provider's tool id.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: BackendKind
    name: str | None = None
    """Local function name (``kind="local"``)."""
    server: str | None = None
    """MCP server name (``kind="mcp"``)."""
    provider: str | None = None
    """Provider id (``kind="provider"``)."""
    tool: str | None = None
    """The tool's name at the backend, when it differs from the index's name (mcp, provider)."""

    @model_validator(mode="after")
    def _check(self) -> BackendRef:
        need = {"local": "name", "mcp": "server", "provider": "provider"}[self.kind]
        if not getattr(self, need):
            raise ValueError(f"a {self.kind!r} backend reference needs {need!r}")
        return self

    @classmethod
    def local(cls, name: str) -> BackendRef:
        """Reference to a local function."""
        return cls(kind="local", name=name)

    @classmethod
    def mcp(cls, server: str, tool: str | None = None) -> BackendRef:
        """Reference to a tool of a configured MCP server."""
        return cls(kind="mcp", server=server, tool=tool)

    @classmethod
    def of_provider(cls, provider: str, tool: str | None = None) -> BackendRef:
        """Reference to a tool of a provider."""
        return cls(kind="provider", provider=provider, tool=tool)

    @property
    def owner(self) -> str:
        """The local name, server or provider id this reference points at."""
        return self.name or self.server or self.provider or ""

    def __str__(self) -> str:
        return f"{self.kind}:{self.owner}" + (f"/{self.tool}" if self.tool else "")


class SearchHit(BaseModel):
    """One ranked search result."""

    model_config = ConfigDict(frozen=True)

    id: str
    """Fully qualified tool id."""
    namespace: str
    name: str
    summary: str
    """One-line summary of the description."""
    score: float
    """Rank score; higher is better. Comparable within one query only (BM25F for lexical
    search, the fused score in [0, 1] for semantic search)."""
    relevance: float | None = None
    """Semantic search: how close the tool is to the query in meaning (cosine, in [0, 1]; 1 for
    a tool the query names exactly), comparable across queries; ``None`` for lexical search."""
    weak: bool = False
    """A weak match: its ``relevance`` is below the index's ``weak_relevance``. It is returned all
    the same (the caller decides); when every hit is weak the catalog may have no tool for the
    query. Always ``False`` for lexical search, whose scores cannot tell."""


class NamespaceInfo(BaseModel):
    """A namespace and how many tools it holds."""

    model_config = ConfigDict(frozen=True)

    name: str
    tool_count: int
    description: str | None = None
    """The namespace's description, if one was set (see ``InMemoryIndex.describe_namespace``)."""


class ChangeEvent(BaseModel):
    """A change to the index, delivered to subscribers."""

    model_config = ConfigDict(frozen=True)

    version: int
    """Index version after the change; strictly increasing across events."""
    kind: ChangeKind
    tool_ids: tuple[str, ...]
    """Ids of the tools the change touched."""


class ToolPage(BaseModel):
    """One page of a listing."""

    model_config = ConfigDict(frozen=True)

    tools: tuple[Tool, ...]
    next_cursor: str | None
    """Pass to the next ``list_tools`` call; ``None`` on the last page."""
