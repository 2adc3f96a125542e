"""The policy: every tool call gets a tier and a decision before it is made.

A tool's **tier** is ``read``, ``write`` or ``destructive``: from its MCP annotations
(``readOnlyHint`` → read, ``destructiveHint`` → destructive, anything else → write), unless a
``tiers`` glob of the config names it. **Rules** map tiers, namespaces or tool-id globs to a
**decision**: ``allow``, ``ask`` or ``deny`` (the first rule that matches wins; then the preset).
The default preset allows ``read`` and ``write`` and asks for ``destructive``. A quarantined tool
(new, or changed since it was approved) is refused whatever the rules say.

A saved snippet (``snippets:<name>``) is judged by what it calls: its tier is the highest tier of
the tools its code names literally (``write`` when it names a tool id it computes), and its
decision the strictest of its own and theirs, so a snippet never launders a write.

An approval names exactly what the person saw: each verdict carries a **digest** (a tool's
definition; a snippet's code and the definitions of every tool it names), and a decision binds it.
A changed definition, or a snippet saved anew, has another digest: the approval no longer covers it,
and the person is asked again. A snippet's run goes on only with the code that was judged, and the
tools it names are approved with it only as they were defined when it was judged; a snippet it
names runs, inside its run, only with what that approval listed (what both name). A verdict made
before its call (a plan's, a saved snippet's) is compared with the definition when the call is
made (:meth:`Checkpoint.stands`): a changed one is judged again. Every call carries what the gate
judged, and is made only while that verdict stands (:meth:`Checkpoint.as_judged`, right before the
call): whatever it waited for after the gate, it is never made on a definition nobody judged.

One :class:`Checkpoint` per run (or door call) holds the run's approvals and applies the policy;
the gate layer (:mod:`toolcode.calls._gate`) puts it in front of every call. ``deny`` raises a
catchable :class:`~toolcode.exceptions.ToolError` with code ``not_allowed``; ``ask`` raises
:class:`ApprovalNeeded`, which the gate hands to a person, or turns into a pause.
"""

from __future__ import annotations

import ast
import fnmatch
import hashlib
import json
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Final, cast, get_args

from toolcode._audit import AuditTrail, tool_hash
from toolcode._data import as_mapping
from toolcode._module_views import ModulesView, ToolModules
from toolcode._modules import ASYNC_SUFFIX, PACKAGE
from toolcode._settings import Decision, PolicySettings, Tier
from toolcode._view import CatalogView
from toolcode.exceptions import ErrorCode, ToolError
from toolindex import Tool, ToolIndexError

__all__ = [
    "MAX_SNIPPET_CODE",
    "PRESETS",
    "ApprovalNeeded",
    "Approvals",
    "Asker",
    "Checkpoint",
    "Judged",
    "NotAsJudged",
    "PendingCall",
    "Policy",
    "Verdict",
    "call_key",
    "check_judged",
    "decider",
    "literal_tool_ids",
    "snippet_code",
]

TIERS: Final[tuple[Tier, ...]] = get_args(Tier)
DECISIONS: Final[tuple[Decision, ...]] = get_args(Decision)
_TIER_RANK: Final = {t: i for i, t in enumerate(TIERS)}
_DECISION_RANK: Final = {d: i for i, d in enumerate(DECISIONS)}

PRESETS: Final[dict[str, dict[Tier, Decision]]] = {
    "default": {"read": "allow", "write": "allow", "destructive": "ask"},
    "ask-writes": {"read": "allow", "write": "ask", "destructive": "ask"},
    "read-only": {"read": "allow", "write": "deny", "destructive": "deny"},
    "allow-all": {"read": "allow", "write": "allow", "destructive": "allow"},
}
"""What each tier gets when no rule matches (``policy.preset``)."""

SNIPPETS_NAMESPACE: Final = "snippets"
_SNIPPETS_PREFIX: Final = SNIPPETS_NAMESPACE + ":"
_MAX_NESTING: Final = 16
"""Snippets named through more snippets than this are judged when called, not with the first."""


# -- tiers and verdicts ----------------------------------------------------------------------


def tier_of_annotations(annotations: Mapping[str, Any] | None) -> Tier:
    """``read`` for ``readOnlyHint: true``, ``destructive`` for ``destructiveHint: true``, else ``write``."""
    if not annotations:
        return "write"
    if annotations.get("readOnlyHint") is True:
        return "read"
    if annotations.get("destructiveHint") is True:
        return "destructive"
    return "write"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the policy says about calls of one tool."""

    tool_id: str
    tier: Tier
    decision: Decision
    reason: str
    """Which rule or preset decided, in words."""
    calls: tuple[tuple[str, str], ...] = ()
    """For a saved snippet: the tools its code names, and those the snippets it names name (approved with
    it), each with what its approval binds: a tool's definition digest, a snippet's code digest."""
    digest: str = ""
    """What an approval of this verdict binds: the tool's definition; for a saved snippet, its code
    and the definitions of the tools it names."""
    code_digest: str = ""
    """For a saved snippet: the digest of the code that was judged (only that code runs under it)."""
    snippets: tuple[tuple[str, str], ...] = ()
    """For a saved snippet: itself and the snippets it names (through others too), with the digest
    of the code judged for each (only that code runs under this verdict, however deep)."""
    code: tuple[tuple[str, str], ...] = ()
    """For a saved snippet: the code judged of each of :attr:`snippets`, by its digest (the texts of
    those digests), which a person asked about it is shown."""


Judged = tuple[int | None, Verdict | None]
"""What the gate said of a call: the catalog's version then (``None``: an index that counts none) and the
verdict (``None``: no visible tool had the id; the call itself reports it)."""


class NotAsJudged(ToolError):
    """A call not made: its tool changed (or was quarantined) after the call was judged (``not_allowed``)."""


def literal_tool_ids(code: str, modules: ModulesView | None, known: Callable[[str], bool]) -> tuple[list[str], bool]:
    """The tool ids a snippet names literally, and whether it may call tools it computes.

    Literal ids are string constants that are known tool ids, and namespace-module functions
    (``from tools import fs`` then ``fs.write_file``; ``tools.fs.write_file``; ``from tools.fs
    import write_file``; ``import tools.fs as f`` then ``f.write_file``). ``dynamic`` is ``True``
    when the code calls ``run_tool``/``run_tools``/``run_chain`` (or their awaitable forms) with
    anything but literals, uses one of them otherwise than by calling it (``f = run_tool``: its
    calls are out of sight), uses a namespace module or the ``tools`` package otherwise than by
    naming a function of it (``getattr(fs, name)``), or does not parse.

    Returns:
        ``(ids in first-seen order, dynamic)``.
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return [], True
    found: dict[str, None] = {}
    dynamic = False
    aliases: dict[str, str] = {}  # local name → namespace
    packages: set[str] = set()  # names the snippet binds to the tools package
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and known(node.value):
            found[node.value] = None
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and modules is not None:
            head, _, rest = (node.module or "").partition(".")
            if head != PACKAGE:
                continue
            if not rest:  # from tools import fs
                for a in node.names:
                    if (ns := modules.namespace_of(a.name)) is not None:
                        aliases[a.asname or a.name] = ns
            elif (ns := modules.namespace_of(rest)) is not None:  # from tools.fs import write_file
                functions = modules.functions(ns)
                for a in node.names:
                    if (fn := functions.get(a.name)) is not None:
                        found[fn.tool_id] = None
                    elif a.name == "*":
                        found.update(dict.fromkeys(f.tool_id for f in functions.values()))
        elif isinstance(node, ast.Import):
            for a in node.names:
                head, _, rest = a.name.partition(".")
                if head != PACKAGE:
                    continue
                if a.asname is None or not rest:  # ``import tools.fs`` binds ``tools``
                    packages.add(a.asname or PACKAGE)
                elif modules is not None and (ns := modules.namespace_of(rest)) is not None:
                    aliases[a.asname] = ns
    for node in ast.walk(tree):
        if not isinstance(node, ast.Name) or not isinstance(node.ctx, ast.Load):
            continue
        parent = parents.get(node)
        if node.id in _RUNNERS:
            if not (isinstance(parent, ast.Call) and parent.func is node) or not _all_literal(
                parent.args[0] if parent.args else None
            ):
                dynamic = True
        elif modules is not None and (node.id in aliases or node.id in packages or node.id == PACKAGE):
            # Only ``fs.name`` (``tools.fs.name``) names a function: any other use may reach any of them.
            ns = aliases.get(node.id)
            if ns is None and isinstance(parent, ast.Attribute):
                ns = modules.namespace_of(parent.attr)
                parent = parents.get(parent)
            if ns is None or not isinstance(parent, ast.Attribute):
                dynamic = dynamic or node.id in aliases or node.id in packages
                continue
            fn = modules.functions(ns).get(parent.attr)
            if fn is not None:
                found[fn.tool_id] = None
    return list(found), dynamic


_RUNNERS: Final = frozenset(
    name + suffix for name in ("run_tool", "run_tools", "run_chain") for suffix in ("", ASYNC_SUFFIX)
)
"""The globals that call tools by their ids."""


def _all_literal(node: ast.expr | None) -> bool:
    if node is None:
        return True
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.List | ast.Tuple):
        return all(_all_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        # A call or a chain step: its tool id must be a literal; its arguments may be anything.
        for k, v in zip(node.keys, node.values, strict=True):
            if isinstance(k, ast.Constant) and k.value == "tool_id" and not isinstance(v, ast.Constant):
                return False
        return True
    return False


def _known_in(view: CatalogView | None) -> Callable[[str], bool]:
    def known(tool_id: str) -> bool:
        if view is None or ":" not in tool_id or len(tool_id) > 300:
            return False
        try:
            tool = view.index.get(tool_id)
        except ToolIndexError:
            return False
        return view.visible(tool.namespace)

    return known


class Policy:
    """Tiers and decisions for tool calls (stateless; share one per catalog).

    Args:
        settings: The ``policy`` section (``None``: the defaults).
        snippet_code: Returns a saved snippet's code by name (``None`` when there is none),
            so that a snippet is judged by the tools it calls.
        modules: The catalog's namespace modules (to read ``fs.write_file`` in snippet code, as the view
            a verdict is asked in holds them).
        quarantined: Whether a tool is quarantined (``None``: quarantine is off).
    """

    def __init__(
        self,
        settings: PolicySettings | None = None,
        snippet_code: Callable[[str], str | None] | None = None,
        modules: ToolModules | None = None,
        quarantined: Callable[[Tool], bool] | None = None,
    ) -> None:
        self.settings = settings or PolicySettings()
        self.quarantined = quarantined
        self._preset = PRESETS[self.settings.preset]
        self._snippet_code = snippet_code
        self._modules = modules
        self._snippet_cache: dict[tuple[object, ...], tuple[list[str], bool]] = {}
        self._verdicts: dict[str, tuple[Tool, Verdict]] = {}

    def tier(self, tool: Tool) -> Tier:
        """The tool's tier: the first ``tiers`` glob that matches its id, else its annotations."""
        for pattern, tier in self.settings.tiers.items():
            if fnmatch.fnmatchcase(tool.id, pattern):
                return tier
        return tier_of_annotations(tool.annotations)

    def _decide(self, tool_id: str, namespace: str, tier: Tier) -> tuple[Decision, str]:
        for i, rule in enumerate(self.settings.rules):
            if rule.matches(tool_id, namespace, tier):
                return rule.decision, f"{rule.describe()} (policy.rules[{i}])"
        decision = self._preset[tier]
        return decision, f"preset {self.settings.preset!r}: {tier} → {decision}"

    def verdict(self, tool: Tool, view: CatalogView | None = None) -> Verdict:
        """The tier and decision for calls of ``tool`` (a saved snippet: with what it calls)."""
        if tool.namespace == SNIPPETS_NAMESPACE and self._snippet_code is not None:
            code = self._snippet_code(tool.name)
            if code is not None:
                return self._snippet_verdict(tool, code, view, self._snippet_code)
        return self._tool_verdict(tool)

    def _tool_verdict(self, tool: Tool) -> Verdict:
        """A tool's own verdict (not a snippet's), kept while its definition is the same object."""
        hit = self._verdicts.get(tool.id)
        if hit is not None and hit[0] is tool:
            return hit[1]
        tier = self.tier(tool)
        decision, reason = self._decide(tool.id, tool.namespace, tier)
        v = Verdict(tool.id, tier, decision, reason, digest=tool_hash(tool))
        if len(self._verdicts) > 65_536:
            self._verdicts.clear()
        self._verdicts[tool.id] = (tool, v)
        return v

    def _literal_ids(self, code: str, code_digest: str, view: CatalogView | None) -> tuple[list[str], bool]:
        # What a snippet names depends on its code and on the catalog as the view holds it (a literal
        # ``snippets:c`` names a snippet once one is saved): the answer is kept for exactly those.
        # The module functions it names are those of the view it runs in (``None``: the whole catalog).
        index = view.index if view is not None else self._modules.index if self._modules is not None else None
        version = index.version if index is not None else None
        key = (code_digest, version, view.key() if view is not None else None)
        cached = self._snippet_cache.get(key)
        if cached is None:
            modules = None
            if self._modules is not None:
                modules = self._modules.seen_by(view if view is not None else CatalogView(self._modules.index))
            cached = literal_tool_ids(code, modules, _known_in(view))
            if len(self._snippet_cache) > 1024:
                self._snippet_cache.clear()
            self._snippet_cache[key] = cached
        return cached

    def _snippet_verdict(
        self, tool: Tool, code: str, view: CatalogView | None, code_of: Callable[[str], str | None]
    ) -> Verdict:
        """A snippet's verdict: its own, made stricter by each tool it names, through the snippets it names.

        Each snippet reached gets the decision of the rules for its own id (tier ``read``, or
        ``write`` when it computes tool ids); each other tool its verdict. The strictest wins.
        ``code_of`` gives a saved snippet's code by name.
        """
        tier: Tier = "read"
        decision: Decision = "allow"
        reason = ""
        code_digest = _sha(code)
        digest = hashlib.sha256(code_digest.encode())
        calls: dict[str, str] = {}
        snippets: dict[str, str] = {tool.id: code_digest}
        sources: dict[str, str] = {code_digest: code}  # the code of each of ``snippets``, shown to a person
        strict: list[str] = []  # every named tool the person is asked about, listed in the question
        dynamic = False
        todo: list[tuple[Tool, str, str, int]] = [(tool, code, code_digest, 0)]  # depth first, each snippet once
        while todo:
            snippet, text, text_digest, depth = todo.pop()
            ids, computes = self._literal_ids(text, text_digest, view)
            own: Tier = "write" if computes else "read"
            d, why = self._decide(snippet.id, snippet.namespace, own)
            verdicts: list[tuple[str, Tier, Decision, str]] = [(snippet.id, own, d, why)]
            dynamic = dynamic or computes
            for tid in ids:
                if view is None or tid in snippets or tid in calls:
                    continue
                try:
                    inner = view.get(tid)
                except ToolIndexError:
                    continue
                inner_code = code_of(inner.name) if inner.namespace == SNIPPETS_NAMESPACE else None
                if inner_code is None:
                    iv = self._tool_verdict(inner)
                    calls[inner.id] = iv.digest
                    digest.update(f"\n{inner.id}={iv.digest}".encode("utf-8", "surrogatepass"))
                    verdicts.append((inner.id, iv.tier, iv.decision, iv.reason))
                elif depth + 1 < _MAX_NESTING:
                    calls[inner.id] = snippets[inner.id] = inner_digest = _sha(inner_code)
                    sources[inner_digest] = inner_code
                    digest.update(f"\n{inner.id}={inner_digest}".encode())
                    todo.append((inner, inner_code, inner_digest, depth + 1))
                # Deeper: judged when it is called, inside this snippet's run (which cannot stop
                # for a person, so it is refused unless allowed).
            for tid, t, d, why in verdicts:
                if _TIER_RANK[t] > _TIER_RANK[tier]:
                    tier = t
                if d != "allow" and tid != tool.id:
                    strict.append(tid)
                if not reason or _DECISION_RANK[d] > _DECISION_RANK[decision]:
                    decision, reason = d, why
        if strict:
            reason = f"it calls {', '.join(strict)}: {reason}"
        if dynamic and _DECISION_RANK["ask"] > _DECISION_RANK[decision] and tier != "read":
            reason += "; it also computes tool ids, each judged when called"
        return Verdict(
            tool.id,
            tier,
            decision,
            reason,
            tuple(calls.items()),
            digest.hexdigest()[:32],
            code_digest=code_digest,
            snippets=tuple(snippets.items()),
            code=tuple(sources.items()),
        )


# -- a run's approvals --------------------------------------------------------------------------


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def call_key(tool_id: str, args: Mapping[str, Any], digest: str = "") -> str:
    """Identifies one call (tool, arguments and, for an approval, the digest the person saw)."""
    blob = json.dumps(args, sort_keys=True, default=repr, ensure_ascii=False)
    key = tool_id + "#" + _sha(blob)[:24]
    return f"{key}@{digest}" if digest else key


@dataclass(slots=True)
class Approvals:
    """What people decided during one run (kept with the run when it pauses)."""

    tools: dict[str, str] = field(default_factory=dict[str, str])
    """Approved for the rest of the run: tool id → the digest approved (a changed definition is not)."""
    once: list[str] = field(default_factory=list[str])
    """Calls (:func:`call_key` with their digest) approved once."""
    denied: list[str] = field(default_factory=list[str])
    """Calls denied once (the snippet gets ``approval_denied``)."""
    who: str | None = None
    """Who made the last decision."""

    def to_dict(self) -> dict[str, Any]:
        """Plain data."""
        return {"tools": dict(sorted(self.tools.items())), "once": self.once, "denied": self.denied, "who": self.who}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Approvals:
        """Read :meth:`to_dict`'s output back."""
        tools = as_mapping(d.get("tools")) or {}  # a list (an older record): nothing is covered
        return cls(
            {str(k): str(v) for k, v in tools.items()},
            list(cast("list[str]", d.get("once", []))),
            list(cast("list[str]", d.get("denied", []))),
            cast("str | None", d.get("who")),
        )


@dataclass(frozen=True, slots=True)
class PendingCall:
    """A call that waits for a decision."""

    tool_id: str
    args: Mapping[str, Any]
    tier: Tier
    reason: str
    digest: str = ""
    """What approving it binds (:attr:`Verdict.digest`)."""
    snippets: Mapping[str, str] = field(default_factory=dict[str, str])
    """For a saved snippet: each saved snippet approving it covers (itself, then those it names), by
    tool id, with the digest of its code as judged (what ``digest`` binds). The code itself is kept
    once per question, by digest (:func:`snippet_code`), however many calls name it."""
    code: Mapping[str, str] = field(default_factory=dict[str, str], compare=False, repr=False)
    """The code of :attr:`snippets`, by digest, as judged: held here only until the question is
    asked or the run pauses (never written with the call: a paused run keeps each code once)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain data (the code of :attr:`snippets` is not in it: see :func:`snippet_code`)."""
        d = {"tool_id": self.tool_id, "args": dict(self.args), "tier": self.tier, "reason": self.reason}
        return d | {"digest": self.digest, "snippets": dict(self.snippets)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], code: Mapping[str, str] | None = None) -> PendingCall:
        """Read :meth:`to_dict`'s output back; ``code``: the question's code by digest (:func:`snippet_code`)."""
        snippets = {str(k): str(v) for k, v in (as_mapping(d.get("snippets")) or {}).items()}
        return cls(
            str(d["tool_id"]),
            dict(cast("Mapping[str, Any]", d["args"])),
            cast(Tier, d["tier"]),
            str(d["reason"]),
            str(d.get("digest", "")),
            snippets,
            {h: code[h] for h in snippets.values() if h in code} if code else {},
        )


MAX_SNIPPET_CODE: Final = 1_000_000
"""The most characters of saved snippets' code one question keeps (:func:`snippet_code`): the code of
the snippets past it is not kept, and the question says so and offers only *deny* and *abort*."""


def snippet_code(pending: Iterable[PendingCall], most: int = MAX_SNIPPET_CODE) -> dict[str, str]:
    """The code of every saved snippet the ``pending`` calls cover, each once, by digest: what a question shows.

    However many calls name a snippet, its code is here once. In the order the calls name them, as
    long as the total stays within ``most`` characters: from the first that would pass it on, none
    is kept (never a part of one), and a question about them says which are not shown.
    """
    kept: dict[str, str] = {}
    total = 0
    for p in pending:
        for h in p.snippets.values():
            if h in kept or h not in p.code:
                continue
            total += len(p.code[h])
            if total > most:
                return kept
            kept[h] = p.code[h]
    return kept


class ApprovalNeeded(Exception):  # a signal, not an error: the run pauses
    """Raised by :meth:`Gate.check` when calls need a decision; the engine pauses the run there.

    Not a :class:`~toolcode.exceptions.ToolCodeError`: a snippet can never catch it.
    """

    def __init__(self, pending: Sequence[PendingCall]) -> None:
        self.pending = list(pending)
        super().__init__(", ".join(p.tool_id for p in self.pending) + " need approval")


Asker = Callable[[Sequence[PendingCall], "int | None"], Awaitable[tuple[str, str]]]
"""Asks a person about pending calls (and the snippet line, when there is one); returns the
decision (``approve``, ``approve_run``, ``deny`` or ``abort``) and who made it."""


def decider(who: str) -> str:
    """Who decided, as a message names them: ``a person`` for the unnamed one, a named one as recorded.

    >>> decider("person"), decider("person (elicitation)"), decider("person:token:alice")
    ('a person', 'a person (elicitation)', 'person:token:alice')
    """
    return f"a {who}" if who == "person" or who.startswith("person ") else who


# Inside a saved snippet's run: what was approved with it. Each tool its code names (through the
# snippets it names too), with the digest judged then: a tool's definition, a snippet's code.
_scope: ContextVar[Mapping[str, str] | None] = ContextVar("toolcode_policy_scope", default=None)
# The digest of the saved snippet's code that was judged for the call under way.
_judged_code: ContextVar[str | None] = ContextVar("toolcode_judged_code", default=None)


class Checkpoint:
    """One run's (or one door call's) application of the policy, with the run's approvals.

    Args:
        policy: The policy.
        view: The caller's view of the catalog.
        audit: The run's audit trail (decisions are recorded there).
        approvals: The run's decisions so far (a resumed run's).
    """

    __slots__ = ("_allowed", "approvals", "audit", "policy", "view")

    def __init__(
        self, policy: Policy, view: CatalogView, audit: AuditTrail, approvals: Approvals | None = None
    ) -> None:
        self.policy = policy
        self.view = view
        self.audit = audit
        self.approvals = approvals if approvals is not None else Approvals()
        self._allowed: dict[str, Judged] = {}

    def check(self, calls: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[str, Verdict]:
        """Judge calls about to be made together; returns their verdicts (by the id as given) if all may go.

        Raises:
            ToolError: ``not_allowed`` (denied, quarantined, or asked about inside a saved
                snippet's run, which cannot stop for a person) or ``approval_denied`` (a person
                denied it).
            ApprovalNeeded: Some calls need a decision; none of ``calls`` was made.
        """
        version = getattr(self.view.index, "version", None)
        calls = list(calls) if not isinstance(calls, list) else calls
        verdicts: dict[str, Verdict] = {}
        pending: list[PendingCall] = []
        pending_keys: list[str] = []
        scope = _scope.get()
        quarantined = self.policy.quarantined
        seen: dict[str, Tool | None] = {}  # a batch of calls names few tools: each looked up once
        judged: dict[str, Verdict] = {}  # ... and each judged once (a snippet's verdict reads its code)
        for tool_id, args in calls:
            if tool_id in seen:
                tool = seen[tool_id]
            else:
                try:
                    tool = seen[tool_id] = self.view.get(tool_id)
                except (ToolIndexError, ToolError):
                    tool = seen[tool_id] = None
            if tool is None:
                continue  # the call itself reports the unknown (or unavailable) tool
            v = judged.get(tool.id)
            if v is None:
                v = judged[tool.id] = self._not_refused(tool, quarantined)
            if v.decision == "allow":
                verdicts[tool_id] = v
                if version is not None and tool_id == tool.id and tool.namespace != SNIPPETS_NAMESPACE:
                    if len(self._allowed) > 4096:
                        self._allowed.clear()
                    self._allowed[tool_id] = (version, v)
                continue
            key = call_key(tool.id, args)
            if key in self.approvals.denied:
                # The denial was logged when the person made it; refusing the call is not another.
                self.approvals.denied.remove(key)
                raise ToolError(tool.id, "a person denied this call", "not_allowed", code=ErrorCode.APPROVAL_DENIED)
            if self.approvals.tools.get(tool.id) == v.digest or (scope is not None and _covers(scope, v)):
                verdicts[tool_id] = v
                continue
            approved = call_key(tool.id, args, v.digest)
            if approved in self.approvals.once:
                pending_keys.append(approved)
                verdicts[tool_id] = v
                continue
            pending.append(PendingCall(tool.id, dict(args), v.tier, v.reason, v.digest, dict(v.snippets), dict(v.code)))
        if pending:
            if scope is not None:
                first = pending[0]
                if first.tool_id in scope:
                    raise ToolError(
                        first.tool_id,
                        f"needs approval ({first.reason}): its definition changed after the calling snippet was "
                        "approved, and a saved snippet's own run cannot pause for it; nothing was called: call "
                        "the snippet again to be asked about what it names as it is now",
                        "not_allowed",
                        code=ErrorCode.APPROVAL_REQUIRED,
                    )
                raise ToolError(
                    first.tool_id,
                    f"needs approval ({first.reason}), and a saved snippet's own run cannot pause for it: "
                    "approve the calling snippet, or add an allow rule",
                    "not_allowed",
                    code=ErrorCode.NOT_ALLOWED,
                )
            for p in pending:
                self.audit.add(p.tool_id, p.tier, "ask", "policy")
            raise ApprovalNeeded(pending)
        for key in pending_keys:
            self.approvals.once.remove(key)
        return verdicts

    def refuse_outright(self, tool_ids: Iterable[str]) -> None:
        """Refuse now what no decision could let through: a quarantined or denied tool among ``tool_ids``.

        For calls whose arguments are known only as they are made (a chain's fed steps): nobody is
        asked about them here, and :meth:`check` judges each with its arguments then.

        Raises:
            ToolError: ``not_allowed`` for the first quarantined or denied tool.
        """
        quarantined = self.policy.quarantined
        for tool_id in dict.fromkeys(tool_ids):
            try:
                tool = self.view.get(tool_id)
            except (ToolIndexError, ToolError):
                continue  # the call itself reports the unknown (or unavailable) tool
            self._not_refused(tool, quarantined)

    def _not_refused(self, tool: Tool, quarantined: Callable[[Tool], bool] | None) -> Verdict:
        """The tool's verdict, unless it is quarantined or denied (then refused, with an audit entry)."""
        if quarantined is not None and quarantined(tool):
            self.audit.add(tool.id, None, "quarantined", "policy")
            raise ToolError(
                tool.id,
                "quarantined: this tool is new or its definition changed since it was approved; "
                "an operator approves it with `toolcode tools approve`",
                "not_allowed",
                code=ErrorCode.NOT_ALLOWED,
            )
        v = self.policy.verdict(tool, self.view)
        if v.decision == "deny":
            self.audit.add(tool.id, v.tier, "deny", "policy")
            raise ToolError(tool.id, f"the policy denies it ({v.reason})", "not_allowed", code=ErrorCode.NOT_ALLOWED)
        return v

    def allowed(self, tool_id: str) -> Judged | None:
        """How ``tool_id`` was judged "allow" at the catalog's current version (``None``: it was not).

        The common case, on every call of a loop: nothing to judge again (a changed definition
        changes the version).
        """
        hit = self._allowed.get(tool_id)
        return hit if hit is not None and hit[0] == getattr(self.view.index, "version", None) else None

    def judged(self, verdict: Verdict | None) -> Judged:
        """``verdict``, made now (at the catalog's current version)."""
        return getattr(self.view.index, "version", None), verdict

    def as_judged(self, tool_id: str, judged: Judged | None) -> None:
        """Right before a call of ``tool_id`` is made: it goes on only as it was judged.

        The catalog unchanged since (the same version), it does. Else its verdict must still stand
        (:meth:`stands`); judged when no visible tool had the id, the id must still name none.

        Raises:
            NotAsJudged: ``not_allowed``: the call was not judged, or its tool changed (or was
                quarantined) since; nothing was called.
        """
        if judged is not None:
            version, verdict = judged
            if version is not None and version == getattr(self.view.index, "version", None):
                return
            if verdict is not None and self.stands(verdict, tool_id):
                return
            if verdict is None and not self._visible(tool_id):
                return
        raise NotAsJudged(
            tool_id,
            "its definition changed (or it was quarantined) after the call was judged, while it waited to be "
            "made; nothing was called: call it again to have it judged as it is now",
            "not_allowed",
            code=ErrorCode.NOT_ALLOWED,
        )

    def _visible(self, tool_id: str) -> bool:
        try:
            self.view.get(tool_id)
        except (ToolIndexError, ToolError):
            return False
        return True

    def stands(self, verdict: Verdict, tool_id: str) -> bool:
        """Whether a verdict made earlier still holds as its call, of ``tool_id`` as written, is made.

        It does while ``tool_id`` names the tool judged (an id without a version names the latest,
        which may be a newer one since), defined as it was then (a saved snippet: its code and the
        tools it names), and not quarantined. A tool gone since is judged again (its call reports it).
        """
        try:
            tool = self.view.get(tool_id)
        except (ToolIndexError, ToolError):
            return False
        if tool.id != verdict.tool_id:
            return False
        quarantined = self.policy.quarantined
        if quarantined is not None and quarantined(tool):
            return False
        return self.policy.verdict(tool, self.view).digest == verdict.digest

    def approve_once(self, pending: Sequence[PendingCall]) -> None:
        """A person approved these calls, once each."""
        self.approvals.once.extend(call_key(p.tool_id, p.args, p.digest) for p in pending)

    def log_decision(self, pending: Sequence[PendingCall], decision: str, by: str) -> None:
        """Record a person's decision on calls."""
        for p in pending:
            self.audit.add(p.tool_id, p.tier, decision, by)

    def scope(self, tool_id: str, judged: Verdict | None) -> AbstractContextManager[None]:
        """Around a call that passed :meth:`check` (``judged``: its verdict then).

        A saved snippet runs with what it names approved, and only with the code judged: then, or
        with the snippet whose run calls it.
        """
        if not tool_id.startswith(_SNIPPETS_PREFIX):
            return nullcontext()
        if judged is None:  # not judged here: judged now (its code as it is)
            try:
                judged = self.policy.verdict(self.view.get(tool_id), self.view)
            except (ToolIndexError, ToolError):
                return nullcontext()
        return _within(judged, _scope.get())


def _covers(scope: Mapping[str, str], v: Verdict) -> bool:
    """Whether an approved snippet covers a call it names.

    A tool as it was defined when the snippet was judged; a snippet whatever it is now, since only
    the code judged for it runs (:func:`check_judged`).
    """
    judged = scope.get(v.tool_id)
    return judged is not None and (judged == v.digest or bool(v.code_digest))


@contextmanager
def _within(verdict: Verdict, outer: Mapping[str, str] | None) -> Generator[None]:
    """The scope of a saved snippet's run: what its verdict names, as judged.

    Inside another snippet's run (``outer``), what runs under that snippet's approval is only what it
    listed, at the digests listed: the nested snippet's scope is what both name, at the outer digests.
    What the nested snippet names now and the outer approval did not list (a snippet saved since, a
    tool it names anew) is judged on its own when called.
    """
    mine = dict(verdict.calls)
    mine.update(verdict.snippets)
    judged = verdict.code_digest
    if outer is not None:
        judged = outer.get(verdict.tool_id, judged)
        mine = {tool_id: outer[tool_id] for tool_id in mine if tool_id in outer}
    token = _scope.set(mine)
    code = _judged_code.set(judged)
    try:
        yield
    finally:
        _judged_code.reset(code)
        _scope.reset(token)


def check_judged(tool_id: str, code: str) -> None:
    """Before a saved snippet's code runs: it must be the code the gate judged for this call.

    Raises:
        ToolError: ``not_allowed`` if the snippet was saved anew after it was judged (or approved).
    """
    if _judged_code.get() != _sha(code):
        raise ToolError(
            tool_id,
            "this saved snippet changed after it was judged (or approved); call it again to have the new code judged",
            "not_allowed",
            code=ErrorCode.NOT_ALLOWED,
        )
