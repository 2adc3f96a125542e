"""The ``toolcode`` section of the config file: server-wide defaults next to ``mcpServers``.

Every key is optional; an unknown key is an error that names it. ``${VAR}`` expansion applies
as in ``mcpServers``. :data:`SETTINGS_SCHEMA` is the section's JSON Schema; docs/configuration.md
publishes it, with an example.
"""

from __future__ import annotations

import fnmatch
import json
import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from toolcode._data import as_dict, as_list, as_mapping
from toolcode._options import LIMIT_FIELDS, UNLIMITED, ExecuteOptions
from toolcode.exceptions import ConfigurationError, clip
from toolindex import DEFAULT_WEAK_RELEVANCE, InMemoryIndex, SemanticUnavailableError
from toolrun._config import expand_vars
from toolrun.exceptions import ConfigError

__all__ = [
    "DEFAULT_TOOLS",
    "META_TOOLS",
    "SETTINGS_SCHEMA",
    "AuditSettings",
    "ConsoleSettings",
    "Decision",
    "PolicyRule",
    "PolicySettings",
    "ResultSettings",
    "SearchSettings",
    "SessionSettings",
    "Settings",
    "SnippetSettings",
    "StateSettings",
    "Tier",
    "WorkerSettings",
    "load_settings",
    "read_config",
]

META_TOOLS: Final[tuple[str, ...]] = tuple(
    json.loads(resources.files("toolcode").joinpath("_metatools.json").read_bytes())["tools"]
)
"""Every code-mode tool the MCP server can offer: the tools ``_metatools.json`` defines, in its order."""

DEFAULT_TOOLS: Final = ("search_tools", "describe_tool", "execute_code", "resume_execution")
"""The tools ``toolcode serve`` lists unless ``toolcode.tools`` says otherwise (kept few: each
definition is paid for in a model's context on every turn). ``list_tools()`` and ``run_tool()``
are one call away in code."""


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


Tier = Literal["read", "write", "destructive"]
"""How much a tool can change: from its MCP annotations, unless ``policy.tiers`` names it."""
Decision = Literal["allow", "ask", "deny"]
"""What the policy says about a call."""


class PolicyRule(_Section):
    """One rule: which calls it matches (every field given must match) and the decision."""

    decision: Decision = Field(description="allow, ask or deny.")
    tier: Tier | None = Field(default=None, description="Match tools of this tier.")
    namespace: str | None = Field(default=None, description="Match tools of this namespace (a glob).")
    tools: str | None = Field(default=None, description="Match tool ids by this glob (e.g. 'github:delete_*').")

    @model_validator(mode="after")
    def _matches_something(self) -> PolicyRule:
        if self.tier is None and self.namespace is None and self.tools is None:
            raise ValueError("a rule needs at least one of tier, namespace, tools")
        return self

    def matches(self, tool_id: str, namespace: str, tier: Tier) -> bool:
        """Whether this rule applies to a call of ``tool_id``."""
        return (
            (self.tier is None or self.tier == tier)
            and (self.namespace is None or fnmatch.fnmatchcase(namespace, self.namespace))
            and (self.tools is None or fnmatch.fnmatchcase(tool_id, self.tools))
        )

    def describe(self) -> str:
        """The rule as a short phrase, for messages (``"rule tools='fs:*' → ask"``)."""
        parts = [f"{k}={v!r}" for k, v in (("tier", self.tier), ("namespace", self.namespace), ("tools", self.tools))]
        return f"rule {' '.join(p for p in parts if not p.endswith('=None'))} → {self.decision}"


class AuditSettings(_Section):
    """What the audit log keeps of each call made from code."""

    enabled: bool = Field(default=True, description="Append every call and decision to the state store's audit log.")
    args: bool = Field(
        default=False, description="Keep each call's arguments (clipped to 2,000 characters; may hold personal data)."
    )
    results: bool = Field(default=False, description="Keep each call's result (clipped to 2,000 characters).")
    required: bool = Field(
        default=False,
        description="Fail closed: refuse every call while the audit log cannot be written (state_unavailable); "
        "off: calls go on and a failed write is logged.",
    )


class PolicySettings(_Section):
    """The ``policy`` section: tiers, rules, approvals and the audit log."""

    preset: Literal["default", "ask-writes", "read-only", "allow-all"] = Field(
        default="default",
        description="Decision per tier when no rule matches. default: destructive asks; ask-writes: write and "
        "destructive ask; read-only: write and destructive are denied; allow-all: nothing asks.",
    )
    tiers: dict[str, Tier] = Field(
        default_factory=dict[str, Tier],
        description="Tool-id glob → tier, over the tools' own annotations (first matching glob wins).",
    )
    rules: tuple[PolicyRule, ...] = Field(default=(), description="Checked in order; the first that matches decides.")
    speculate: dict[str, bool] = Field(
        default_factory=dict[str, bool],
        description="Tool-id glob → whether calls of these read tools may start before the code reaches them "
        "(first matching glob wins; default true for read tools allowed without a question; never for others). "
        "A server entry's \"speculate\": false adds '<server>:*' → false.",
    )
    quarantine: bool = Field(
        default=False,
        description="A tool seen for the first time, or whose definition changed, is not callable until approved.",
    )
    pause_ttl: float = Field(
        default=86_400.0, gt=0, allow_inf_nan=False, description="Seconds a paused run waits for its decision."
    )
    ask_timeout: float = Field(
        default=600.0,
        gt=0,
        allow_inf_nan=False,
        description="Seconds a question asked within a request (MCP elicitation) waits for the person's answer; "
        "unanswered, the run stays paused and the request answers with it (resume_execution decides it later).",
    )
    max_paused_bytes: int = Field(
        default=16 * 1024 * 1024,
        ge=1024,
        description="Largest paused run kept (its interpreter snapshot, trace and output), in bytes; a run "
        "that would keep more ends with memory_limit instead of pausing.",
    )
    max_paused_runs: int = Field(
        default=100,
        ge=1,
        description="Paused runs one caller may have waiting at once (more: quota_exceeded); also the outcomes of its "
        "decided runs kept for a later resume of the same id (its newest ones).",
    )
    operators: tuple[str, ...] = Field(
        default=("local",),
        description="Callers who may approve quarantined tools, publish shared snippets, and see and decide "
        "other callers' paused runs: 'local' is the local user (stdio, loopback HTTP without tokens), "
        "'token:NAME' the caller of a bearer token, 'user:NAME' a host's user at an agent door.",
    )
    audit: AuditSettings = Field(default_factory=AuditSettings)


class WorkerSettings(_Section):
    """The sandbox worker pool (the default engine's): size, admission per caller, and memory per run."""

    min: int | None = Field(default=None, ge=1, le=256, description="Workers kept warm (default 1).")
    max: int | None = Field(
        default=None, ge=1, le=1024, description="Most runs at once (default: 2 x CPU count, 8 to 32)."
    )
    per_caller: int | None = Field(
        default=None, ge=1, le=1024, description="Most runs at once for one caller (default: half of max)."
    )
    queue_timeout: float | None = Field(
        default=None, ge=0, allow_inf_nan=False, description="Seconds a run waits for a free slot (default 10)."
    )
    nice: int | None = Field(
        default=None, ge=0, le=19, description="How much lower the workers' CPU priority is (default 10)."
    )
    max_memory: int | None = Field(
        default=None, ge=1024 * 1024, description="Heap limit per run, in bytes (default 134217728: 128 MiB)."
    )

    def engine_kwargs(self) -> dict[str, Any]:
        """The ``MontyEngine`` arguments these settings set."""
        names = {
            "min": "min_processes",
            "max": "max_processes",
            "per_caller": "max_runs_per_caller",
            "queue_timeout": "queue_timeout",
            "nice": "worker_nice",
            "max_memory": "max_memory",
        }
        return {names[k]: v for k, v in self.model_dump(exclude_none=True).items()}


class StateSettings(_Section):
    """Where sessions, saved snippets and learned result shapes live (see :mod:`toolcode.state`)."""

    dir: str | None = Field(
        default=None, description="Folder of the SQLite state file (default: the user state directory)."
    )
    url: str | None = Field(
        default=None, description="redis://host:port/db: a store shared by several replicas (wins over dir)."
    )
    memory: bool = Field(default=False, description="Keep state in this process only (nothing on disk).")


class SessionSettings(_Section):
    """Limits of sessions (``execute_code(session=...)``)."""

    max_sessions: int = Field(default=20, ge=0, description="Sessions per caller (0: no limit).")
    idle_ttl: float = Field(
        default=86_400.0, ge=0, allow_inf_nan=False, description="Seconds a session lives unused (0: forever)."
    )
    max_bytes: int = Field(default=16 * 1024 * 1024, ge=1024, description="Largest state a session may keep, in bytes.")
    queue_timeout: float = Field(
        default=30.0, ge=0, allow_inf_nan=False, description="Seconds a run waits while another run holds its session."
    )


class SnippetSettings(_Section):
    """Saved snippets (``save_snippet``)."""

    max_per_caller: int = Field(
        default=100, ge=0, description="Saved snippets one caller may keep (0: no limit; more: quota_exceeded)."
    )


class ResultSettings(_Section):
    """Stored results (``toolcode.results``): what did not fit the output budget."""

    enabled: bool = Field(default=True, description="Keep what the output budget cut, to be read back by reference.")
    ttl: float = Field(default=3_600.0, gt=0, allow_inf_nan=False, description="Seconds a stored result is kept.")
    max_chars: int = Field(
        default=4 * 1024 * 1024, ge=1024, le=64 * 1024 * 1024, description="Largest content kept, in characters."
    )
    max_per_caller: int = Field(
        default=100, ge=1, description="Stored results one caller keeps at once; beyond it, its oldest are dropped."
    )
    max_bytes_per_caller: int = Field(
        default=64 * 1024 * 1024,
        ge=1024,
        description="Bytes of stored results one caller keeps at once; beyond it, its oldest are dropped.",
    )


class SearchSettings(_Section):
    """Tool search (``toolcode.search``)."""

    semantic: bool | None = Field(
        default=None,
        description=(
            "Fuse dense embeddings with lexical search: true (needs toolindex[semantic]), false, "
            "or unset: on when toolindex[semantic] is installed."
        ),
    )
    weak_relevance: float = Field(
        default=DEFAULT_WEAK_RELEVANCE,
        ge=0,
        le=1,
        description="With semantic search: search_tools marks a hit below this relevance as a weak match "
        "(it is still returned; 0: mark none).",
    )

    @model_validator(mode="before")
    @classmethod
    def _retired(cls, data: object) -> object:
        if "min_relevance" in (as_mapping(data) or {}):
            raise ValueError(
                "min_relevance is retired: search no longer answers nothing for weak matches, it marks them; "
                "use weak_relevance"
            )
        return data

    def build_index(self) -> InMemoryIndex:
        """The index these settings ask for.

        Raises:
            ConfigurationError: If ``semantic`` is true and ``toolindex[semantic]`` is not installed.
        """
        if self.semantic is False:
            return InMemoryIndex()
        try:
            return InMemoryIndex(semantic=True, weak_relevance=self.weak_relevance or None)
        except SemanticUnavailableError as e:
            if self.semantic:
                raise ConfigurationError("toolcode.search.semantic", str(e)) from e
            return InMemoryIndex()


class ConsoleSettings(_Section):
    """The browser console of ``toolcode serve --http`` (``toolcode.console``, docs/console.md)."""

    enabled: bool = Field(default=False, description="Serve the console under /console (same port, same tokens).")
    url: str | None = Field(
        default=None,
        pattern=r"^https?://[^\s/?#]+(/[^\s?#]*)?$",
        description="The server's address as people open it (e.g. https://tools.example.com): paused runs then "
        "carry an absolute link to their page; unset: a path on the serving host (/console/runs/ID).",
    )
    session_ttl: float = Field(default=28_800.0, gt=0, allow_inf_nan=False, description="Seconds a sign-in lasts.")
    max_streams: int = Field(
        default=4,
        ge=1,
        le=1_000,
        description="Live lists (event streams) one signed-in caller may hold open at once; one more is refused "
        "(429) until one closes.",
    )
    max_signins: int = Field(
        default=100,
        ge=1,
        le=100_000,
        description="Sign-ins one token name keeps in the state store at once; one more ends that name's oldest.",
    )

    def link(self, execution_id: str) -> str | None:
        """The console page of a paused run (``None`` when the console is off)."""
        return f"{(self.url or '').rstrip('/')}/console/runs/{execution_id}" if self.enabled else None


DEFAULT_CEILINGS: Final = ExecuteOptions(
    timeout=300.0, max_tool_calls=10_000, max_chain_steps=1_000, max_output_chars=1_000_000
)
"""What a door's clients may ask for at most unless the config says otherwise: each a finite bound, so that
no caller holds a worker, or the server's memory, without end."""


class Settings(_Section):
    """Server-wide defaults: the ``toolcode`` section of the config file."""

    limits: ExecuteOptions = Field(
        default_factory=ExecuteOptions,
        description="Options of every run that sets none: limits (0 or null: no limit), allowed_namespaces, trace.",
    )
    max_limits: ExecuteOptions | None = Field(
        default_factory=lambda: DEFAULT_CEILINGS,
        json_schema_extra={"default": DEFAULT_CEILINGS.model_dump(mode="json", exclude_none=True)},
        description=(
            "The highest limits a client of a door may ask for; a field left out keeps its default ceiling "
            "(300 s, 10,000 calls, 1,000 chain steps, 1,000,000 characters), 0 lets clients ask for no limit, "
            "null lifts every ceiling."
        ),
    )
    strict: bool = Field(
        default=False,
        description="Fail start-up when a configured server cannot start (default: report it, skip it, go on).",
    )
    call_timeout: float = Field(
        default=60.0, gt=0, allow_inf_nan=False, description="Seconds a direct run_tool/run_chain call may take."
    )
    tools: tuple[str, ...] | None = Field(
        default=None, description="Code-mode tools the MCP server lists (default: the five core ones; '*': all)."
    )
    expose: tuple[str, ...] = Field(
        default=(), description="Upstream tools to publish directly as well ('namespace:name' globs)."
    )
    exclude: tuple[str, ...] = Field(
        default=(), description="Upstream tools hidden from every door ('namespace:name' globs)."
    )
    engine: str | None = Field(default=None, description="Engine name (an entry point of toolcode.engines).")
    workers: WorkerSettings = Field(default_factory=WorkerSettings)
    state: StateSettings = Field(default_factory=StateSettings)
    sessions: SessionSettings = Field(default_factory=SessionSettings)
    snippets: SnippetSettings = Field(default_factory=SnippetSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    results: ResultSettings = Field(
        default_factory=ResultSettings,
        description="What the output budget cuts from a value, stdout or a direct call's result is kept, by reference.",
    )
    policy: PolicySettings = Field(
        default_factory=PolicySettings,
        description="Tiers, allow/ask/deny rules, quarantine and the audit log of tool calls made from code.",
    )
    console: ConsoleSettings = Field(default_factory=ConsoleSettings)

    @field_validator("max_limits", mode="after")
    @classmethod
    def _ceilings_left_out_keep_their_default(cls, ceilings: ExecuteOptions | None) -> ExecuteOptions | None:
        if ceilings is None:
            return None
        kept = {f: getattr(DEFAULT_CEILINGS, f) for f in LIMIT_FIELDS if getattr(ceilings, f) is None}
        return ceilings.model_copy(update=kept) if kept else ceilings

    def ceilings(self) -> ExecuteOptions | None:
        """The highest limits a door's client may ask for (``None``: no ceiling).

        When the config leaves ``max_limits`` out, each default ceiling is raised to the config's own
        ``limits`` where that is higher (or off): a client may always ask for what runs get unasked.
        """
        cap = self.max_limits
        if cap is None or "max_limits" in self.model_fields_set:
            return cap
        raised: dict[str, Any] = {}
        for name in LIMIT_FIELDS:
            own, most = getattr(self.limits, name), getattr(cap, name)
            if own is not None and (own == UNLIMITED or most is None or own > most):
                raised[name] = own
        return cap.model_copy(update=raised) if raised else cap

    def meta_tools(self) -> tuple[str, ...]:
        """The code-mode tools to list, in :data:`META_TOOLS` order.

        Raises:
            ConfigurationError: If a name is not a code-mode tool.
        """
        if self.tools is None:
            return DEFAULT_TOOLS
        if "*" in self.tools:
            return META_TOOLS
        unknown = [t for t in self.tools if t not in META_TOOLS]
        if unknown:
            raise ConfigurationError(
                "toolcode.tools", f"unknown tool {clip(unknown[0])!r}; choose from {', '.join(META_TOOLS)}"
            )
        return tuple(t for t in META_TOOLS if t in self.tools)

    def excluded(self, tool_id: str) -> bool:
        """Whether ``tool_id`` (``namespace:name``) matches an ``exclude`` glob."""
        return any(fnmatch.fnmatchcase(tool_id, pat) for pat in self.exclude)


SETTINGS_SCHEMA: Final[dict[str, Any]] = Settings.model_json_schema()
"""JSON Schema of the ``toolcode`` section."""


def _expand(data: Any, env: Mapping[str, str], path: str) -> Any:
    if isinstance(data, str):
        try:
            return expand_vars(data, env)
        except ConfigError as e:
            raise ConfigurationError(path, e.reason) from None
    if (items := as_list(data)) is not None:
        return [_expand(v, env, f"{path}[{i}]") for i, v in enumerate(items)]
    if (d := as_dict(data)) is not None:
        return {k: _expand(v, env, f"{path}.{k}") for k, v in d.items()}
    return data


def read_config(source: str | os.PathLike[str] | Mapping[str, Any]) -> Mapping[str, Any]:
    """The config file's JSON object (a mapping is taken as it is).

    Raises:
        ConfigurationError: If the file cannot be read, is not UTF-8 JSON, or is not an object.
    """
    if isinstance(source, Mapping):
        return source
    path = Path(source)
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigurationError("config", f"cannot read {clip(str(path))!r}: {e.strerror or e}") from e
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigurationError("config", f"{clip(str(path))!r} is not valid UTF-8 JSON: {clip(str(e))}") from e
    if (config := as_mapping(data)) is None:
        raise ConfigurationError("config", f"must be a JSON object, got {type(data).__name__}")
    return config


def load_settings(
    source: str | os.PathLike[str] | Mapping[str, Any] | None, *, env: Mapping[str, str] | None = None
) -> Settings:
    """Read the ``toolcode`` section of a config file (or mapping).

    Args:
        source: The config file, its parsed content, or ``None`` (defaults).
        env: Variables for ``${VAR}`` expansion (default: ``os.environ``).

    Returns:
        The settings (all defaults when the section is absent).

    Raises:
        ConfigurationError: If the file cannot be read or the section is invalid; names the
            key (e.g. ``toolcode.limits.timeout``) and never echoes a value.
    """
    section = read_config(source).get("toolcode") if source is not None else None
    if section is None:
        return Settings()
    if (values := as_mapping(section)) is None:
        raise ConfigurationError("toolcode", f"must be an object, got {type(section).__name__}")
    expanded = _expand(dict(values), os.environ if env is None else env, "toolcode")
    try:
        return Settings.model_validate(expanded)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            raise ConfigurationError(f"toolcode.{where}", "unknown key") from None
        raise ConfigurationError(f"toolcode.{where}", clip(err["msg"].removeprefix("Value error, "))) from None
