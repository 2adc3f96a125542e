"""The snippets ``bench/typecheck.py`` checks: correct ones and broken ones, over the vendored catalogs.

``CALLS`` are correct calls to tools of the vendored catalogs (GitHub's MCP server, MCP-Bench and
LiveMCPBench servers), each with arguments its schema accepts. The bench writes each one in both
call styles (``from tools import ns`` and ``run_tool("ns:name", ...)``) as a correct snippet, and
derives broken ones from it by one mistake each, in turn: a misspelt parameter, a missing
required one, a value of the wrong type, a value outside an enum, a misspelt tool name and a
positional argument (module style only). ``DEMO`` adds handwritten snippets over the demo
help-desk tools, whose results are typed (misuse of a result: an unknown key, a method a value
does not have).

Every correct snippet is run with the check off to prove it runs (the tools accept any call their
schema accepts); nothing here knows what the checker does.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolcode._globals import SNIPPET_GLOBALS, call_names

CALLS: list[tuple[str, dict[str, Any]]] = [
    # GitHub's MCP server (117 tools, one namespace).
    ("github:list_issues", {"owner": "octo", "repo": "hello", "direction": "DESC", "perPage": 5}),
    ("github:create_issue", {"owner": "octo", "repo": "hello", "title": "Bug", "body": "It breaks"}),
    ("github:search_repositories", {"query": "mcp", "sort": "stars", "order": "desc"}),
    ("github:get_file_contents", {"owner": "octo", "repo": "hello", "path": "README.md"}),
    ("github:list_pull_requests", {"owner": "octo", "repo": "hello", "direction": "asc"}),
    ("github:create_branch", {"owner": "octo", "repo": "hello", "branch": "fix-1", "from_branch": "main"}),
    ("github:list_commits", {"owner": "octo", "repo": "hello", "perPage": 3}),
    ("github:add_issue_comment", {"owner": "octo", "repo": "hello", "issue_number": 3, "body": "Thanks"}),
    ("github:issue_read", {"owner": "octo", "repo": "hello", "issue_number": 7, "method": "get"}),
    ("github:get_commit", {"owner": "octo", "repo": "hello", "sha": "abc123", "detail": "stats"}),
    ("github:search_users", {"query": "ada", "sort": "followers", "order": "asc"}),
    ("github:list_tags", {"owner": "octo", "repo": "hello", "page": 2}),
    # MCP-Bench servers.
    ("unit-converter:convert_temperature", {"value": 20, "from_unit": "celsius", "to_unit": "kelvin"}),
    ("wikipedia:search_wikipedia", {"query": "Ada Lovelace", "limit": 3}),
    ("wikipedia:summarize_article_for_query", {"title": "Alan Turing", "query": "enigma", "max_length": 200}),
    ("google-maps:maps_directions", {"origin": "Paris", "destination": "Lyon", "mode": "transit"}),
    ("google-maps:maps_reverse_geocode", {"latitude": 48.85, "longitude": 2.35}),
    ("math-mcp:add", {"firstNumber": 2, "secondNumber": 40}),
    ("math-mcp:mean", {"numbers": [1, 2, 3.5]}),
    ("dex-paprika:getNetworkPools", {"network": "ethereum", "sort": "desc", "limit": 5}),
    ("hugging-face:search-models", {"query": "bert", "limit": 3}),
    ("context7:get-library-docs", {"context7CompatibleLibraryID": "/vercel/next.js", "tokens": 500}),
    # LiveMCPBench servers.
    ("yahoo-finance:get_stock_price_by_date", {"symbol": "ACME", "date": "2025-01-02"}),
    ("yahoo-finance:get_historical_stock_prices", {"symbol": "ACME", "period": "1mo", "interval": "1d"}),
    ("npm-sentinel-mcp:npmTrends", {"packages": ["react", "vue"], "period": "last-week"}),
    ("npm-sentinel-mcp:npmSearch", {"query": "left-pad", "limit": 5}),
    ("opgg-mcp:valorant-leaderboard", {"region": "EU"}),
    ("bing-cn-mcp:bing_search", {"query": "weather", "num_results": 3}),
    ("hugeicons:get_platform_usage", {"platform": "react"}),
    ("google-maps:maps_distance_matrix", {"origins": ["Paris"], "destinations": ["Lyon", "Lille"], "mode": "driving"}),
]
"""Correct calls: (tool id, arguments)."""

NAMESPACES: dict[str, tuple[str, ...]] = {
    "github_mcp_server_tools.json": ("github",),
    "mcp_bench_tools.json": (
        "unit-converter",
        "wikipedia",
        "google-maps",
        "math-mcp",
        "dex-paprika",
        "hugging-face",
        "context7",
    ),
    "livemcpbench.json": ("yahoo-finance", "npm-sentinel-mcp", "opgg-mcp", "bing-cn-mcp", "hugeicons"),
}
"""The namespaces of each vendored catalog the bench loads."""

# Handwritten snippets over the demo help-desk tools (typed results). (name, code, broken)
DEMO: list[tuple[str, str, bool]] = [
    (
        "a function tried under a newer name, falling back on ImportError",
        "try:\n    from tools.helpdesk import list_tickets_v2 as list_tickets\nexcept ImportError:\n"
        "    from tools.helpdesk import list_tickets\n[t['id'] for t in list_tickets(office='Paris')][:2]",
        False,
    ),
    (
        "a function tried under a newer name, any error caught",
        "try:\n    from tools.helpdesk import on_call_v2 as on_call\nexcept (KeyError, ImportError):\n"
        "    from tools.helpdesk import on_call\nlen(on_call(office='Paris'))",
        False,
    ),
    (
        "unknown result key",
        "from tools import helpdesk\nts = helpdesk.list_tickets(office='Paris')\n[t['titel'] for t in ts]",
        True,
    ),
    (
        "unknown key of a nested result",
        "from tools import helpdesk\nengineers = helpdesk.on_call(office='Paris')\nengineers[0]['skils']",
        True,
    ),
    (
        "method a value does not have",
        "from tools import helpdesk\n[o['city'].uper() for o in helpdesk.list_offices()]",
        True,
    ),
    (
        "arithmetic on a string field",
        "from tools import helpdesk\nsum(o['city'] for o in helpdesk.list_offices()) + 1",
        True,
    ),
    (
        "list result used as a dict",
        "from tools import helpdesk\nhelpdesk.list_offices()['Paris']",
        True,
    ),
    (
        "wrong enum through a variable",
        "from tools import helpdesk\nhelpdesk.list_tickets(office='Paris', status='pending')",
        True,
    ),
    (
        "awaitable form not awaited in gather",
        "import asyncio\nfrom tools import helpdesk\n"
        "rs = await asyncio.gather(helpdesk.list_tickets_async(offic='Paris'))\nlen(rs)",
        True,
    ),
    (
        "tool guarded by hasattr",
        "from tools import helpdesk\n"
        "helpdesk.escalate(ticket_id='PAR-1003') if hasattr(helpdesk, 'escalate') else None",
        False,
    ),
    (
        "tool tested for with getattr",
        "from tools import helpdesk\nhelpdesk.nope() if getattr(helpdesk, 'nope', None) else None",
        False,
    ),
    (
        "typed fields",
        "from tools import helpdesk\nts = helpdesk.list_tickets(office='Paris')\n"
        "[t['title'].upper() for t in ts if t['priority'] == 'urgent' and t['age_days'] > 1]",
        False,
    ),
    (
        "optional field guarded",
        "from tools import helpdesk\n"
        "[t['assignee'].lower() for t in helpdesk.list_tickets(office='Tokyo') if t['assignee'] is not None]",
        False,
    ),
    (
        "fan-out over offices",
        "import asyncio\nfrom tools import helpdesk\ncities = [o['city'] for o in helpdesk.list_offices()]\n"
        "lists = await asyncio.gather(*[helpdesk.on_call_async(office=c) for c in cities])\n"
        "{c: len(x) for c, x in zip(cities, lists)}",
        False,
    ),
    (
        "values from input",
        "from tools import helpdesk\noffice = input or 'Paris'\nlen(helpdesk.list_tickets(office=office))",
        False,
    ),
    (
        "dict built in a loop",
        "from tools import helpdesk\nby_city = {}\nfor o in helpdesk.list_offices():\n"
        "    by_city[o['city']] = o['staff']\nby_city['Paris'] * 2",
        False,
    ),
    (
        "run_tools with literal ids",
        "a, b = run_tools([('helpdesk:on_call', {'office': 'Paris'}), ('helpdesk:list_offices', {})])\n"
        "[len(a), len(b)]",
        False,
    ),
    (
        "error caught",
        "from tools import helpdesk\ntry:\n    helpdesk.list_tickets(office='Atlantis')\n"
        "except ToolError as e:\n    r = tool_error_info(e)['code']\nr",
        False,
    ),
    (
        "result passed on",
        "from tools import helpdesk\nt = helpdesk.list_tickets(office='Paris')[0]\n"
        "helpdesk.assign_ticket(ticket_id=t['id'], engineer=helpdesk.on_call(office=t['office'])[0]['name'])",
        False,
    ),
    (
        "typed result in a helper function",
        "from tools import helpdesk\ndef urgent(city):\n"
        "    return [t['id'] for t in helpdesk.list_tickets(office=city) if t['priority'] == 'urgent']\n"
        "len(urgent('Paris')) + len(urgent('Tokyo'))",
        False,
    ),
]


# ---------------------------------------------------------------------------------------------
# The docs' own examples, found in docs/*.md and README.md (a new example joins by itself).

DOCS = Path(__file__).resolve().parent.parent / "docs"
README = DOCS.parent / "README.md"
_FENCE = re.compile(r"^```([\w-]*)([^\n]*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
_EXEC_C = re.compile(r"\bexec\b[^\n']*?-c '([^']*)'", re.DOTALL)
_SANDBOX_MODULES = frozenset({"tools", "asyncio", "json", "re", "math", "datetime", "typing"})
_SNIPPET_NAMES = frozenset({g.name for g in SNIPPET_GLOBALS}) | {name + "_async" for name in call_names()}


@dataclass(frozen=True)
class DocExample:
    """A snippet the docs show: a ``python`` block that is a snippet, a snippet in host code, a ``-c`` of the CLI."""

    where: str
    """``page.md:line``."""
    code: str
    input: Any = None
    """The run's ``input`` where the docs give it (``execute(..., input=...)``)."""
    session: str | None = None
    """The session the docs run it in (its runs there follow one another)."""
    kind: str = "snippet"
    """``snippet``, or ``saved`` for the code of a saved snippet (its input is the tool call's arguments)."""
    refused: bool = False
    """Shown as refused by the check (a ``python refused`` block): a broken snippet."""


def _parse(code: str) -> ast.Module | None:
    try:
        flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        return compile(code, "example", "exec", flags=flags, dont_inherit=True)
    except (SyntaxError, ValueError):
        return None


def _is_snippet(tree: ast.Module) -> bool:
    """A snippet uses the snippet API (or ``tools``) and imports nothing a sandbox does not have."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] not in _SANDBOX_MODULES for a in node.names):
            return False
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] not in _SANDBOX_MODULES:
            return False
    if not any(isinstance(n, ast.Call | ast.Assign | ast.ImportFrom) for n in ast.walk(tree)):
        return False  # a bare name or value, not a program
    return any(
        (isinstance(n, ast.Name) and (n.id in _SNIPPET_NAMES or n.id == "__out"))
        or (isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "tools")
        for n in ast.walk(tree)
    )


def _literal(node: ast.expr | None) -> Any:
    try:
        return ast.literal_eval(node) if node is not None else None
    except ValueError:
        return None


def _embedded(tree: ast.Module, where: str) -> list[DocExample]:
    """Snippets written as strings in host code, with the ``input`` and ``session`` the call gives them."""
    out: list[DocExample] = []
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        kw = {k.arg: k.value for k in call.keywords if k.arg}
        method = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
        saved = method == "save_snippet"
        # What execute() runs is a snippet whatever it holds; elsewhere, a string that reads as one.
        code_arg = call.args[0] if method == "execute" and call.args else kw.get("code")
        for arg in [*call.args, *kw.values()]:
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                continue
            sub = _parse(arg.value)
            if sub is not None and (arg is code_arg or _is_snippet(sub)):
                line = f"{where}+{arg.lineno - 1}"
                out.append(
                    DocExample(
                        line,
                        arg.value,
                        _literal(kw.get("input")),
                        _literal(kw.get("session")),
                        "saved" if saved else "snippet",
                    )
                )
    for assign in (n for n in ast.walk(tree) if isinstance(n, ast.Assign)):
        value = assign.value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            sub = _parse(value.value)
            if sub is not None and _is_snippet(sub):
                out.append(DocExample(f"{where}+{value.lineno - 1}", value.value))
    return out


def doc_examples() -> list[DocExample]:
    """Every snippet the docs show, in page order."""
    out: list[DocExample] = []
    for page in [README, *sorted(DOCS.glob("*.md"))]:
        text = page.read_text()
        for m in _FENCE.finditer(text):
            lang, info, body = m.group(1), m.group(2).split(), m.group(3)
            where = f"{page.name}:{text[: m.start()].count(chr(10)) + 2}"
            if lang in ("sh", "bash", "shell", "console"):
                out.extend(DocExample(where, code.strip("\n")) for code in _EXEC_C.findall(body))
            if lang not in ("python", "py"):
                continue
            tree = _parse(body)
            if tree is None:
                continue
            if _is_snippet(tree):
                out.append(DocExample(where, body, refused="refused" in info))
            else:
                out.extend(_embedded(tree, where))
    return out


# ---------------------------------------------------------------------------------------------
# Correct snippets written the way models write them, over the demo and the real servers' tools
# (bench/typecheck_tools.py). Each is written in module style; ``literal_style`` writes the same
# program with ``run_tool("ns:name", {...})`` calls. ``/home/user/project`` is the repository the
# git server works on, ``/data`` the filesystem server's folder.

IDIOMS: list[tuple[str, str]] = [
    # -- the finding: values built before the call, lists built with append, unions ---------------
    # -- found by an outside corpus: values ty types loosely, guards, helpers, globals, classes ----
    (
        "a branch the snippet's own constant rules out",
        "from tools import helpdesk\nSTATUS = 'all'\nDEBUG = False\n"
        "if STATUS == 'all':\n    ts = helpdesk.list_tickets(office='Paris')\n"
        "else:\n    ts = helpdesk.list_tickets(office='Paris', status=STATUS)\n"
        "if DEBUG:\n    helpdesk.list_tickets(office='Paris', status='debug')\n"
        "n = len(ts) if STATUS in ('all', 'any') else len(helpdesk.list_tickets(office='Paris', status=STATUS))\n"
        "[len(ts), n]",
    ),
    (
        "a tools module's name taken by a standard module",
        "from tools import time\nnow = time.get_current_time(timezone='UTC')['datetime']\n"
        "import time\nfrom datetime import time as clock\n[now, time.time() > 0, clock.fromisoformat('09:30').minute]",
    ),
    (
        "tuples compared, an item optional",
        "from tools import helpdesk\nt = helpdesk.list_tickets(office='Tokyo')[0]\n"
        "(t['age_days'], t['assignee']) < (t['age_days'] + 1, t['assignee'])",
    ),
    (
        "a result merged with a dict bound before",
        "from tools import helpdesk\no = helpdesk.list_offices()[0]\nextra = {'region': 'EU'}\n(o | extra)['region']",
    ),
    (
        "two results merged",
        "from tools import helpdesk\n"
        "(helpdesk.list_offices()[0] | helpdesk.list_tickets(office='Paris')[0])['title'].upper()",
    ),
    (
        "a result cleared",
        "from tools import helpdesk\nt = helpdesk.list_tickets(office='Paris')[0]\nt.clear()\nlen(t)",
    ),
    ("an item popped from a result", "from tools import helpdesk\nhelpdesk.list_offices()[0].popitem()[0]"),
    (
        "key picked by ==",
        "from tools import helpdesk\no = helpdesk.list_offices()[0]\n[o[k] for k in o if k == 'region']",
    ),
    (
        "key guarded by a keys subset",
        "from tools import helpdesk\no = helpdesk.list_offices()[0]\n"
        "a = o['region'] if {'region'} <= o.keys() else None\n"
        "b = o['region'] if {'region'}.issubset(o.keys()) else None\n[a, b]",
    ),
    (
        "a result's values unpacked",
        "from tools import helpdesk\ncity, tz, staff = helpdesk.list_offices()[0].values()\nstaff + 1",
    ),
    (
        "a result's items filtered",
        "from tools import helpdesk\no = helpdesk.list_offices()[0]\nsum(v for k, v in o.items() if k == 'staff') + 1",
    ),
    (
        "gathered results extended",
        "import asyncio\nfrom tools import helpdesk\n"
        "res = await asyncio.gather(helpdesk.on_call_async(office='Paris'), helpdesk.on_call_async(office='Tokyo'))\n"
        "res.append([])\nres.sort(key=len)\nlen(res)",
    ),
    (
        "key guarded by get",
        "from tools import helpdesk\no = helpdesk.list_offices()[0]\no['region'] if o.get('region') else 'n/a'",
    ),
    (
        "key guarded by keys()",
        "from tools import helpdesk\no = helpdesk.list_offices()[0]\no['region'] if 'region' in o.keys() else 'n/a'",
    ),
    (
        "key guarded by any()",
        "from tools import helpdesk\nos_ = helpdesk.list_offices()\n"
        "[o['region'] for o in os_] if any('region' in o for o in os_) else []",
    ),
    (
        "tool guarded by the listing",
        "ids = {t['id'] for t in list_tools('helpdesk')['tools']}\n"
        "run_tool('helpdesk:escalate', {'ticket_id': 'PAR-1003'}) if 'helpdesk:escalate' in ids else None",
    ),
    (
        "helper called inside try",
        "def escalate():\n    return run_tool('helpdesk:escalate', {'ticket_id': 'PAR-1003'})\n"
        "try:\n    out = escalate()\nexcept ToolError:\n    out = None\nout",
    ),
    (
        "rewritten field read through a name",
        "from tools import helpdesk\nt = helpdesk.list_tickets(office='Paris')[0]\n"
        "t['age_days'] = f\"{t['age_days']} days\"\nlabel = t['age_days']\nlabel.upper()",
    ),
    (
        "replaced items read in a loop",
        "from tools import helpdesk\noffices = helpdesk.list_offices()\n"
        "for i, o in enumerate(offices):\n    offices[i] = o['city']\n[c.lower() for c in offices]",
    ),
    (
        "global set by a helper",
        "from tools import helpdesk\nstatus = None\ndef set_status(s):\n    global status\n    status = s\n"
        "set_status(helpdesk.list_offices()[0]['city'])\nstatus.upper()",
    ),
    (
        "a result a helper swaps for another with global",
        "from tools import helpdesk\ncurrent = helpdesk.list_offices()[0]\ndef switch():\n    global current\n"
        "    current = helpdesk.list_tickets(office='Paris')[0]\nswitch()\ncurrent['priority']",
    ),
    (
        "attribute set on the snippet's own class",
        "from tools import helpdesk\nclass Stats:\n    pass\ns = Stats()\n"
        "s.total = len(helpdesk.list_offices())\ns.total",
    ),
    (
        "entities built before the call",
        'from tools import memory\nents = [{"name": "c", "entityType": "service", "observations": ["x"]}]\n'
        "r = memory.create_entities(entities=ents)\nlen(r['entities'])",
    ),
    (
        "entities appended in a loop",
        "from tools import memory\nents = []\nfor name in ['api', 'worker', 'db']:\n"
        "    ents.append({'name': name, 'entityType': 'service', 'observations': [f'{name} runs in prod']})\n"
        "created = memory.create_entities(entities=ents)\n[e['name'] for e in created['entities']]",
    ),
    (
        "entities from a comprehension",
        "from tools import memory\nnames = ['alpha', 'beta']\n"
        "ents = [{'name': n, 'entityType': 'project', 'observations': []} for n in names]\n"
        "memory.create_entities(entities=ents)",
    ),
    (
        "one entity dict then a list",
        "from tools import memory\nentity = {}\nentity['name'] = 'gateway'\nentity['entityType'] = 'service'\n"
        "entity['observations'] = ['handles TLS']\nmemory.create_entities(entities=[entity])",
    ),
    (
        "relations from pairs",
        "from tools import memory\npairs = [('Ada', 'billing'), ('Ada', 'gateway')]\n"
        "rels = [{'from': a, 'to': b, 'relationType': 'maintains'} for a, b in pairs]\n"
        "out = memory.create_relations(relations=rels)\nlen(out['relations'])",
    ),
    (
        "observations from parsed text",
        "from tools import memory\ntext = 'Ada: likes tea; Ada: rides a bike'\nby_name = {}\n"
        "for part in text.split(';'):\n    who, what = part.split(':')\n"
        "    by_name.setdefault(who.strip(), []).append(what.strip())\n"
        "obs = [{'entityName': k, 'contents': v} for k, v in by_name.items()]\n"
        "res = memory.add_observations(observations=obs)\nres['results'][0]['addedObservations']",
    ),
    (
        "sort by a negated count",
        "from tools import helpdesk\nreport = []\nfor o in helpdesk.list_offices():\n"
        "    tickets = helpdesk.list_tickets(office=o['city'])\n"
        "    report.append({'office': o['city'], 'urgent': sum(t['priority'] == 'urgent' for t in tickets)})\n"
        "sorted(report, key=lambda r: -r['urgent'])[:3]",
    ),
    (
        "arithmetic on a mixed dict",
        "from tools import helpdesk\nrow = {'city': 'Paris', 'count': 0}\n"
        "for t in helpdesk.list_tickets(office='Paris'):\n    row['count'] += 1\nrow['count'] * 2 - 1",
    ),
    (
        "arithmetic on an optional field",
        "from tools import helpdesk\nages = [t['age_days'] for t in helpdesk.list_tickets(office='Tokyo')]\n"
        "oldest = max(ages) if ages else None\nscore = oldest + 1 if oldest is not None else 0\nscore",
    ),
    (
        "get with a default",
        "from tools import helpdesk\ncounts = {}\nfor t in helpdesk.list_tickets(office='Nairobi'):\n"
        "    who = t.get('assignee') or 'nobody'\n    counts[who] = counts.get(who, 0) + 1\n"
        "max(counts, key=lambda k: counts[k])",
    ),
    (
        "json from a string",
        "import json\nfrom tools import memory\n"
        'raw = \'[{"name": "cache", "entityType": "service", "observations": ["redis"]}]\'\n'
        "memory.create_entities(entities=json.loads(raw))",
    ),
    (
        "json from a tool's text",
        "import json\nfrom tools import filesystem\n"
        "tree = json.loads(filesystem.directory_tree(path='/data')['content'])\n"
        "[n['name'] for n in tree if n['type'] == 'directory']",
    ),
    (
        "arguments from a dict",
        "from tools import git\nargs = {'repo_path': '/home/user/project', 'max_count': 2}\nlog = git.git_log(**args)\n"
        "log.count('Commit:')",
    ),
    (
        "arguments from input",
        "from tools import helpdesk\noffice = (input or {}).get('office', 'Paris')\n"
        "len(helpdesk.on_call(office=office))",
    ),
    (
        "enum value from a variable",
        "from tools import helpdesk\nwanted = 'closed' if input else 'open'\n"
        "len(helpdesk.list_tickets(office='Paris', status=wanted))",
    ),
    (
        "enum value from a list",
        "from tools import helpdesk\nstatuses = ['open', 'closed']\n"
        "{s: len(helpdesk.list_tickets(office='Sydney', status=s)) for s in statuses}",
    ),
    (
        "location from a list of choices",
        "from tools import everything\ncities = ['New York', 'Chicago']\n"
        "temps = {c: everything.get_structured_content(location=c)['temperature'] for c in cities}\n"
        "round(sum(temps.values()) / len(temps), 1)",
    ),
    (
        "best so far, None at first",
        "from tools import helpdesk\nbest = None\nbest_age = -1\nfor t in helpdesk.list_tickets(office='Paris'):\n"
        "    if t['age_days'] > best_age:\n        best = t\n        best_age = t['age_days']\nbest['id']",
    ),
    (
        "last item of a loop",
        "from tools import memory\nlast = None\nfor e in memory.read_graph()['entities']:\n    last = e\nlast['name']",
    ),
    (
        "result keys read through a variable",
        "from tools import memory\ng = memory.read_graph()\n{k: len(g[k]) for k in g}",
    ),
    (
        "result dict changed before it is returned",
        "from tools import everything\nw = everything.get_structured_content(location='Chicago')\n"
        "w['city'] = 'Chicago'\nw.pop('humidity')\nw['temperature'] = str(w['temperature']) + ' C'\nw",
    ),
    (
        "variable annotated by the snippet",
        "from tools import helpdesk\ncount: int = 0\nnames: list = []\nfor o in helpdesk.list_offices():\n"
        "    count += o['staff']\n    names.append(o['city'])\nf'{count} people in {len(names)} offices'",
    ),
    # -- loops, helpers, errors ---------------------------------------------------------------------
    (
        "helper function over offices",
        "from tools import helpdesk\n\ndef open_count(city):\n"
        "    return len(helpdesk.list_tickets(office=city, status='open'))\n\n"
        "{o['city']: open_count(o['city']) for o in helpdesk.list_offices()}",
    ),
    (
        "helper with annotations",
        "from tools import helpdesk\n\ndef summarise(tickets: list[dict]) -> dict:\n"
        "    return {'n': len(tickets), 'urgent': [t['id'] for t in tickets if t['priority'] == 'urgent']}\n\n"
        "summarise(helpdesk.list_tickets(office='Paris'))['n']",
    ),
    (
        "helper returning a dict then arithmetic",
        "from tools import helpdesk\n\ndef stats(city):\n    ts = helpdesk.list_tickets(office=city)\n"
        "    return {'city': city, 'n': len(ts), 'age': sum(t['age_days'] for t in ts)}\n\n"
        "s = stats('Tokyo')\ns['age'] / s['n']",
    ),
    (
        "try except around a failing call",
        "from tools import helpdesk\nresults = {}\nfor city in ['Paris', 'Atlantis']:\n    try:\n"
        "        results[city] = len(helpdesk.list_tickets(office=city))\n    except ToolError as e:\n"
        "        results[city] = tool_error_info(e)['code']\nresults",
    ),
    (
        "try except with fallback file",
        "from tools import filesystem\ntry:\n    text = "
        "filesystem.read_text_file(path='/data/missing.txt')['content']\n"
        "except ToolError:\n    text = filesystem.read_text_file(path='/data/notes.txt')['content']\n"
        "text.splitlines()[0]",
    ),
    (
        "error code checked",
        "from tools import git\ntry:\n    git.git_checkout(repo_path='/home/user/project', branch_name='nope')\n"
        "    ok = True\nexcept ToolError as e:\n    ok = tool_error_info(e)['code'] != 'tool_error'\nok",
    ),
    (
        "f-string report",
        "from tools import helpdesk\nlines = []\nfor o in helpdesk.list_offices():\n"
        "    lines.append(f\"{o['city']}: {o['staff']} staff, tz {o['timezone']}\")\n'\\n'.join(lines)",
    ),
    (
        "println progress",
        "from tools import helpdesk\nfor o in helpdesk.list_offices()[:2]:\n"
        "    println(f\"{o['city']} has {len(helpdesk.on_call(office=o['city']))} on call\")\n'done'",
    ),
    (
        "sorting tickets by age",
        "from tools import helpdesk\nts = helpdesk.list_tickets(office='Sao Paulo')\n"
        "oldest = sorted(ts, key=lambda t: t['age_days'], reverse=True)[:3]\n[(t['id'], t['age_days']) for t "
        "in oldest]",
    ),
    (
        "sorting with a tuple key",
        "from tools import helpdesk\nts = helpdesk.list_tickets(office='Paris')\n"
        "order = {'urgent': 0, 'normal': 1, 'low': 2}\n"
        "[t['id'] for t in sorted(ts, key=lambda t: (order[t['priority']], -t['age_days']))][:5]",
    ),
    (
        "aggregation by priority",
        "from tools import helpdesk\nby_prio = {}\nfor o in helpdesk.list_offices():\n"
        "    for t in helpdesk.list_tickets(office=o['city']):\n"
        "        by_prio[t['priority']] = by_prio.get(t['priority'], 0) + 1\nby_prio",
    ),
    (
        "average staff",
        "from tools import helpdesk\noffices = helpdesk.list_offices()\n"
        "total = 0\nfor o in offices:\n    total += o['staff']\nround(total / len(offices), 2)",
    ),
    (
        "max by key",
        "from tools import helpdesk\nbiggest = max(helpdesk.list_offices(), key=lambda o: o['staff'])\nbiggest['city']",
    ),
    (
        "set of skills",
        "from tools import helpdesk\nskills = set()\nfor o in helpdesk.list_offices():\n"
        "    for e in helpdesk.on_call(office=o['city']):\n        skills.update(e['skills'])\nsorted(skills)",
    ),
    (
        "assign the oldest urgent ticket",
        "from tools import helpdesk\nurgent = [t for t in helpdesk.list_tickets(office='Paris') if "
        "t['priority'] == 'urgent']\n"
        "if urgent:\n    t = min(urgent, key=lambda t: -t['age_days'])\n"
        "    who = helpdesk.on_call(office='Paris')[0]['name']\n"
        "    r = helpdesk.assign_ticket(ticket_id=t['id'], engineer=who)\nelse:\n    r = None\nr",
    ),
    (
        "assign in a loop with zip",
        "from tools import helpdesk\nts = [t for t in helpdesk.list_tickets(office='Tokyo') if not t['assignee']]\n"
        "people = [e['name'] for e in helpdesk.on_call(office='Tokyo')]\ndone = []\n"
        "for t, who in zip(ts, people):\n"
        "    done.append(helpdesk.assign_ticket(ticket_id=t['id'], engineer=who)['status'])\ndone",
    ),
    (
        "while loop with a counter",
        "from tools import helpdesk\nts = helpdesk.list_tickets(office='Sydney')\ni = 0\nfound = None\n"
        "while i < len(ts) and found is None:\n    if ts[i]['priority'] == 'urgent':\n        found = ts[i]['id']\n"
        "    i += 1\nfound",
    ),
    (
        "enumerate and slicing",
        "from tools import helpdesk\n"
        "[f'{i + 1}. {t[\"title\"][:20]}' for i, t in enumerate(helpdesk.list_tickets(office='Paris')[:3])]",
    ),
    (
        "dict comprehension over results",
        "from tools import helpdesk\n{o['city']: o['timezone'] for o in helpdesk.list_offices() if o['staff'] > 20}",
    ),
    (
        "nested result access",
        "from tools import time_\nr = time_.convert_time(source_timezone='Europe/Paris', time='09:30', "
        "target_timezone='Asia/Tokyo')\nr['target']['datetime'][11:16]",
    ),
    (
        "times of every office",
        "from tools import helpdesk, time_\nhours = {}\nfor o in helpdesk.list_offices():\n"
        "    now = time_.get_current_time(timezone=o['timezone'])\n    hours[o['city']] = int(now['datetime'][11:13])\n"
        "[c for c, h in hours.items() if 9 <= h < 17] or ['nobody is at work']",
    ),
    (
        "gather the awaitable forms",
        "import asyncio\nfrom tools import helpdesk\ncities = [o['city'] for o in helpdesk.list_offices()]\n"
        "lists = await asyncio.gather(*[helpdesk.on_call_async(office=c) for c in cities])\n"
        "{c: [e['name'] for e in l] for c, l in zip(cities, lists)}",
    ),
    (
        "gather two different tools",
        "import asyncio\nfrom tools import git, filesystem\n"
        "log, readme = await asyncio.gather(git.git_log_async(repo_path='/home/user/project', max_count=1), "
        "filesystem.read_text_file_async(path='/data/README.md'))\n[log.splitlines()[1], readme['content'][:9]]",
    ),
    # -- git -----------------------------------------------------------------------------------------
    (
        "git status lines",
        "from tools import git\nrepo = '/home/user/project'\nstatus = git.git_status(repo_path=repo)\n"
        "[l.strip() for l in status.splitlines() if l.startswith('  ')]",
    ),
    (
        "git log parsed",
        "from tools import git\nlog = git.git_log(repo_path='/home/user/project', max_count=5)\ncommits = []\n"
        "for block in log.split('Commit: ')[1:]:\n    lines = block.splitlines()\n"
        "    commits.append({'hash': lines[0].strip(\"'\"), 'author': lines[1].removeprefix('Author: ')})\n"
        "sorted({c['author'] for c in commits})",
    ),
    (
        "git add and commit",
        "from tools import git\nrepo = '/home/user/project'\nfiles = ['README.md']\n"
        "git.git_add(repo_path=repo, files=files)\nmsg = git.git_commit(repo_path=repo, message='Update the readme')\n"
        "msg.split()[-1]",
    ),
    (
        "git files list built then added",
        "from tools import git\nchanged = []\nfor line in "
        "git.git_status(repo_path='/home/user/project').splitlines():\n"
        "    if 'modified:' in line:\n        changed.append(line.split()[-1])\n"
        "git.git_add(repo_path='/home/user/project', files=changed) if changed else 'nothing'",
    ),
    (
        "git branch and checkout",
        "from tools import git\nrepo = '/home/user/project'\nname = 'fix/' + 'date-parser'\n"
        "git.git_create_branch(repo_path=repo, branch_name=name, base_branch='main')\n"
        "git.git_checkout(repo_path=repo, branch_name=name)",
    ),
    (
        "git branches parsed",
        "from tools import git\nout = git.git_branch(repo_path='/home/user/project', branch_type='local')\n"
        "current = [b[2:] for b in out.splitlines() if b.startswith('* ')]\ncurrent[0] if current else None",
    ),
    (
        "git diff against main",
        "from tools import git\nd = git.git_diff(repo_path='/home/user/project', target='main', context_lines=1)\n"
        "sum(1 for l in d.splitlines() if l.startswith('+') or l.startswith('-'))",
    ),
    (
        "git show of each commit",
        "from tools import git\nrepo = '/home/user/project'\nhashes = ['5c1e9a2', 'a83f0d4']\n"
        "{h: git.git_show(repo_path=repo, revision=h).splitlines()[0] for h in hashes}",
    ),
    (
        "git staged diff then reset",
        "from tools import git\nrepo = '/home/user/project'\ngit.git_add(repo_path=repo, files=['notes.txt'])\n"
        "staged = git.git_diff_staged(repo_path=repo)\ngit.git_reset(repo_path=repo)\n'notes.txt' in staged",
    ),
    # -- filesystem ----------------------------------------------------------------------------------
    (
        "list a folder and read the files",
        "from tools import filesystem\nlisting = filesystem.list_directory(path='/data')['content']\n"
        "files = [l[7:] for l in listing.splitlines() if l.startswith('[FILE]')]\n"
        "{f: len(filesystem.read_text_file(path=f'/data/{f}')['content']) for f in files}",
    ),
    (
        "read several files at once",
        "from tools import filesystem\npaths = ['/data/README.md', '/data/notes.txt']\n"
        "text = filesystem.read_multiple_files(paths=paths)['content']\ntext.count('TODO')",
    ),
    (
        "paths built with append",
        "from tools import filesystem\npaths = []\nfor name in ['app.py', 'util.py']:\n"
        "    paths.append('/data/src/' + name)\nout = filesystem.read_multiple_files(paths=paths)\n"
        "len(out['content'].split('---'))",
    ),
    (
        "write a summary file",
        "from tools import filesystem, helpdesk\nrows = [f\"{o['city']},{o['staff']}\" for o in "
        "helpdesk.list_offices()]\n"
        "content = 'city,staff\\n' + '\\n'.join(rows)\n"
        "filesystem.write_file(path='/data/offices.csv', content=content)['content']",
    ),
    (
        "edit a file with edits built before",
        "from tools import filesystem\nedits = [{'oldText': 'TODO: write the docs', 'newText': 'Docs: see docs/'}]\n"
        "r = filesystem.edit_file(path='/data/README.md', edits=edits, dryRun=True)\n'Docs' in r['content']",
    ),
    (
        "edits from a replacement table",
        "from tools import filesystem\nrepl = {'alpha': 'ALPHA', 'beta': 'BETA'}\n"
        "edits = [{'oldText': a, 'newText': b} for a, b in repl.items()]\n"
        "filesystem.edit_file(path='/data/notes.txt', edits=edits)['content'].count('+')",
    ),
    (
        "search then info",
        "from tools import filesystem\nhits = filesystem.search_files(path='/data', "
        "pattern='*.py')['content'].splitlines()\n"
        "sizes = {}\nfor h in hits:\n    info = filesystem.get_file_info(path=h)['content']\n"
        "    sizes[h] = int(info.splitlines()[0].split(': ')[1])\nsum(sizes.values())",
    ),
    (
        "make a folder and move a file",
        "from tools import filesystem\nfilesystem.create_directory(path='/data/archive')\n"
        "filesystem.write_file(path='/data/old.txt', content='old')\n"
        "filesystem.move_file(source='/data/old.txt', destination='/data/archive/old.txt')['content']",
    ),
    (
        "sizes sorted",
        "from tools import filesystem\nout = filesystem.list_directory_with_sizes(path='/data', "
        "sortBy='size')['content']\n"
        "out.splitlines()[-1]",
    ),
    (
        "head of a file",
        "from tools import filesystem\nfirst = filesystem.read_text_file(path='/data/notes.txt', head=2)['content']\n"
        "first.split()",
    ),
    (
        "allowed directories",
        "from tools import filesystem\ndirs = filesystem.list_allowed_directories()['content'].splitlines()[1:]\ndirs",
    ),
    # -- memory ---------------------------------------------------------------------------------------
    (
        "read the graph and count types",
        "from tools import memory\ng = memory.read_graph()\ntypes = {}\nfor e in g['entities']:\n"
        "    types[e['entityType']] = types.get(e['entityType'], 0) + 1\ntypes",
    ),
    (
        "search nodes then open them",
        "from tools import memory\nfound = memory.search_nodes(query='billing')\nnames = [e['name'] for e in "
        "found['entities']]\n"
        "opened = memory.open_nodes(names=names)\n[o for e in opened['entities'] for o in e['observations']]",
    ),
    (
        "add observations to known entities",
        "from tools import memory\nknown = {e['name'] for e in memory.read_graph()['entities']}\nnotes = "
        "{'Ada': ['on call this week']}\n"
        "obs = [{'entityName': n, 'contents': c} for n, c in notes.items() if n in known]\n"
        "memory.add_observations(observations=obs)['results']",
    ),
    (
        "delete what a search finds",
        "from tools import memory\nmemory.create_entities(entities=[{'name': 'tmp-1', 'entityType': 'temp', "
        "'observations': []}])\n"
        "doomed = [e['name'] for e in memory.search_nodes(query='temp')['entities']]\n"
        "memory.delete_entities(entityNames=doomed)['success']",
    ),
    (
        "relations of an entity",
        "from tools import memory\ng = memory.read_graph()\n"
        "[(r['to'], r['relationType']) for r in g['relations'] if r['from'] == 'Ada']",
    ),
    (
        "store tickets as entities",
        "from tools import helpdesk, memory\nents = []\nfor t in helpdesk.list_tickets(office='Paris')[:3]:\n"
        "    ents.append({'name': t['id'], 'entityType': 'ticket', 'observations': [t['title'], t['priority']]})\n"
        "len(memory.create_entities(entities=ents)['entities'])",
    ),
    (
        "delete observations built in a loop",
        "from tools import memory\ndeletions = []\nfor e in memory.read_graph()['entities']:\n"
        "    old = [o for o in e['observations'] if 'port' in o]\n    if old:\n"
        "        deletions.append({'entityName': e['name'], 'observations': old})\n"
        "memory.delete_observations(deletions=deletions)['message']",
    ),
    # -- everything -----------------------------------------------------------------------------------
    (
        "sum numbers pairwise",
        "from tools import everything\npairs = [(1, 2), (3.5, 4)]\n"
        "[everything.get_sum(a=a, b=b).split()[-1].rstrip('.') for a, b in pairs]",
    ),
    (
        "echo a composed message",
        "from tools import everything, helpdesk\nn = len(helpdesk.list_offices())\n"
        "everything.echo(message=f'{n} offices') ",
    ),
    (
        "weather average",
        "from tools import everything\nw = everything.get_structured_content(location='Chicago')\n"
        "f\"{w['conditions']}, {w['temperature'] * 9 / 5 + 32:.0f}F\"",
    ),
    (
        "annotated message types",
        "from tools import everything\nkinds = ['error', 'success']\n"
        "[everything.get_annotated_message(messageType=k).split(':')[0] for k in kinds]",
    ),
    (
        "resource links counted",
        "from tools import everything\nlen(everything.get_resource_links(count=2))",
    ),
    (
        "environment as json",
        "import json\nfrom tools import everything\nenv = json.loads(everything.get_env())\nsorted(env)",
    ),
    # -- several servers --------------------------------------------------------------------------------
    (
        "commit a generated file",
        "from tools import filesystem, git\nrepo = '/home/user/project'\n"
        "filesystem.write_file(path='/data/CHANGES.md', content='- fix the parser\\n')\n"
        "git.git_add(repo_path=repo, files=['CHANGES.md'])\ngit.git_commit(repo_path=repo, message='Add CHANGES')",
    ),
    (
        "remember the files of a folder",
        "from tools import filesystem, memory\nnames = [l.split('] ')[1] for l in "
        "filesystem.list_directory(path='/data')['content'].splitlines()]\n"
        "memory.create_entities(entities=[{'name': n, 'entityType': 'file', 'observations': ['in /data']} for "
        "n in names])",
    ),
    (
        "todo lines to memory",
        "from tools import filesystem, memory\ntodos = []\nfor p in ['/data/README.md', '/data/notes.txt']:\n"
        "    for line in filesystem.read_text_file(path=p)['content'].splitlines():\n"
        "        if 'TODO' in line:\n            todos.append(line.split('TODO:')[1].strip())\n"
        "memory.add_observations(observations=[{'entityName': 'billing', 'contents': "
        "todos}])['results'][0]['entityName']",
    ),
    (
        "time stamp in a commit message",
        "from tools import git, time_\nnow = time_.get_current_time(timezone='UTC')['datetime'][:10]\n"
        "git.git_commit(repo_path='/home/user/project', message=f'Nightly {now}')",
    ),
    # -- results enriched with keys of the snippet's own, then read (a result is a plain dict) ----
    (
        "a flag set on each result, then counted",
        "from tools import helpdesk\nts = helpdesk.list_tickets(office='Paris')\nfor t in ts:\n"
        "    t['stale'] = t['age_days'] > 10\nsum(1 for t in ts if t['stale'])",
    ),
    (
        "a note added to one result",
        "from tools import helpdesk\nts = helpdesk.list_tickets(office='Paris')\nts[0]['note'] = 'checked'\n"
        "ts[0]['note']",
    ),
    (
        "a copied result updated",
        "from tools import helpdesk\nt = helpdesk.list_tickets(office='Paris')[0].copy()\n"
        "t.update({'seen': True})\n[t['id'], t['seen']]",
    ),
    (
        "a list kept on a result with setdefault",
        "from tools import helpdesk\nfor e in helpdesk.on_call(office='Paris'):\n"
        "    e.setdefault('shifts', []).append('night')\n    last = e['shifts'][-1]\nlast",
    ),
    (
        "results joined by a key of their own",
        "from tools import helpdesk\noffices = helpdesk.list_offices()\nfor o in offices:\n"
        "    o['on_call'] = [e['name'] for e in helpdesk.on_call(office=o['city'])]\n"
        "{o['city']: o['on_call'] for o in offices}",
    ),
    (
        "a count kept on a result",
        "from tools import helpdesk\nt = helpdesk.list_tickets(office='Tokyo')[0]\n"
        "t['views'] = t.get('views', 0) + 1\nt['views']",
    ),
    (
        "keys set from a list of names",
        "from tools import helpdesk\nt = helpdesk.list_tickets(office='Paris')[0]\nfor k in ('seen', 'starred'):\n"
        "    t[k] = False\n[t['seen'], t['starred']]",
    ),
    (
        "a result updated with a dict built before",
        "from tools import helpdesk\nextra = {'team': 'infra'}\no = helpdesk.list_offices()[0]\no.update(extra)\n"
        "o['team']",
    ),
    (
        "a result merged with a dict",
        "from tools import helpdesk\nt = helpdesk.list_tickets(office='Paris')[0] | {'seen': True}\n"
        "[t['id'], t['seen']]",
    ),
    (
        "a summary row appended to a result list",
        "from tools import helpdesk\nts = helpdesk.list_tickets(office='Paris')\n"
        "ts.append({'id': 'TOTAL', 'count': len(ts)})\nts[-1]['count']",
    ),
    (
        "rows built before and added to a result list",
        "from tools import helpdesk\nts = helpdesk.list_tickets(office='Paris')\n"
        "row = {'id': 'NOTE', 'note': 'none open'}\nts.insert(0, row)\n"
        "ts.extend([{'id': 'END', 'note': 'end'}])\n[ts[0]['note'], ts[-1]['note']]",
    ),
    (
        "rows added to a result list with +=",
        "from tools import helpdesk\nts = helpdesk.list_tickets(office='Paris')\n"
        "ts += [{'id': 'END', 'note': 'end'}]\nts[-1]['note']",
    ),
    (
        "a field rewritten as text, then used as text",
        "from tools import helpdesk\nts = helpdesk.list_tickets(office='Paris')\nfor t in ts:\n"
        "    t['age_days'] = f\"{t['age_days']} days\"\n[t['age_days'].upper() for t in ts]",
    ),
    (
        "a field turned into a number, then added to",
        "from tools import helpdesk\no = helpdesk.list_offices()[0]\no['city'] = len(o['city'])\no['city'] + 1",
    ),
    (
        "a list item replaced by text",
        "from tools import helpdesk\noffices = helpdesk.list_offices()\noffices[0] = 'HQ'\noffices[0].lower()",
    ),
    (
        "a key read behind an in test",
        "from tools import helpdesk\nt = helpdesk.list_tickets(office='Paris')[0]\nt['sla'] if 'sla' in t else 'none'",
    ),
    (
        "a key read in try/except KeyError",
        "from tools import helpdesk\nt = helpdesk.list_tickets(office='Paris')[0]\ntry:\n    sla = t['sla']\n"
        "except KeyError:\n    sla = None\nsla",
    ),
    (
        "results annotated as list[dict]",
        "from tools import helpdesk\ntickets: list[dict] = helpdesk.list_tickets(office='Paris')\nlen(tickets)",
    ),
    (
        "the best so far kept as dict | None",
        "from tools import helpdesk\nbest: dict | None = None\nfor o in helpdesk.list_offices():\n"
        "    if best is None or o['staff'] > best['staff']:\n        best = o\nbest['city'] if best else ''",
    ),
    (
        "an attribute set on the snippet's class outside its body",
        "from tools import helpdesk\nclass Cfg:\n    city = 'Paris'\nCfg.limit = 2\n"
        "len(helpdesk.list_tickets(office=Cfg.city)[:Cfg.limit])",
    ),
    (
        "a key held in a name, tested with get",
        "from tools import helpdesk\no = helpdesk.list_offices()[0]\nk = 'region'\no[k] if o.get(k) else None",
    ),
    (
        "keys tested with all() over a tuple",
        "from tools import helpdesk\no = helpdesk.list_offices()[0]\n"
        "o['region'] if all(k in o for k in ('region',)) else None",
    ),
    (
        "a key tested by a mapping pattern",
        "from tools import helpdesk\no = helpdesk.list_offices()[0]\nmatch o:\n"
        "    case {'region': _}:\n        out = o['region']\n    case _:\n        out = None\nout",
    ),
    (
        "a key tested by a helper",
        "from tools import helpdesk\ndef has(d, k):\n    return k in d\no = helpdesk.list_offices()[0]\n"
        "o['region'] if has(o, 'region') else None",
    ),
    (
        "a tool tested for by the end of its id",
        "from tools import helpdesk\nhits = search_tools('incidents')['hits']\n"
        "helpdesk.nope() if any(h['id'].endswith(':nope') for h in hits) else None",
    ),
    (
        "a lambda reading a key, called inside a wrapper's try",
        "from tools import helpdesk\no = helpdesk.list_offices()[0]\ndef safe(fn):\n    try:\n        return fn()\n"
        "    except KeyError:\n        return None\nsafe(lambda: o['region'])",
    ),
]
"""Correct snippets in module style: (name, code)."""

LITERAL_IDIOMS: list[tuple[str, str]] = [
    (
        "a lambda called inside a wrapper's try",
        "def safe(fn):\n    try:\n        return fn()\n    except ToolError:\n"
        "        return None\nsafe(lambda: run_tool('helpdesk:nope'))",
    ),
    (
        "a function handed to a loop that calls it inside try",
        "def a():\n    return run_tool('helpdesk:nope')\nfor f in (a,):\n    try:\n"
        "        out = f()\n    except ToolError:\n        out = None\nout",
    ),
    (
        "run_tool with a dict built before",
        "args = {'office': 'Paris'}\nargs['status'] = 'closed'\nlen(run_tool('helpdesk:list_tickets', args))",
    ),
    (
        "run_tool with a computed id",
        "tool = 'helpdesk:' + 'on_call'\n[e['name'] for e in run_tool(tool, {'office': 'Tokyo'})]",
    ),
    (
        "run_tools over a built list",
        "calls = [('helpdesk:on_call', {'office': o['city']}) for o in run_tool('helpdesk:list_offices')]\n"
        "sum(len(r) for r in run_tools(calls))",
    ),
    (
        "run_tools with literal pairs",
        "a, b = run_tools([('git:git_status', {'repo_path': '/home/user/project'}), "
        "('filesystem:list_allowed_directories', {})])\n[a.splitlines()[0], b['content'].splitlines()[0]]",
    ),
    (
        "run_tool keywords and dict",
        "r = run_tool('time:convert_time', {'source_timezone': 'UTC', 'time': '12:00'}, target_timezone='Asia/Tokyo')\n"
        "r['target']['datetime'][11:16]",
    ),
    (
        "gather run_tool_async",
        "import asyncio\nzones = ['UTC', 'Asia/Tokyo', 'Europe/Paris']\n"
        "res = await asyncio.gather(*[run_tool_async('time:get_current_time', {'timezone': z}) for z in zones])\n"
        "[r['timezone'] for r in res]",
    ),
    (
        "json text to arguments",
        'import json\nspec = json.loads(\'{"repo_path": "/home/user/project", "max_count": 1}\')\n'
        "run_tool('git:git_log', spec).count('Commit:')",
    ),
    (
        "error info of a bad id",
        "try:\n    run_tool('helpdesk:nope', {})\nexcept ToolError as e:\n    code = tool_error_info(e)['code']\ncode",
    ),
    (
        "search then call",
        "hits = search_tools('current time in a timezone', limit=3)\n"
        "tid = [h['id'] for h in hits['hits'] if h['id'].endswith('get_current_time')][0]\n"
        "run_tool(tid, {'timezone': 'UTC'})['timezone']",
    ),
    (
        "describe then call",
        "doc = describe_tool('memory:read_graph')\nif 'read_graph' in str(doc):\n"
        "    g = run_tool('memory:read_graph', {})\nlen(g['entities'])",
    ),
]
"""Correct snippets written in the ``run_tool`` style only (computed ids, ``run_tools``, the other globals)."""


class _ToRunTool(ast.NodeTransformer):
    """Module-style calls → ``run_tool("ns:name", {...})`` (imports of ``tools`` dropped)."""

    def __init__(self, resolve: Callable[[str, str], tuple[str, bool] | None], modules: set[str]) -> None:
        self._resolve = resolve
        self._modules = modules

    def visit_ImportFrom(self, node: ast.ImportFrom) -> Any:
        return None if (node.module or "").split(".")[0] == "tools" else node

    def visit_Call(self, node: ast.Call) -> Any:
        self.generic_visit(node)
        f = node.func
        if not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in self._modules):
            return node
        found = self._resolve(f.value.id, f.attr)
        if found is None:
            return node
        tool_id, awaitable = found
        keys: list[ast.expr | None] = []
        values: list[ast.expr] = []
        for k in node.keywords:
            keys.append(None if k.arg is None else ast.Constant(k.arg))
            values.append(k.value)
        args: list[ast.expr] = [ast.Constant(tool_id), ast.Dict(keys=keys, values=values), *node.args]
        name = "run_tool_async" if awaitable else "run_tool"
        return ast.copy_location(ast.Call(func=ast.Name(name, ast.Load()), args=args, keywords=[]), node)


def literal_style(code: str, resolve: Callable[[str, str], tuple[str, bool] | None]) -> str:
    """The same program with ``run_tool`` calls: ``resolve(module, function)`` gives ``(tool id, awaitable)``."""
    tree = _parse(code)
    assert tree is not None, code
    modules = {
        a.asname or a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.module == "tools"
        for a in n.names
    }
    new = ast.fix_missing_locations(_ToRunTool(resolve, modules).visit(tree))
    return ast.unparse(new)


# ---------------------------------------------------------------------------------------------
# Broken snippets: one mistake each, of every kind the check catches, in realistic programs (a
# call that works usually comes first, so that "caught before any call" means something).
# (name, code, kind); the argument kinds are written in module style and given in the run_tool
# style too by ``literal_style``; ``LITERAL_BROKEN`` has the kinds only that style can show.

BROKEN_ARGUMENTS: list[tuple[str, str, str]] = [
    (
        "misspelt required parameter",
        "from tools import git\nst = git.git_status(repo_path='/home/user/project')\n"
        "log = git.git_log(repo_pth='/home/user/project', max_count=3)",
        "misspelt_parameter",
    ),
    (
        "misspelt optional parameter",
        "from tools import git\nst = git.git_status(repo_path='/home/user/project')\n"
        "log = git.git_log(repo_path='/home/user/project', max_cont=3)",
        "misspelt_parameter",
    ),
    (
        "camelCase name in snake case",
        "from tools import memory\ng = memory.read_graph()\nmemory.delete_entities(entity_names=['Ada'])",
        "misspelt_parameter",
    ),
    (
        "parameter of another tool",
        "from tools import filesystem\nx = filesystem.list_allowed_directories()\n"
        "filesystem.read_text_file(path='/data/notes.txt', lines=3)",
        "misspelt_parameter",
    ),
    (
        "missing required parameter",
        "from tools import helpdesk, time_\noffices = helpdesk.list_offices()\nnow = time_.get_current_time()",
        "missing_parameter",
    ),
    (
        "missing one of two",
        "from tools import filesystem\nx = filesystem.list_directory(path='/data')\n"
        "filesystem.write_file(path='/data/out.txt')",
        "missing_parameter",
    ),
    (
        "missing in a loop",
        "from tools import git\nrepo = '/home/user/project'\nfor f in ['a.txt', 'b.txt']:\n"
        "    git.git_status(repo_path=repo)\n    git.git_add(files=[f])",
        "missing_parameter",
    ),
    (
        "number where a string goes",
        "from tools import helpdesk\nts = helpdesk.list_tickets(office='Paris')\nhelpdesk.on_call(office=3)",
        "wrong_type",
    ),
    (
        "string where a number goes",
        "from tools import git\nst = git.git_status(repo_path='/home/user/project')\n"
        "git.git_log(repo_path='/home/user/project', max_count='ten')",
        "wrong_type",
    ),
    (
        "string where a list goes",
        "from tools import git\nst = git.git_status(repo_path='/home/user/project')\n"
        "git.git_add(repo_path='/home/user/project', files='README.md')",
        "wrong_type",
    ),
    (
        "list where a string goes",
        "from tools import memory\ng = memory.read_graph()\nmemory.search_nodes(query=['billing', 'Ada'])",
        "wrong_type",
    ),
    (
        "string where a bool goes",
        "from tools import filesystem\nx = filesystem.list_directory(path='/data')\n"
        "filesystem.edit_file(path='/data/notes.txt', edits=[{'oldText': 'a', 'newText': 'b'}], dryRun='yes')",
        "wrong_type",
    ),
    (
        "empty list where one is needed",
        "from tools import git\nst = git.git_status(repo_path='/home/user/project')\n"
        "git.git_add(repo_path='/home/user/project', files=[])",
        "wrong_type",
    ),
    (
        "value outside the enum",
        "from tools import helpdesk\nts = helpdesk.list_tickets(office='Paris')\n"
        "helpdesk.list_tickets(office='Paris', status='pending')",
        "enum_value",
    ),
    (
        "value outside the enum, in the branch its constant takes",
        "from tools import helpdesk\nts = helpdesk.list_tickets(office='Paris')\nSTATUS = 'pending'\n"
        "if STATUS == 'all':\n    n = len(ts)\n"
        "else:\n    n = len(helpdesk.list_tickets(office='Paris', status=STATUS))",
        "enum_value",
    ),
    (
        "sort order outside the enum",
        "from tools import filesystem\nx = filesystem.list_allowed_directories()\n"
        "filesystem.list_directory_with_sizes(path='/data', sortBy='date')",
        "enum_value",
    ),
    (
        "city outside the enum",
        "from tools import everything\ne = "
        "everything.echo(message='hi')\neverything.get_structured_content(location='Boston')",
        "enum_value",
    ),
    (
        "item without a required key",
        "from tools import memory\ng = memory.read_graph()\n"
        "memory.create_entities(entities=[{'name': 'cache', 'observations': ['redis']}])",
        "nested_literal",
    ),
    (
        "item key misspelt",
        "from tools import memory\ng = memory.read_graph()\n"
        "memory.create_relations(relations=[{'from': 'Ada', 'to': 'billing', 'relation_type': 'owns'}])",
        "nested_literal",
    ),
    (
        "item value of the wrong type",
        "from tools import memory\ng = memory.read_graph()\n"
        "memory.add_observations(observations=[{'entityName': 'Ada', 'contents': 'likes tea'}])",
        "nested_literal",
    ),
    (
        "edit without newText",
        "from tools import filesystem\nx = filesystem.list_directory(path='/data')\n"
        "filesystem.edit_file(path='/data/notes.txt', edits=[{'oldText': 'alpha'}])",
        "nested_literal",
    ),
    (
        "entities bound before, key missing",
        "from tools import memory\ng = memory.read_graph()\n"
        "ents = [{'name': 'cache', 'entityType': 'service'}]\nmemory.create_entities(entities=ents)",
        "nested_literal",
    ),
    (
        "known part of a built item",
        "from tools import memory, helpdesk\nfor o in helpdesk.list_offices()[:2]:\n"
        "    memory.create_entities(entities=[{'name': o['city'], 'entityType': 'office', 'observations': 'none'}])",
        "nested_literal",
    ),
]
"""Argument mistakes, module style (``literal_style`` gives the ``run_tool`` form)."""

BROKEN_MODULE: list[tuple[str, str, str]] = [
    (
        "function tried in a try whose handler catches another error",
        "try:\n    from tools.memory import read_graph_v2 as read_graph\nexcept ModuleNotFoundError:\n"
        "    from tools.memory import read_graph\ng = read_graph()",
        "unknown_tool",
    ),
    (
        "unknown function",
        "from tools import git\nst = "
        "git.git_status(repo_path='/home/user/project')\ngit.git_commits(repo_path='/home/user/project')",
        "unknown_tool",
    ),
    (
        "function of another server",
        "from tools import filesystem\nx = "
        "filesystem.list_directory(path='/data')\nfilesystem.git_status(repo_path='/data')",
        "unknown_tool",
    ),
    (
        "function imported by name",
        "from tools.memory import read_graph, search_node\ng = read_graph()\nsearch_node(query='x')",
        "unknown_tool",
    ),
    (
        "unknown module",
        "from tools import memory, gitt\ng = memory.read_graph()\ngitt.git_status(repo_path='/home/user/project')",
        "unknown_module",
    ),
    (
        "module named like its server command",
        "from tools import helpdesk, mcp_server_time\nx = helpdesk.list_offices()\n"
        "mcp_server_time.get_current_time(timezone='UTC')",
        "unknown_module",
    ),
    (
        "positional argument",
        "from tools import filesystem\nx = "
        "filesystem.list_allowed_directories()\nfilesystem.read_text_file('/data/notes.txt')",
        "positional",
    ),
    (
        "positional in a helper",
        "from tools import helpdesk\n\ndef count(city):\n    return len(helpdesk.list_tickets(city))\n\n"
        "x = helpdesk.list_offices()\ncount('Paris')",
        "positional",
    ),
    (
        "unknown key of a result",
        "from tools import memory\ng = memory.read_graph()\n[e['type'] for e in g['entities']]",
        "typed_result",
    ),
    (
        "unknown key of a nested result",
        "from tools import time_\nr = time_.convert_time(source_timezone='UTC', time='08:00', "
        "target_timezone='Asia/Tokyo')\n"
        "r['target']['date']",
        "typed_result",
    ),
    (
        "method a result's field does not have",
        "from tools import filesystem\ntext = filesystem.read_text_file(path='/data/notes.txt')\n"
        "text['content'].splitline()",
        "typed_result",
    ),
    (
        "result used as a list",
        "from tools import memory\ng = memory.read_graph()\ng[0]['name']",
        "typed_result",
    ),
    (
        "result field added to a number",
        "from tools import everything\nw = everything.get_structured_content(location='Chicago')\nw['conditions'] + 1",
        "typed_result",
    ),
    (
        "attribute access on a result",
        "from tools import time_\nnow = time_.get_current_time(timezone='UTC')\nnow.datetime",
        "typed_result",
    ),
]
"""Mistakes only the module style shows (a module's functions, positional arguments, typed results)."""

LITERAL_BROKEN: list[tuple[str, str, str]] = [
    (
        "misspelt tool name",
        "st = run_tool('git:git_status', {'repo_path': '/home/user/project'})\n"
        "run_tool('git:git_logs', {'repo_path': '/home/user/project'})",
        "unknown_tool",
    ),
    (
        "tool of another namespace",
        "x = run_tool('filesystem:list_allowed_directories')\nrun_tool('filesystem:read_graph', {})",
        "unknown_tool",
    ),
    (
        "unknown namespace",
        "x = run_tool('helpdesk:list_offices')\nrun_tool('mcp-server-time:get_current_time', {'timezone': 'UTC'})",
        "unknown_tool",
    ),
    (
        "unknown tool in run_tools",
        "x = run_tool('helpdesk:list_offices')\n"
        "run_tools([('helpdesk:on_call', {'office': 'Paris'}), ('helpdesk:oncall', {'office': 'Tokyo'})])",
        "unknown_tool",
    ),
    (
        "bad argument in run_tools",
        "x = run_tool('helpdesk:list_offices')\n"
        "run_tools([('helpdesk:on_call', {'office': 'Paris'}), ('helpdesk:on_call', {'ofice': 'Tokyo'})])",
        "misspelt_parameter",
    ),
    (
        "keyword misspelt",
        "x = run_tool('helpdesk:list_offices')\nrun_tool('helpdesk:list_tickets', office='Paris', statu='open')",
        "misspelt_parameter",
    ),
    (
        "keyword of the wrong type",
        "x = run_tool('helpdesk:list_offices')\nrun_tool('time:get_current_time', timezone=0)",
        "wrong_type",
    ),
    (
        "dict bound before, key misspelt",
        "x = run_tool('helpdesk:list_offices')\nargs = {'repo_path': '/home/user/project', 'max_cont': 2}\n"
        "run_tool('git:git_log', args)",
        "misspelt_parameter",
    ),
]
"""Mistakes written in the ``run_tool`` style only."""


# ---------------------------------------------------------------------------------------------
# The run_tool corpus: programs written the way models write them when they call tools by id
# (``run_tool("ns:name", {...})``, ``run_tool_async``, ``run_tools``) over the demo and the real
# servers' tools, correct ones and broken ones. Written from the tools' docs and the mistakes
# models make, not from what the check handles: a broken one that the check misses is counted.

RUN_TOOL_CORRECT: list[tuple[str, str]] = [
    (
        "header parameters given as keywords from a dict, by the signature's names",
        'auth = {"appid": "k1", "x_api_key": "k1"}\nw = run_tool("pets:weather", city="Paris", **auth)\n'
        '__out = w["temp_c"]',
    ),
    (
        "arguments dict built before the call",
        'args = {"office": "Paris"}\nargs["status"] = "open"\ntickets = run_tool("helpdesk:list_tickets", args)\n'
        '__out = [t["id"] for t in tickets if t["priority"] == "urgent"]',
    ),
    (
        "entities appended then created",
        'entities = []\nfor name in ["api", "db"]:\n'
        '    entities.append({"name": name, "entityType": "service", "observations": []})\n'
        'res = run_tool("memory:create_entities", {"entities": entities})\n__out = len(res["entities"])',
    ),
    (
        "rows sorted by a negated count",
        'rows = []\nfor o in run_tool("helpdesk:list_offices", {}):\n'
        '    ts = run_tool("helpdesk:list_tickets", {"office": o["city"]})\n'
        '    rows.append({"city": o["city"], "count": len(ts)})\n'
        'rows.sort(key=lambda r: -r["count"])\n__out = rows[0]["city"]',
    ),
    (
        "f-strings over a result",
        'offices = run_tool("helpdesk:list_offices")\n'
        "__out = [f\"{o['city']} ({o['timezone']}): {o['staff']} staff\" for o in offices]",
    ),
    (
        "optional field checked before use",
        'tickets = run_tool("helpdesk:list_tickets", {"office": "Tokyo"})\n'
        'owners = [t["assignee"].title() for t in tickets if t["assignee"]]\n'
        'unassigned = [t["id"] for t in tickets if t["assignee"] is None]\n'
        '__out = {"owners": owners, "unassigned": unassigned}',
    ),
    (
        "date and hour split out of a datetime string",
        'now = run_tool("time:get_current_time", {"timezone": "Europe/Paris"})\n'
        'date, clock = now["datetime"].split("T")\n'
        '__out = {"date": date, "hour": int(clock[:2]), "dst": now["is_dst"]}',
    ),
    (
        "nested result of a conversion",
        'r = run_tool("time:convert_time", {"source_timezone": "UTC", "time": "09:30", '
        '"target_timezone": "America/New_York"})\n'
        "__out = f\"{r['source']['datetime'][11:16]} UTC is {r['target']['datetime'][11:16]} in New York "
        "({r['time_difference']})\"",
    ),
    (
        "fan-out with run_tool_async",
        'import asyncio\noffices = run_tool("helpdesk:list_offices", {})\n'
        'lists = await asyncio.gather(*[run_tool_async("helpdesk:on_call", {"office": o["city"]}) for o in offices])\n'
        '__out = {o["city"]: [e["name"] for e in es] for o, es in zip(offices, lists)}',
    ),
    (
        "fallback file when the first is missing",
        'try:\n    t = run_tool("filesystem:read_text_file", {"path": "/data/missing.md"})\n    text = t["content"]\n'
        'except ToolError:\n    text = run_tool("filesystem:read_text_file", {"path": "/data/README.md"})["content"]\n'
        "__out = text.splitlines()[0]",
    ),
    (
        "authors counted from a text log",
        'log = run_tool("git:git_log", {"repo_path": "/home/user/project", "max_count": 3})\nauthors = {}\n'
        'for line in log.splitlines():\n    if line.startswith("Author:"):\n'
        '        who = line.split(":", 1)[1].strip()\n        authors[who] = authors.get(who, 0) + 1\n'
        "__out = sorted(authors.items(), key=lambda kv: -kv[1])",
    ),
    (
        "entities grouped by type with setdefault",
        'g = run_tool("memory:read_graph", {})\nkinds = {}\nfor e in g["entities"]:\n'
        '    kinds.setdefault(e["entityType"], []).append(e["name"])\n__out = {k: len(v) for k, v in kinds.items()}',
    ),
    (
        "relations read by their from key",
        'g = run_tool("memory:read_graph")\n'
        "__out = [f\"{r['from']} -> {r['to']} ({r['relationType']})\" for r in g[\"relations\"]]",
    ),
    (
        "float arithmetic on a structured result",
        'w = run_tool("everything:get-structured-content", {"location": "Chicago"})\n'
        'fahrenheit = w["temperature"] * 9 / 5 + 32\n'
        "__out = f\"{w['conditions']}, {fahrenheit:.1f}F, humidity {w['humidity']}%\"",
    ),
    (
        "oldest ticket assigned to the first on call",
        'tickets = run_tool("helpdesk:list_tickets", {"office": "Paris", "status": "open"})\n'
        'oldest = max(tickets, key=lambda t: t["age_days"])\n'
        'engineer = run_tool("helpdesk:on_call", {"office": "Paris"})[0]\n'
        '__out = run_tool("helpdesk:assign_ticket", {"ticket_id": oldest["id"], "engineer": engineer["name"]})',
    ),
    (
        "keyword arguments",
        'people = run_tool("helpdesk:on_call", office="Nairobi")\n__out = [p["name"] for p in people]',
    ),
    (
        "payload completed with update",
        'payload = {"path": "/data/report.md"}\npayload.update({"content": "# Report\\n"})\n'
        'run_tool("filesystem:write_file", payload)\n'
        '__out = run_tool("filesystem:read_text_file", {"path": "/data/report.md"})["content"]',
    ),
    (
        "average age over every office",
        'total = 0\ncount = 0\nfor o in run_tool("helpdesk:list_offices"):\n'
        '    for t in run_tool("helpdesk:list_tickets", {"office": o["city"]}):\n'
        '        total += t["age_days"]\n        count += 1\n__out = round(total / count, 1) if count else None',
    ),
    (
        "skills gathered in a set",
        'skills = set()\nfor e in run_tool("helpdesk:on_call", {"office": "Paris"}):\n'
        '    skills |= set(e["skills"])\n__out = ", ".join(sorted(skills))',
    ),
    (
        "get with a default on a result",
        't = run_tool("helpdesk:list_tickets", {"office": "Paris"})[0]\n__out = t.get("assignee") or "unassigned"',
    ),
    (
        "search result checked before it is read",
        'hits = run_tool("memory:search_nodes", {"query": "billing"})\nif hits["entities"]:\n'
        '    first = hits["entities"][0]\n    __out = first["name"] + ": " + "; ".join(first["observations"])\n'
        'else:\n    __out = "nothing"',
    ),
    (
        "todos of a file added as observations",
        'text = run_tool("filesystem:read_text_file", {"path": "/data/notes.txt"})["content"]\n'
        'todos = [l.split("TODO:", 1)[1].strip() for l in text.splitlines() if "TODO:" in l]\n'
        'obs = [{"entityName": "billing", "contents": todos}]\n'
        'res = run_tool("memory:add_observations", {"observations": obs})\n'
        '__out = res["results"][0]["addedObservations"]',
    ),
    (
        "json inside a text result",
        'import json\ntree = json.loads(run_tool("filesystem:directory_tree", {"path": "/data"})["content"])\n'
        '__out = sorted(n["name"] for n in tree)',
    ),
    (
        "two results unpacked from a slice",
        'first, second = run_tool("helpdesk:list_offices")[:2]\n__out = [first["city"], second["city"]]',
    ),
    (
        "numbered list printed",
        'n = 0\nfor i, o in enumerate(run_tool("helpdesk:list_offices")):\n'
        "    println(f\"{i + 1}. {o['city']}\")\n    n = i + 1\n__out = n",
    ),
    (
        "helper function around a call",
        'def urgent_count(city):\n    return sum(1 for t in run_tool("helpdesk:list_tickets", {"office": city}) '
        'if t["priority"] == "urgent")\n\n__out = {c: urgent_count(c) for c in ["Paris", "Tokyo"]}',
    ),
    (
        "tool chosen at run time",
        'tool = "helpdesk:on_call" if input else "helpdesk:list_offices"\n'
        'r = run_tool(tool, {"office": "Paris"} if input else {})\n__out = len(r)',
    ),
    (
        "result changed before it is returned",
        'w = run_tool("everything:get-structured-content", {"location": "New York"})\nw["city"] = "New York"\n'
        'w["temperature"] = round(w["temperature"])\n__out = w',
    ),
    (
        "sort with a tuple key in place",
        'ts = run_tool("helpdesk:list_tickets", {"office": "New York"})\n'
        'order = {"urgent": 0, "normal": 1, "low": 2}\n'
        'ts.sort(key=lambda t: (order[t["priority"]], -t["age_days"]))\n__out = [t["id"] for t in ts[:3]]',
    ),
    (
        "modified files staged",
        'st = run_tool("git:git_status", {"repo_path": "/home/user/project"})\n'
        'changed = [l.split(":", 1)[1].strip() for l in st.splitlines() if "modified:" in l]\n'
        'if changed:\n    run_tool("git:git_add", {"repo_path": "/home/user/project", "files": changed})\n'
        "__out = changed",
    ),
    (
        "clock of several zones in a dict",
        'zones = ["UTC", "Asia/Tokyo"]\nout = {}\nfor z in zones:\n'
        '    out[z] = run_tool("time:get_current_time", {"timezone": z})["datetime"][11:16]\n__out = out',
    ),
    (
        "boolean field in a condition",
        'now = run_tool("time:get_current_time", timezone="Europe/London")\n'
        '__out = "summer time" if now["is_dst"] else "winter time"',
    ),
    (
        "words of a file",
        'c = run_tool("filesystem:read_text_file", {"path": "/data/README.md"})\nwords = c["content"].split()\n'
        "__out = len(words)",
    ),
    (
        "best so far, None at first",
        'best = None\nfor o in run_tool("helpdesk:list_offices"):\n'
        '    if best is None or o["staff"] > best["staff"]:\n        best = o\n'
        '__out = best["city"] if best else None',
    ),
    (
        "results of run_tools unpacked",
        'offices, now = run_tools([("helpdesk:list_offices", {}), ("time:get_current_time", {"timezone": "UTC"})])\n'
        '__out = [len(offices), now["timezone"]]',
    ),
    (
        "tickets of two offices extended into one list",
        'all_tickets = []\nfor city in ["Paris", "Tokyo"]:\n'
        '    all_tickets.extend(run_tool("helpdesk:list_tickets", {"office": city}))\n'
        '__out = len([t for t in all_tickets if t["age_days"] > 3])',
    ),
    (
        "a number made text before joining",
        'o = run_tool("helpdesk:list_offices")[0]\n__out = o["city"] + " has " + str(o["staff"]) + " people"',
    ),
    (
        "result list grown with append",
        'rs = run_tool("helpdesk:on_call", {"office": "Paris"})\n'
        'rs.append({"name": "Backup", "office": "Paris", "skills": []})\n__out = [r["name"] for r in rs]',
    ),
    (
        "result lists added together",
        'a = run_tool("helpdesk:on_call", {"office": "Paris"})\nb = run_tool("helpdesk:on_call", {"office": "Tokyo"})\n'
        "__out = len(a + b)",
    ),
    (
        "dict of results keyed by city",
        'by_city = {o["city"]: o for o in run_tool("helpdesk:list_offices")}\n__out = by_city["Tokyo"]["staff"] * 2',
    ),
    (
        "timestamp in a commit message",
        'stamp = run_tool("time:get_current_time", {"timezone": "UTC"})["datetime"][:10]\n'
        'run_tool("git:git_add", {"repo_path": "/home/user/project", "files": ["README.md"]})\n'
        '__out = run_tool("git:git_commit", {"repo_path": "/home/user/project", "message": f"Docs {stamp}"})',
    ),
    (
        "awaited one at a time",
        'r = await run_tool_async("time:get_current_time", {"timezone": "Asia/Tokyo"})\n__out = r["day_of_week"]',
    ),
    (
        "observation strings lowered and filtered",
        'g = run_tool("memory:open_nodes", {"names": ["Ada", "billing"]})\n'
        '__out = [o.lower() for e in g["entities"] for o in e["observations"] if "billing" in o.lower()]',
    ),
]
"""Correct programs in the ``run_tool`` style: (name, code)."""

RUN_TOOL_BROKEN: list[tuple[str, str, str]] = [
    (
        "header parameter misspelt in a dict given as keywords",
        'auth = {"appid": "k1", "x_api_kye": "k1"}\nw = run_tool("pets:weather", city="Paris", **auth)\n'
        '__out = w["temp_c"]',
        "misspelt_parameter",
    ),
    (
        "ticket field that does not exist",
        'tickets = run_tool("helpdesk:list_tickets", {"office": "Paris"})\n'
        'urgent = [t["id"] for t in tickets if t["severity"] == "urgent"]',
        "typed_result",
    ),
    (
        "datetime string used as a date",
        'now = run_tool("time:get_current_time", {"timezone": "Europe/Paris"})\nhour = now["datetime"].hour',
        "typed_result",
    ),
    (
        "nested key of a conversion misnamed",
        'r = run_tool("time:convert_time", {"source_timezone": "UTC", "time": "09:30", '
        '"target_timezone": "Asia/Tokyo"})\n__out = r["target"]["time"]',
        "typed_result",
    ),
    (
        "number joined to text without str",
        'o = run_tool("helpdesk:list_offices")[0]\n__out = o["city"] + " has " + o["staff"] + " people"',
        "typed_result",
    ),
    (
        "result dict read as an attribute",
        'res = run_tool("filesystem:read_text_file", {"path": "/data/notes.txt"})\n__out = res.content',
        "typed_result",
    ),
    (
        "result dict used as its text",
        'text = run_tool("filesystem:read_text_file", {"path": "/data/notes.txt"})\n__out = text.splitlines()',
        "typed_result",
    ),
    (
        "age in days used as a timedelta",
        'ts = run_tool("helpdesk:list_tickets", {"office": "Tokyo"})\n__out = [t["age_days"].days for t in ts]',
        "typed_result",
    ),
    (
        "entity type under another name",
        'g = run_tool("memory:read_graph", {})\n__out = [e["type"] for e in g["entities"]]',
        "typed_result",
    ),
    (
        "relation type in snake case",
        'g = run_tool("memory:read_graph")\n__out = [r["relation_type"] for r in g["relations"]]',
        "typed_result",
    ),
    (
        "awaited result's key misnamed",
        'import asyncio\nrs = await asyncio.gather(run_tool_async("time:get_current_time", {"timezone": "UTC"}))\n'
        '__out = rs[0]["zone"]',
        "typed_result",
    ),
    (
        "looping over a count",
        'o = run_tool("helpdesk:list_offices")[0]\nseats = []\nfor i in o["staff"]:\n    seats.append(i)',
        "typed_result",
    ),
    (
        "datetime string compared with a number",
        'now = run_tool("time:get_current_time", {"timezone": "UTC"})\n'
        '__out = "late" if now["datetime"] > 17 else "early"',
        "typed_result",
    ),
    (
        "age added to a unit",
        't = run_tool("helpdesk:list_tickets", {"office": "Paris"})[0]\n__out = t["age_days"] + " days"',
        "typed_result",
    ),
    (
        "temperature rounded as a method",
        'w = run_tool("everything:get-structured-content", {"location": "Chicago"})\n__out = w["temperature"].round(1)',
        "typed_result",
    ),
    (
        "is_dst read as text",
        'now = run_tool("time:get_current_time", timezone="UTC")\n__out = now["is_dst"].lower() == "true"',
        "typed_result",
    ),
    (
        "result of run_tools read by a key it lacks",
        'offices, now = run_tools([("helpdesk:list_offices", {}), ("time:get_current_time", {"timezone": "UTC"})])\n'
        "__out = f\"{len(offices)} offices, {now['time']}\"",
        "typed_result",
    ),
    (
        "enum value the tool does not have",
        'offices = run_tool("helpdesk:list_offices")\n'
        'done = run_tool("helpdesk:list_tickets", {"office": "Paris", "status": "pending"})',
        "enum_value",
    ),
    (
        "argument key misspelt",
        'offices = run_tool("helpdesk:list_offices")\nengineers = run_tool("helpdesk:on_call", {"ofice": "Paris"})',
        "misspelt_parameter",
    ),
    (
        "required argument left out",
        'offices = run_tool("helpdesk:list_offices")\nnow = run_tool("time:get_current_time", {})',
        "missing_parameter",
    ),
    (
        "tool name misspelt",
        'offices = run_tool("helpdesk:list_offices")\ntickets = run_tool("helpdesk:list_ticket", {"office": "Paris"})',
        "unknown_tool",
    ),
    (
        "entity without its type",
        'g = run_tool("memory:read_graph")\n'
        'run_tool("memory:create_entities", {"entities": [{"name": "cache", "observations": ["redis"]}]})',
        "nested_literal",
    ),
    (
        "status given to the arguments dict afterwards",
        'offices = run_tool("helpdesk:list_offices")\nargs = {"office": "Paris"}\nargs["status"] = "pending"\n'
        'tickets = run_tool("helpdesk:list_tickets", args)',
        "enum_value",
    ),
    (
        "list result looked up by name",
        'offices = run_tool("helpdesk:list_offices")\n__out = offices["Paris"]["staff"]',
        "typed_result",
    ),
    (
        "len of a number",
        'o = run_tool("helpdesk:list_offices")[0]\n__out = len(o["staff"])',
        "typed_result",
    ),
    (
        "sorted by a key the tickets lack",
        'ts = run_tool("helpdesk:list_tickets", {"office": "Paris"})\n'
        '__out = [t["id"] for t in sorted(ts, key=lambda t: t["created"])]',
        "typed_result",
    ),
]
"""Broken programs in the ``run_tool`` style, one mistake each, every one failing when run: (name, code, kind)."""
