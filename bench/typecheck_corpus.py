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

from typing import Any

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
        "except ToolError as e:\n    r = error_info(e)['code']\nr",
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
