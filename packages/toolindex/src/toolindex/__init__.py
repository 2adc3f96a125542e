"""toolindex: a searchable, thread-safe catalog of MCP tools.

>>> from toolindex import InMemoryIndex, Tool, BackendRef
>>> index = InMemoryIndex()
>>> index.register(Tool(name="get_weather", namespace="weather", description="Current weather for a city."),
...                BackendRef.local("get_weather"))
>>> index.search("weather in paris")[0].id
'weather:get_weather'
"""

from toolindex._ids import ToolID
from toolindex._index import InMemoryIndex, PreparedBatch
from toolindex._model import (
    DEFAULT_NAMESPACE,
    BackendKind,
    BackendRef,
    ChangeEvent,
    ChangeKind,
    NamespaceInfo,
    SearchHit,
    Tool,
    ToolPage,
    summarize,
)
from toolindex._protocol import ChangeCallback, Index, Unsubscribe
from toolindex._search import FIELDS, SearchParams, indexing_cost
from toolindex._semantic import DEFAULT_WEAK_RELEVANCE, Embedder, StaticEmbedder, default_embedder
from toolindex.exceptions import (
    AmbiguousToolIDError,
    DuplicateToolError,
    InvalidToolError,
    InvalidToolIDError,
    SemanticUnavailableError,
    ToolIndexError,
    ToolNotFoundError,
)

__all__ = [
    "DEFAULT_NAMESPACE",
    "DEFAULT_WEAK_RELEVANCE",
    "FIELDS",
    "AmbiguousToolIDError",
    "BackendKind",
    "BackendRef",
    "ChangeCallback",
    "ChangeEvent",
    "ChangeKind",
    "DuplicateToolError",
    "Embedder",
    "InMemoryIndex",
    "Index",
    "InvalidToolError",
    "InvalidToolIDError",
    "NamespaceInfo",
    "PreparedBatch",
    "SearchHit",
    "SearchParams",
    "SemanticUnavailableError",
    "StaticEmbedder",
    "Tool",
    "ToolID",
    "ToolIndexError",
    "ToolNotFoundError",
    "ToolPage",
    "Unsubscribe",
    "default_embedder",
    "indexing_cost",
    "summarize",
]
