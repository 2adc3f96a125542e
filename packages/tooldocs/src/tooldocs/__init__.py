"""tooldocs: documentation of tools at the detail an agent needs.

Three detail levels (``summary``, ``schema``, ``full``), Python call signatures rendered
from JSON Schema, capped examples, notes, and result shapes learned from successful calls.

>>> from toolindex import InMemoryIndex, Tool, BackendRef
>>> from tooldocs import InMemoryStore
>>> index = InMemoryIndex()
>>> index.register(Tool(name="get_weather", namespace="weather", description="Current weather for a city.",
...     input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
...     BackendRef.local("get_weather"))
>>> store = InMemoryStore(index)
>>> store.describe("weather:get_weather", "summary").render()
'weather:get_weather — Current weather for a city.'
>>> print(store.describe("weather:get_weather").signature)
def get_weather(*, city: str) -> dict[str, Any]:
    \"\"\"Current weather for a city.\"\"\"
"""

from tooldocs._doc import RENDER_TIERS, Budgets, DetailLevel, ToolDoc, parse_level
from tooldocs._examples import ExampleCaps, ToolExample
from tooldocs._names import Collision, NameMap, py_identifier, unshadowed
from tooldocs._render import (
    STUB_IMPORTS,
    Param,
    RenderedModule,
    RenderedType,
    RenderOptions,
    Signature,
    render_module,
    render_signature,
    schema_to_python,
    tool_signature,
)
from tooldocs._shapes import ShapeFileWarning, ShapeLimits, definition_fingerprint, infer_shape, merge_shapes
from tooldocs._store import REFERENCE_META_KEYS, InMemoryStore, Store
from tooldocs._text import cap_text, json_text
from tooldocs.exceptions import (
    ArgsTooLargeError,
    DocNotFoundError,
    InvalidDetailLevelError,
    InvalidExampleError,
    SchemaRenderError,
    ToolDocsError,
)

__all__ = [
    "REFERENCE_META_KEYS",
    "RENDER_TIERS",
    "STUB_IMPORTS",
    "ArgsTooLargeError",
    "Budgets",
    "Collision",
    "DetailLevel",
    "DocNotFoundError",
    "ExampleCaps",
    "InMemoryStore",
    "InvalidDetailLevelError",
    "InvalidExampleError",
    "NameMap",
    "Param",
    "RenderOptions",
    "RenderedModule",
    "RenderedType",
    "SchemaRenderError",
    "ShapeFileWarning",
    "ShapeLimits",
    "Signature",
    "Store",
    "ToolDoc",
    "ToolDocsError",
    "ToolExample",
    "cap_text",
    "definition_fingerprint",
    "infer_shape",
    "json_text",
    "merge_shapes",
    "parse_level",
    "py_identifier",
    "render_module",
    "render_signature",
    "schema_to_python",
    "tool_signature",
    "unshadowed",
]
