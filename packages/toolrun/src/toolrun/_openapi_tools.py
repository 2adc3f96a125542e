"""OpenAPI operations as tools: names, input and output schemas, and what a call needs to know.

Every operation of the document (each HTTP method of each path) becomes one MCP-style tool:

- **name**: the ``operationId``, else ``<method>_<path>``, with every run of characters MCP
  does not allow replaced by ``_`` and cut to 128 characters; a name taken by an earlier
  operation gets ``_2``, ``_3``… (document order, so the same document gives the same names);
- **input schema**: one property per parameter (path, query, header, cookie; named as in the
  document, a name used twice gets its location as prefix, e.g. ``query_id``) and the request
  body: a JSON (or form) body whose schema is a plain object has its properties as arguments
  of their own when no name collides; any other body is the one argument ``body``;
- **output schema**: the schema of the first 2xx JSON response;
- ``$ref`` s are resolved with ``referencing`` (the jsonschema project's library), only inside
  the document: remote and file references are refused, nothing is ever fetched. Schemas a
  tool uses are copied into its schema's ``$defs`` (each converted once per document), so
  recursive schemas stay finite. OpenAPI 3.0 schemas are turned into JSON Schema 2020-12
  (``nullable``, boolean ``exclusiveMinimum``/``exclusiveMaximum``; ``example``, ``xml``,
  ``discriminator`` and ``x-`` extensions are dropped).

An operation that cannot be turned into a tool (a reference that leaves the document, a
schema nested too deeply) is skipped with the reason; the others stay usable.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple, cast

from toolrun._gc import LARGE_DOCUMENT_PATHS, collector_paused
from toolrun._openapi_document import EXTRA_HINT
from toolrun._openapi_schemas import SchemaConverter, Skip, unique_name
from toolrun._openapi_target import template_problem
from toolrun._schema_limits import DEFAULT_SCHEMA_LIMITS
from toolrun.exceptions import ConfigError

if TYPE_CHECKING:
    from toolrun._compat_referencing import Resolver

__all__ = [
    "MAX_OPERATIONS",
    "METHODS",
    "METHOD_OVERRIDES",
    "BodySpec",
    "BuiltTools",
    "Operation",
    "ParamSpec",
    "build_tools",
    "is_method_override",
    "tool_name",
    "wire_key",
]

MAX_OPERATIONS: Final = 25_000
"""Most operations a document may have as tools (after ``include`` and ``tags``; Microsoft Graph v1.0: 11,422).

Each tool costs about 10 KB in the index and 0.15 ms to build, so a 64 MiB document of tiny operations
(about a million) would hold a start-up for minutes and take gigabytes.
"""
METHODS: Final = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
"""HTTP methods that are operations of a path item."""

Location = Literal["path", "query", "header", "cookie"]
_LOCATIONS: Final = ("path", "query", "header", "cookie")
METHOD_OVERRIDES: Final = frozenset({"_method", "x-http-method", "x-http-method-override", "x-method-override"})
"""Names under which servers take a request's method from the request itself, lower-case.

Laravel, Symfony and Rails read ``_method`` from the query or the body (Laravel a JSON body too),
many stacks the headers: a POST the policy judged a write that the service runs as a DELETE. No
caller's code sends one, as a header, a query parameter or a body field (:func:`is_method_override`).
"""
_OVERRIDES_FOLDED: Final = frozenset(n.replace("-", "_") for n in METHOD_OVERRIDES)
_FOLD: Final = str.maketrans({" ": "_", ".": "_", "-": "_"})

# Header parameters the OpenAPI specification says to ignore (the client sets them), and those a
# caller's code may never set: the Fetch standard's forbidden request headers (what a web page's
# script may not set, for the same reasons: Host would send the configured credentials to another
# virtual host, the framing headers would split requests) and the proxies' routing headers
# (X-Forwarded-Host, ...). The method overrides are METHOD_OVERRIDES, for every location.
_IGNORED_HEADERS: Final = frozenset(
    {
        "accept", "content-type", "authorization",
        "accept-charset", "accept-encoding", "access-control-request-headers", "access-control-request-method",
        "connection", "content-length", "cookie", "cookie2", "date", "dnt", "expect", "host", "keep-alive",
        "origin", "referer", "set-cookie", "te", "trailer", "transfer-encoding", "upgrade", "via",
        "forwarded", "x-real-ip", "x-original-url", "x-rewrite-url", "x-host",
    }
)  # fmt: skip
_IGNORED_PREFIXES: Final = ("proxy-", "sec-", "x-forwarded-")
_BASE_URI: Final = "urn:toolrun:openapi"
_MAX_REF_HOPS: Final = 32
_SUCCESS: Final = re.compile(r"2(\d\d|XX)", re.IGNORECASE)
"""A success status code (or range) among an operation's responses."""
_MAX_FLAT_FIELDS: Final = 256
_NOT_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


class ParamSpec(NamedTuple):
    """One parameter of an operation, as a call sends it (a named tuple: a document can have tens of thousands)."""

    name: str
    """Name on the wire."""
    location: Location
    """Where it goes."""
    arg: str
    """Name of the tool argument that carries it."""
    style: str
    """OpenAPI serialisation style (``simple``, ``form``, ``deepObject``…)."""
    explode: bool
    """OpenAPI ``explode``."""
    as_json: bool = False
    """Declared with ``content`` (``application/json``): the value is sent as JSON text."""


@dataclass(frozen=True, slots=True)
class BodySpec:
    """The request body of an operation."""

    media_type: str
    """Sent as ``Content-Type``."""
    arg: str | None
    """The argument holding the whole body, or ``None`` when its properties are arguments."""
    fields: tuple[str, ...] = ()
    """With ``arg`` ``None``: the arguments that are the body's properties."""
    required: bool = False
    """Whether the document requires a body."""


@dataclass(frozen=True, slots=True)
class Operation:
    """What calling one tool means in HTTP."""

    name: str
    """The tool's name."""
    method: str
    """Upper-case HTTP method."""
    path: str
    """Path template, e.g. ``/repos/{owner}/{repo}``."""
    operation_id: str | None
    """The document's ``operationId``."""
    server: str | None
    """URL of the first server declared for the operation, its path or the document."""
    params: tuple[ParamSpec, ...] = ()
    body: BodySpec | None = None
    accept: str | None = None
    """Media type of the success response, sent as ``Accept``."""


@dataclass
class BuiltTools:
    """What :func:`build_tools` made of a document."""

    tools: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    """MCP-style tool mappings, in document order."""
    operations: dict[str, Operation] = field(default_factory=dict[str, Operation])
    """By tool name."""
    skipped: dict[str, str] = field(default_factory=dict[str, str])
    """Operations that did not become tools (``METHOD /path``) → reason."""
    total: int = 0
    """Operations in the document (filtered out ones included)."""
    notes: dict[str, str] = field(default_factory=dict[str, str])
    """Tools built with a part left out (an output schema over the runner's bounds) → what and why."""


def tool_name(operation_id: str | None, method: str, path: str) -> str:
    """The tool name for an operation, before de-duplication.

    >>> tool_name("repos/get", "get", "/repos/{owner}/{repo}"), tool_name(None, "get", "/repos/{owner}")
    ('repos_get', 'get_repos_owner')
    """
    base = operation_id if operation_id and operation_id.strip() else f"{method} {path}"
    name = _NOT_NAME.sub("_", base).strip("_")[:128].rstrip("_")
    return name or method


def is_method_override(name: str) -> bool:
    """Whether a server may read a header, query parameter or body field of this name as the request's method.

    The name is compared with :data:`METHOD_OVERRIDES` in any case and as servers read names: PHP
    drops leading spaces, reads spaces and dots as ``_`` and ``_method[x]`` as ``_method``; CGI
    reads ``-`` in a header name as ``_``.

    >>> is_method_override("_METHOD"), is_method_override(" .method"), is_method_override("X_HTTP_Method")
    (True, True, True)
    >>> is_method_override("method"), is_method_override("payment_method")
    (False, False)
    """
    return name.lstrip(" ").split("[", 1)[0].translate(_FOLD).lower() in _OVERRIDES_FOLDED


def _is_json(media_type: str) -> bool:
    mt = media_type.split(";", 1)[0].strip().lower()
    return mt == "application/json" or mt.endswith("+json")


def _media_rank(media_type: str) -> int:
    mt = media_type.split(";", 1)[0].strip().lower()
    if mt == "application/json":
        return 0
    if _is_json(mt):
        return 1
    if mt == "application/x-www-form-urlencoded":
        return 2
    if mt == "multipart/form-data":
        return 3
    return 4 if mt.startswith("text/") else 5


def wire_key(location: str, name: str) -> tuple[str, str]:
    """``(location, name)`` as the services that read it compare names.

    Header names in any case and with ``_`` as ``-`` (CGI, WSGI and PHP read ``X_Api_Key`` and
    ``X-Api-Key`` as the one ``HTTP_X_API_KEY``); query names in any case (ASP.NET and others read
    ``API_KEY`` as ``api_key``); cookie and path names as written.
    """
    if location == "header":
        return location, name.lower().replace("_", "-")
    if location == "query":
        return location, name.casefold()
    return location, name


def _first_server(*holders: Mapping[str, Any]) -> str | None:
    for holder in holders:
        servers = holder.get("servers")
        if isinstance(servers, list) and servers and isinstance(servers[0], dict):
            first = cast(dict[str, Any], servers[0])
            url = first.get("url")
            if isinstance(url, str):
                variables = first.get("variables")
                if isinstance(variables, dict):
                    for var, spec in cast(dict[str, Any], variables).items():
                        if isinstance(spec, dict) and "default" in spec:
                            url = url.replace("{" + var + "}", str(cast(dict[str, Any], spec)["default"]))
                return url
    return None


class _Builder:
    def __init__(self, doc: dict[str, Any], server: str, supplied: Collection[tuple[str, str]] = ()) -> None:
        # Parameters that are not arguments, as (location, name) with header names lower-case:
        # the headers the client sets, and whatever the configuration sends with every call.
        given = (wire_key(loc, n) for loc, n in supplied)
        self.supplied = frozenset([*(("header", h) for h in _IGNORED_HEADERS), *given])
        try:
            from referencing import Registry, Resource, Specification
            from referencing.jsonschema import DRAFT202012
        except ImportError as e:
            raise ConfigError(server, "openapi", EXTRA_HINT) from e
        version = doc.get("openapi")
        if not isinstance(version, str) or not re.match(r"^3\.[01]\.", version):
            if "swagger" in doc:
                raise ConfigError(server, "openapi", "Swagger 2.0 documents are not supported; convert it to OpenAPI 3")
            raise ConfigError(server, "openapi", "not an OpenAPI 3.0 or 3.1 document (no 'openapi: 3.x.y')")
        self.openapi30 = version.startswith("3.0.")
        # 3.1 schemas are JSON Schema 2020-12 ($id changes the base of the references below it);
        # 3.0 has no identifiers at all, so its references are plain JSON pointers.
        spec = Specification.OPAQUE if self.openapi30 else DRAFT202012
        resource: Resource[Any] = Resource(contents=doc, specification=spec)
        registry = Registry[Any]().with_resource(_BASE_URI, resource)
        self.resolver: Resolver[Any] = registry.resolver(base_uri=_BASE_URI)
        self.max_expanded = DEFAULT_SCHEMA_LIMITS.max_expanded_nodes
        self.schemas = SchemaConverter(self.openapi30, max_expanded=self.max_expanded)
        self.doc = doc
        self.notes: dict[str, str] = {}

    def deref(self, obj: Any, resolver: Resolver[Any]) -> tuple[Any, Resolver[Any]]:
        """Follow references until a non-reference object (parameters, bodies, responses)."""
        for _ in range(_MAX_REF_HOPS):
            if not isinstance(obj, dict) or "$ref" not in obj:
                return cast(Any, obj), resolver
            obj, resolver = self.schemas.lookup(cast(dict[str, Any], obj)["$ref"], resolver)
        raise Skip(f"more than {_MAX_REF_HOPS} references in a row")

    def operation(
        self, name: str, method: str, path: str, item: dict[str, Any], op: dict[str, Any], resolver: Resolver[Any]
    ) -> tuple[dict[str, Any], Operation]:
        props: dict[str, Any] = {}
        required: list[str] = []
        used: set[str] = set()
        params = self._params(item, op, resolver)
        specs: list[ParamSpec] = []
        names = [p[0] for p in params]
        for wire, location, param, p_resolver in params:
            arg = wire if names.count(wire) == 1 else f"{location}_{wire}"
            schema: Any
            schema, as_json = self._param_schema(param, p_resolver, used)
            description = param.get("description")
            if isinstance(description, str) and description:
                schema = _merged(schema, {"description": description})
            if param.get("deprecated") is True:
                schema = _merged(schema, {"deprecated": True})
            props[arg] = schema
            if location == "path" or param.get("required") is True:
                required.append(arg)
            default_style = "simple" if location in ("path", "header") else "form"
            style = param.get("style") if isinstance(param.get("style"), str) else default_style
            explode = param.get("explode")
            specs.append(
                ParamSpec(
                    wire,
                    location,
                    arg,
                    cast(str, style),
                    explode if isinstance(explode, bool) else style == "form",
                    as_json,
                )
            )
        body = self._body(op, resolver, props, required, used)
        output, out_used, accept = self._output(op, resolver)
        input_schema: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
        if required:
            input_schema["required"] = required
        defs = self.schemas.closure(used)
        if defs:
            input_schema["$defs"] = defs
        if (size := self.schemas.expanded_size(input_schema)) > self.max_expanded:
            bound = self.max_expanded
            raise Skip(f"its input schema has at least {size:,} values with references expanded (bound: {bound:,})")
        tool: dict[str, Any] = {"name": name, "inputSchema": input_schema}
        if output is not None:
            out_defs = self.schemas.closure(out_used)
            if out_defs:
                output = _merged(output, {"$defs": out_defs})
            # Validation would refuse a larger one on every call: the tool is kept, without it.
            try:
                size = self.schemas.expanded_size(output)
            except Skip as e:
                self.notes[name] = f"no output schema: {e}"
            else:
                if size > self.max_expanded:
                    self.notes[name] = f"no output schema: at least {size:,} values with references expanded"
                else:
                    tool["outputSchema"] = output
        summary = op.get("summary")
        text = op.get("description")
        parts = [s.strip() for s in (summary, text) if isinstance(s, str) and s.strip()]
        parts.append(f"HTTP: {method.upper()} {path}")
        tool["description"] = "\n\n".join(parts)
        if isinstance(summary, str) and summary.strip():
            tool["title"] = summary.strip()[:200]
        tags = op.get("tags")
        if isinstance(tags, list):
            tool["tags"] = [t for t in cast(list[Any], tags) if isinstance(t, str) and t.strip()][:20]
        tool["annotations"] = _annotations(method, op)
        op_id = op.get("operationId")
        server = _first_server(op, item, self.doc)
        return tool, Operation(
            name,
            method.upper(),
            path,
            op_id if isinstance(op_id, str) else None,
            server,
            tuple(specs),
            body,
            accept,
        )

    def _params(
        self, item: dict[str, Any], op: dict[str, Any], resolver: Resolver[Any]
    ) -> list[tuple[str, Location, dict[str, Any], Resolver[Any]]]:
        found: dict[tuple[str, str], tuple[str, Location, dict[str, Any], Resolver[Any]]] = {}
        for holder in (item, op):  # the operation's own parameters override its path's
            raw = holder.get("parameters")
            if raw is None:
                continue
            if not isinstance(raw, list):
                raise Skip("'parameters' is not a list")
            for entry in cast(list[Any], raw):
                param, p_resolver = self.deref(entry, resolver)
                if not isinstance(param, dict):
                    raise Skip("a parameter is not an object")
                p = cast(dict[str, Any], param)
                wire, location = p.get("name"), p.get("in")
                if not isinstance(wire, str) or not wire or location not in _LOCATIONS:
                    raise Skip("a parameter has no valid 'name' and 'in'")
                if wire_key(location, wire) in self.supplied:
                    continue  # the client or the configuration sends it
                if location in ("header", "query") and is_method_override(wire):
                    continue
                if location == "header" and wire_key(location, wire)[1].startswith(_IGNORED_PREFIXES):
                    continue
                found[(wire, location)] = (wire, location, p, p_resolver)
        return list(found.values())

    def _param_schema(self, param: dict[str, Any], resolver: Resolver[Any], used: set[str]) -> tuple[Any, bool]:
        if "schema" in param:
            schema, deps = self.schemas.convert(param["schema"], resolver)
            used |= deps
            return schema, False
        content = param.get("content")
        if isinstance(content, dict) and content:
            media, body = next(iter(cast(dict[str, Any], content).items()))
            if isinstance(body, dict) and "schema" in body:
                schema, deps = self.schemas.convert(cast(dict[str, Any], body)["schema"], resolver)
                used |= deps
                return schema, _is_json(media)
            return {}, _is_json(media)
        return {"type": "string"}, False

    def _body(
        self, op: dict[str, Any], resolver: Resolver[Any], props: dict[str, Any], required: list[str], used: set[str]
    ) -> BodySpec | None:
        if "requestBody" not in op:
            return None
        body, b_resolver = self.deref(op["requestBody"], resolver)
        if not isinstance(body, dict):
            raise Skip("'requestBody' is not an object")
        b = cast(dict[str, Any], body)
        content = b.get("content")
        if not isinstance(content, dict) or not content:
            return None
        media = min(cast(dict[str, Any], content), key=_media_rank)
        entry = cast(dict[str, Any], content)[media]
        raw_schema: Any = cast(dict[str, Any], entry).get("schema", {}) if isinstance(entry, dict) else {}
        schema: Any
        schema, deps = self.schemas.convert(raw_schema, b_resolver)
        is_required = b.get("required") is True
        description = b.get("description")
        flat = self._flat_fields(schema, media, props) if _media_rank(media) <= 3 else None
        if flat is not None:
            fields, field_required = flat
            # A body that is a reference has its definition inlined: what that needs, the tool needs.
            used |= self._deps_of_fields(schema) if _is_ref(schema) else deps
            props.update(fields)
            if is_required:
                required.extend(n for n in field_required if n in fields)
            return BodySpec(media, None, tuple(fields), is_required)
        arg = next(n for n in ("body", "request_body", "body_") if n not in props)
        if _media_rank(media) >= 4 and schema in ({}, True):
            schema = {"type": "string"}
        if isinstance(description, str) and description:
            schema = _merged(schema, {"description": description})
        props[arg] = schema
        used |= deps
        if is_required:
            required.append(arg)
        return BodySpec(media, arg, (), is_required)

    def _object_of(self, schema: Any) -> dict[str, Any] | None:
        # The body's own schema, when it is (a reference to) a plain object with properties.
        for _ in range(_MAX_REF_HOPS):
            if not isinstance(schema, dict):
                return None
            s = cast(dict[str, Any], schema)
            ref = s.get("$ref")
            if not isinstance(ref, str) or len(s) != 1:
                break
            schema = self.schemas.defs.get(ref.removeprefix("#/$defs/"))
        if not isinstance(schema, dict):
            return None
        s = cast(dict[str, Any], schema)
        composite = {"$ref", "allOf", "anyOf", "oneOf", "not", "if", "patternProperties", "dependentSchemas"}
        if s.get("type", "object") != "object" or composite & set(s):
            return None
        if s.get("additionalProperties", False) not in (False, {}) and s.get("additionalProperties") is not None:
            return None
        props = s.get("properties")
        if not isinstance(props, dict) or not props or len(cast(dict[str, Any], props)) > _MAX_FLAT_FIELDS:
            return None
        return s

    def _flat_fields(
        self, schema: Any, media: str, taken: Mapping[str, Any]
    ) -> tuple[dict[str, Any], list[str]] | None:
        obj = self._object_of(schema)
        if obj is None:
            return None
        fields = cast(dict[str, Any], obj["properties"])
        if any(name in taken for name in fields):
            return None
        req = obj.get("required")
        names = [n for n in cast(list[Any], req) if isinstance(n, str)] if isinstance(req, list) else []
        return dict(fields), names

    def _deps_of_fields(self, schema: Any) -> set[str]:
        # Flattening inlines the body's definition: its dependencies become the tool's.
        out: set[str] = set()
        for _ in range(_MAX_REF_HOPS):
            if not (isinstance(schema, dict) and isinstance(ref := cast(dict[str, Any], schema).get("$ref"), str)):
                break
            name = ref.removeprefix("#/$defs/")
            out |= self.schemas.deps.get(name, frozenset())
            schema = self.schemas.defs.get(name)
        return out

    def _output(self, op: dict[str, Any], resolver: Resolver[Any]) -> tuple[Any, set[str], str | None]:
        responses = op.get("responses")
        if not isinstance(responses, dict):
            return None, set(), None
        codes = [c for c in cast(dict[str, Any], responses) if _SUCCESS.fullmatch(c)]
        codes.sort(key=lambda c: (c.upper() == "2XX", c))
        for code in codes:
            response, r_resolver = self.deref(cast(dict[str, Any], responses)[code], resolver)
            if not isinstance(response, dict):
                continue
            content = cast(dict[str, Any], response).get("content")
            if not isinstance(content, dict) or not content:
                continue
            media = min(cast(dict[str, Any], content), key=_media_rank)
            entry = cast(dict[str, Any], content)[media]
            if not _is_json(media) or not isinstance(entry, dict) or "schema" not in entry:
                return None, set(), media
            schema, deps = self.schemas.convert(cast(dict[str, Any], entry)["schema"], r_resolver)
            return schema, deps, media
        return None, set(), None


def _merged(schema: Any, extra: dict[str, Any]) -> Any:
    return {**cast(dict[str, Any], schema), **extra} if isinstance(schema, dict) else schema


def _is_ref(schema: Any) -> bool:
    return isinstance(schema, dict) and "$ref" in schema


def _annotations(method: str, op: dict[str, Any]) -> dict[str, Any]:
    safe = method in ("get", "head", "options", "trace")
    out: dict[str, Any] = {"readOnlyHint": safe, "openWorldHint": True}
    if not safe:
        out["destructiveHint"] = method == "delete"
        out["idempotentHint"] = method in ("put", "delete")
    if isinstance(summary := op.get("summary"), str) and summary.strip():
        out["title"] = summary.strip()[:200]
    return out


def build_tools(
    doc: dict[str, Any],
    *,
    server: str,
    include: Sequence[str] = (),
    tags: Sequence[str] = (),
    output_schemas: bool = True,
    on_skip: Callable[[str, str], None] | None = None,
    supplied: Collection[tuple[str, str]] = (),
) -> BuiltTools:
    """Turn every operation of an OpenAPI 3.0/3.1 document into a tool.

    Args:
        doc: The document, as plain JSON values.
        server: The server's name, for errors.
        include: Globs over tool names (and ``operationId`` s); only matching operations
            become tools (default: all).
        tags: Only operations with one of these tags become tools (default: all).
        output_schemas: Whether tools declare the success response's schema as output schema.
        on_skip: Called with ``METHOD /path`` and the reason for each skipped operation.
        supplied: Parameters the caller sends with every call, as ``(location, name)``
            (``("header", "X-API-Key")``, ``("query", "api_key")``, ``("cookie", "session")``),
            compared as :func:`wire_key` does: they are not arguments.

    Returns:
        The tools, the operations behind them, and what was skipped.

    Raises:
        ConfigError: If the document is not OpenAPI 3.0/3.1, has no ``paths`` object, has more than
            :data:`MAX_OPERATIONS` operations after ``include`` and ``tags``, or the ``openapi``
            extra is missing.
    """
    builder = _Builder(doc, server, supplied)
    paths = doc.get("paths", {})
    if not isinstance(paths, dict):
        raise ConfigError(server, "openapi", "the document's 'paths' is not an object")
    with collector_paused(len(cast(dict[str, Any], paths)) >= LARGE_DOCUMENT_PATHS):
        return _build(builder, cast(dict[str, Any], paths), include, tags, output_schemas, on_skip, server)


def _build(
    builder: _Builder,
    paths: dict[str, Any],
    include: Sequence[str],
    tags: Sequence[str],
    output_schemas: bool,
    on_skip: Callable[[str, str], None] | None,
    server: str,
) -> BuiltTools:
    built = BuiltTools()
    chosen = 0
    taken: set[str] = set()
    wanted_tags = {t.strip().lower() for t in tags}
    for path, raw_item in paths.items():
        try:
            # A call's URL is this template with its segments filled (checked on every call).
            if (problem := template_problem(path)) is not None:
                raise Skip(problem)
            item, resolver = builder.deref(raw_item, builder.resolver)
        except Skip as e:
            built.skipped[path] = str(e)
            if on_skip is not None:
                on_skip(path, str(e))
            continue
        if not isinstance(item, dict):
            continue
        for method in METHODS:
            op = cast(dict[str, Any], item).get(method)
            if not isinstance(op, dict):
                continue
            built.total += 1
            o = cast(dict[str, Any], op)
            op_id = o.get("operationId") if isinstance(o.get("operationId"), str) else None
            where = f"{method.upper()} {path}"
            if wanted_tags:
                op_tags = o.get("tags")
                names = (
                    [t.strip().lower() for t in cast(list[Any], op_tags) if isinstance(t, str)]
                    if isinstance(op_tags, list)
                    else []
                )
                if not wanted_tags & set(names):
                    continue
            base = tool_name(op_id, method, path)
            if include and not any(
                fnmatch.fnmatchcase(base, g) or (op_id and fnmatch.fnmatchcase(op_id, g)) for g in include
            ):
                continue
            chosen += 1
            if chosen > MAX_OPERATIONS:
                raise ConfigError(
                    server,
                    "openapi",
                    f"the document has more than {MAX_OPERATIONS:,} operations (after 'include' and 'tags'): "
                    "choose the ones to use with 'include' or 'tags'",
                )
            name = unique_name(base, taken)
            try:
                tool, operation = builder.operation(name, method, path, cast(dict[str, Any], item), o, resolver)
            except Skip as e:
                built.skipped[where] = str(e)
                if on_skip is not None:
                    on_skip(where, str(e))
                continue
            if not output_schemas:
                tool.pop("outputSchema", None)
            taken.add(name)
            built.tools.append(tool)
            built.operations[name] = operation
    built.notes = builder.notes
    return built
