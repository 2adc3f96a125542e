"""The console's pages, rendered on the server: every value that reaches the HTML goes through :func:`esc`.

Upstream descriptions, tool arguments, snippet code and caller names are hostile text; they are
escaped here and nowhere trusted. The pages carry no inline script or style (the Content-Security-
Policy forbids both): the one script and the one stylesheet are files of this package.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from toolcode._outcome import code_lines, snippets_covered, visible
from toolcode._paused_run import DECISIONS, PausedRun
from toolcode._settings import Settings
from toolcode.calls import MAX_SNIPPET_CODE
from toolcode.console._auth import Viewer
from toolcode.console._views import DECISIONS as AUDIT_DECISIONS
from toolcode.console._views import PAGE, AuditFilter, Change, OwnerState
from toolcode.models import ExecuteOutcome

__all__ = ["audit", "decided", "esc", "message", "quarantine", "run", "runs", "signin", "state", "unlike_text"]

_LABELS = {
    "approve": "Approve this call",
    "approve_run": "Approve for the run",
    "deny": "Deny",
    "abort": "Abort the run",
}
_NAV = (("runs", "Paused runs"), ("quarantine", "Quarantine"), ("audit", "Audit"), ("state", "State"))


def esc(value: object) -> str:
    """``value`` as HTML text (quotes too: safe in attributes), its invisible characters made visible."""
    return html.escape(visible(str(value)), quote=True)


def when(t: float | None) -> str:
    """A Unix time as UTC text."""
    return "—" if t is None else datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _size(n: int) -> str:
    return f"{n:,} B" if n < 10_240 else f"{n / 1024:,.0f} KiB" if n < 10 << 20 else f"{n / 1048576:,.1f} MiB"


def _json(value: Any) -> str:
    return esc(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def _csrf_field(token: str) -> str:
    return f'<input type="hidden" name="csrf" value="{esc(token)}">'


def _csrf(viewer: Viewer) -> str:
    return _csrf_field(viewer.csrf)


def _table(head: Sequence[str], rows: Iterable[str], *, body_attrs: str = "", empty: str = "nothing here") -> str:
    cells = "".join(f"<th>{esc(h)}</th>" for h in head)
    body = "".join(rows) or f'<tr class="empty"><td colspan="{len(head)}">{esc(empty)}</td></tr>'
    return f'<div class="scroll"><table><thead><tr>{cells}</tr></thead><tbody{body_attrs}>{body}</tbody></table></div>'


def _page(title: str, body: str, viewer: Viewer | None, here: str = "") -> str:
    nav = ""
    if viewer is not None:
        links = "".join(
            f'<a href="/console/{p}"{" aria-current=page" if p == here else ""}>{esc(label)}</a>' for p, label in _NAV
        )
        role = "operator" if viewer.operator else "caller"
        nav = (
            f'<nav>{links}<span class="who">{esc(viewer.name)} <small>({role})</small></span>'
            f'<form method="post" action="/console/signout">{_csrf(viewer)}<button class="link">Sign out</button>'
            "</form></nav>"
        )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · toolcode console</title>"
        '<link rel="stylesheet" href="/console/static/console.css">'
        '<link rel="icon" href="/console/static/icon.svg" type="image/svg+xml">'
        '<script src="/console/static/console.js" defer></script></head>'
        f"<body><header><strong>toolcode console</strong>{nav}</header><main><h1>{esc(title)}</h1>{body}</main>"
        "</body></html>"
    )


def signin(pre: str, *, failed: bool, open_door: bool) -> str:
    """The sign-in form (``pre``: the CSRF token of its pre-session cookie)."""
    note = '<p class="error">That token is not accepted here.</p>' if failed else ""
    field = (
        "<p>This server has no tokens: you sign in as the local user.</p>"
        if open_door
        else '<label>Bearer token <input type="password" name="token" autocomplete="current-password" required></label>'
    )
    form = f'<form method="post" action="/console/signin" class="card">{_csrf_field(pre)}'
    return _page("Sign in", f"{note}{form}{field}<button>Sign in</button></form>", None)


def message(viewer: Viewer | None, title: str, text: str) -> str:
    """A short page that says what happened (errors, refusals)."""
    return _page(
        title, f'<p class="card">{esc(text)}</p><p><a href="/console/runs">Back to paused runs</a></p>', viewer
    )


def run_row(run: PausedRun, owner: str) -> dict[str, str]:
    """A paused run as the list (and its live updates) shows it."""
    return {
        "id": run.execution_id,
        "url": f"/console/runs/{run.execution_id}",
        "caller": owner,
        "tools": visible(", ".join(p.tool_id for p in run.pending)),
        "paused": when(run.paused_at),
        "paused_at": str(run.paused_at),
        "expires": when(run.expires),
    }


def runs(viewer: Viewer, rows: Sequence[Mapping[str, str]]) -> str:
    """The paused runs list; new pauses arrive by server-sent events (``/console/events``)."""
    body = (
        f'<tr id="run-{esc(r["id"])}"><td><a href="{esc(r["url"])}">{esc(r["tools"])}</a></td>'
        f"<td>{esc(r['caller'])}</td><td>{esc(r['paused'])}</td><td>{esc(r['expires'])}</td></tr>"
        for r in rows
    )
    table = _table(
        ("Waits to call", "Caller", "Paused", "Expires"), body, body_attrs=' id="runs" data-events="/console/events"',
        empty="No run waits for a decision.",
    )  # fmt: skip
    scope = "every caller's runs" if viewer.operator else "your runs"
    return _page(
        "Paused runs",
        f'<p class="hint">Showing {scope}; new ones appear here as they pause.</p>{table}',
        viewer,
        "runs",
    )


def unlike_text(unlike: Sequence[str]) -> str:
    """Why a run cannot be approved from this page."""
    return (
        f"The definition of {', '.join(unlike)} here is not the one the run paused under (it changed since, "
        "or another replica serves another): approving would approve what this page does not show. Deny or "
        "abort it, or approve it where that definition is served."
    )


def not_kept(r: PausedRun) -> list[str]:
    """The saved snippets the run's calls cover whose code it did not keep (it cannot be approved unseen)."""
    return list(dict.fromkeys(t for t, h in snippets_covered(r.pending) if h not in r.snippet_code))


def not_kept_text(missing: Sequence[str]) -> str:
    """Why a run whose snippets' code was not all kept cannot be approved."""
    return (
        f"The code of {', '.join(missing)} is not shown: the saved snippets' code these calls cover is more than "
        f"one question keeps ({MAX_SNIPPET_CODE:,} characters). Nobody approves code unseen: deny or abort it."
    )


def run(
    viewer: Viewer, r: PausedRun, owner: str, about: Mapping[str, str], unlike: Sequence[str] = (), shown: str = ""
) -> str:
    """One paused run: the calls with their arguments and what the tools say they do, the decision, the snippet.

    The calls of saved snippets show the code approving them runs: their own and that of the
    snippets they name, as judged, each once (:attr:`PausedRun.snippet_code`), whole. A snippet
    whose code the run did not keep (too much: :data:`~toolcode.calls.MAX_SNIPPET_CODE`) is named,
    and then only deny and abort are offered.

    ``about`` holds each pending tool's description, as its server gives it; ``unlike``: the tools
    whose definition here is not the one approving binds (then only deny and abort are offered);
    ``shown``: the digest of the definitions shown, which an approval carries back.
    """
    calls = "".join(
        f'<div class="call card"><p><code class="tool">{esc(p.tool_id)}</code> <span class="tier {esc(p.tier)}">'
        f'{esc(p.tier)}</span></p><p class="about">{esc(about.get(p.tool_id, ""))}</p>'
        f'<p class="hint">{esc(p.reason)}</p><pre class="args">{_json(p.args)}</pre></div>'
        for p in r.pending
    )
    covered = snippets_covered(r.pending)
    calls += "".join(_saved_code(t, r.snippet_code[h]) for t, h in covered if h in r.snippet_code)
    missing = not_kept(r)
    if missing:
        calls += f'<p class="card error unlike">{esc(not_kept_text(missing))}</p>'
    lines = _numbered(r.code, r.state.line)
    facts = (
        f"<dl><dt>Caller</dt><dd>{esc(owner)}</dd><dt>Paused</dt><dd>{esc(when(r.paused_at))}</dd>"
        f"<dt>Expires</dt><dd>{esc(when(r.expires))}</dd><dt>Session</dt><dd>{esc(r.session or '—')}</dd>"
        f"<dt>May still call</dt><dd>{esc(', '.join(r.may_call) or '—')}</dd></dl>"
    )
    offered = [d for d in DECISIONS if not ((unlike or missing) and d in ("approve", "approve_run"))]
    buttons = "".join(f'<button name="decision" value="{d}" class="{d}">{esc(_LABELS[d])}</button>' for d in offered)
    warning = f'<p class="card error unlike">{esc(unlike_text(unlike))}</p>' if unlike else ""
    form = (
        f'{warning}<form method="post" class="decide">{_csrf(viewer)}'
        f'<input type="hidden" name="shown" value="{esc(shown)}">{buttons}</form>'
    )
    where = f" at line {r.state.line}" if r.state.line is not None else ""
    body = f'<h2>It waits{esc(where)} to call</h2>{calls}{form}{facts}<h2>Snippet</h2><pre class="code">{lines}</pre>'
    return _page(f"Paused run {r.execution_id[:8]}", body, viewer, "runs")


def _numbered(code: str, hit: int | None = None) -> str:
    """Code as the interpreter numbers its lines, written out (:func:`code_lines`); ``hit``: the line marked."""
    return "".join(
        f'<span class="line{" hit" if i == hit else ""}"{" id=pending" if i == hit else ""}>'
        f'<span class="no">{i}</span>{esc(text) or " "}</span>'
        for i, text in enumerate(code_lines(code), start=1)
    )


def _saved_code(tool_id: str, code: str) -> str:
    """A saved snippet's code that approving the call runs (the code its digest binds), whole."""
    return (
        f'<p class="hint">The code of <code>{esc(tool_id)}</code> that approving runs, as it was judged:</p>'
        f'<pre class="saved" data-tool="{esc(tool_id)}">{_numbered(code)}</pre>'
    )


def decided(viewer: Viewer, decision: str, out: ExecuteOutcome) -> str:
    """What became of a run after a decision: finished, failed, or paused again."""
    if out.approval is not None:
        link = f"/console/runs/{out.approval.execution_id}"
        text = f'<p class="card">The run paused again: <a href="{esc(link)}">decide about its next call</a>.</p>'
    elif out.ok:
        text = f'<p class="card ok">The run finished.</p><h2>Value</h2><pre>{_json(out.value)}</pre>'
    else:
        err = out.error
        text = f'<p class="card error">{esc(f"[{err.code}] {err.message}" if err else "The run failed.")}</p>'
    if out.stdout:
        text += f"<h2>Output</h2><pre>{esc(out.stdout)}</pre>"
    text += f'<p>{esc(out.calls.count)} tool calls. <a href="/console/runs">Back to paused runs</a></p>'
    return _page(f"Decided: {_LABELS.get(decision, decision)}", text, viewer, "runs")


def quarantine(viewer: Viewer, changes: Sequence[Change], *, enabled: bool) -> str:
    """Each blocked tool with the diff of its definition; approve or keep blocked (operators)."""
    if not enabled:
        return _page(
            "Quarantine", '<p class="card">Quarantine is off (toolcode.policy.quarantine).</p>', viewer, "quarantine"
        )
    items: list[str] = []
    for c in changes:
        diff = "".join(
            f'<span class="{"add" if d[:1] == "+" else "del" if d[:1] == "-" else "hunk" if d[:2] == "@@" else "ctx"}">'
            f"{esc(d)}</span>"
            for d in c.diff
        )
        since = (
            f"approved by {c.approved_by} at {when(c.approved_at)}, changed since" if c.state == "changed" else "new"
        )
        act = (
            f'<form method="post" class="decide">{_csrf(viewer)}<input type="hidden" name="tool_id" '
            f'value="{esc(c.tool_id)}"><input type="hidden" name="digest" value="{esc(c.digest)}">'
            '<button name="action" value="approve" class="approve">Approve this definition'
            '</button><button name="action" value="keep" class="deny">Keep blocked</button></form>'
            if viewer.operator
            else '<p class="hint">An operator decides.</p>'
        )
        items.append(
            f'<section class="card tool-change" id="tool-{esc(c.tool_id)}"><h2><code>{esc(c.tool_id)}</code></h2>'
            f'<p class="hint">{esc(since)}</p><pre class="diff">{diff}</pre>{act}</section>'
        )
    body = "".join(items) or '<p class="card">No tool is blocked.</p>'
    return _page("Quarantine", body, viewer, "quarantine")


def audit(viewer: Viewer, f: AuditFilter, shown: Sequence[Mapping[str, Any]], *, older: bool) -> str:
    """The audit log, filtered and paged, with the export of the same filter as JSON lines.

    ``shown``: this page's matches, newest first; ``older``: whether an older page exists.
    """
    first = f.page * PAGE
    rows = (
        f"<tr><td>{esc(when(e.get('at')))}</td><td>{esc(e.get('caller') or 'local')}</td>"
        f"<td><code>{esc(e.get('tool_id', ''))}</code></td><td>{esc(e.get('decision', ''))}</td>"
        f"<td>{esc(e.get('decided_by', ''))}</td><td>{esc(e.get('code') or ('ok' if e.get('ok') else ''))}</td></tr>"
        for e in shown
    )
    options = "".join(
        f"<option{' selected' if d == f.decision else ''}>{esc(d)}</option>" for d in ("", *AUDIT_DECISIONS)
    )
    caller = f'<label>Caller <input name="caller" value="{esc(f.caller)}"></label>' if viewer.operator else ""
    form = (
        f'<form method="get" class="filters">{caller}<label>Tool <input name="tool" value="{esc(f.tool)}" '
        f'placeholder="fs:*"></label><label>Decision <select name="decision">{options}</select></label>'
        f'<label>From (UTC) <input type="datetime-local" name="since" value="{esc(f.since)}"></label>'
        f'<label>To (UTC) <input type="datetime-local" name="until" value="{esc(f.until)}"></label>'
        "<button>Filter</button></form>"
    )
    pages = [f'<a href="/console/audit.jsonl?{esc(urlencode(f.query(page=0)))}" download>Export JSON lines</a>']
    if f.page:
        pages.append(f'<a href="?{esc(urlencode(f.query(page=f.page - 1)))}" rel="prev">Newer</a>')
    if older:
        pages.append(f'<a href="?{esc(urlencode(f.query(page=f.page + 1)))}" rel="next">Older</a>')
    span = f"entries {first + 1:,}-{first + len(shown):,} · " if shown else ""
    nav = f'<p class="pages">{span}page {f.page + 1} · {" · ".join(pages)}</p>'
    table = _table(("When", "Caller", "Tool", "Decision", "By", "Result"), rows, empty="No entry matches.")
    return _page("Audit", form + nav + table, viewer, "audit")


def state(viewer: Viewer, rows: Sequence[OwnerState], settings: Settings) -> str:
    """What each caller keeps, against its quotas."""
    s, p, r, n = settings.sessions, settings.policy, settings.results, settings.snippets.max_per_caller

    def of(n: int, limit: int) -> str:
        return f"{n:,} of {limit:,}" if limit else f"{n:,}"

    body = (
        f"<tr><td>{esc(o.name)}</td>"
        f"<td>{esc(of(o.counts.get('sessions', 0), s.max_sessions))}<br><small>largest "
        f"{esc(_size(o.largest.get('sessions', 0)))} of {esc(_size(s.max_bytes))}</small></td>"
        f"<td>{esc(of(o.counts.get('paused', 0), p.max_paused_runs))}<br><small>largest "
        f"{esc(_size(o.largest.get('paused', 0)))} of {esc(_size(p.max_paused_bytes))}</small></td>"
        f"<td>{esc(of(o.counts.get('results', 0), r.max_per_caller))}<br><small>"
        f"{esc(_size(o.bytes.get('results', 0)))} of {esc(_size(r.max_bytes_per_caller))}</small></td>"
        f"<td>{esc(of(o.counts.get('snippets', 0), n))}</td></tr>"
        for o in rows
    )
    table = _table(
        ("Caller", "Sessions", "Paused runs", "Stored results", "Saved snippets"), body, empty="Nothing kept."
    )
    return _page("State", table, viewer, "state")
