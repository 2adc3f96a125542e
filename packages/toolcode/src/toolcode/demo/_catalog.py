"""The demo catalog: a small help-desk tool set (local functions) plus the real ``mcp-server-time``.

The data is generated from a fixed seed, so every run shows the same offices and tickets;
only the clock (from the time server) moves.
"""

from __future__ import annotations

import random
import sys
from typing import Literal

from typing_extensions import TypedDict

from toolrun import LocalBackend, MCPBackend, StdioServerConfig

__all__ = ["OFFICES", "demo_backends", "helpdesk_backend", "time_backend"]


class Office(TypedDict):
    """One office of the company."""

    city: str
    timezone: str
    """IANA time zone name."""
    staff: int


class Ticket(TypedDict):
    """A help-desk ticket."""

    id: str
    office: str
    priority: Literal["low", "normal", "urgent"]
    title: str
    description: str
    age_days: int
    assignee: str | None


class Engineer(TypedDict):
    """An on-call engineer."""

    name: str
    office: str
    skills: list[str]


OFFICES: tuple[Office, ...] = (
    {"city": "Paris", "timezone": "Europe/Paris", "staff": 42},
    {"city": "New York", "timezone": "America/New_York", "staff": 75},
    {"city": "Tokyo", "timezone": "Asia/Tokyo", "staff": 31},
    {"city": "Sydney", "timezone": "Australia/Sydney", "staff": 18},
    {"city": "Sao Paulo", "timezone": "America/Sao_Paulo", "staff": 24},
    {"city": "Nairobi", "timezone": "Africa/Nairobi", "staff": 12},
)

_SUBJECTS = (
    "VPN drops every few minutes",
    "Laptop will not wake from sleep",
    "Printer on floor 3 jams",
    "Cannot access the shared drive",
    "Password reset link expired",
    "Video calls freeze when screen sharing",
    "New hire needs accounts",
    "Monitor flickers on dock",
    "Calendar invites arrive twice",
    "Build server disk almost full",
    "Badge reader at the back door fails",
    "Email attachments blocked",
)
_DETAILS = (
    "Reported by several people since Monday; restarting helps for an hour or so.",
    "Happens on the 14-inch models only, after the latest firmware update was installed.",
    "The user has already tried the steps in the knowledge-base article without success.",
    "Blocking the team's release work; please prioritise if possible.",
    "Screenshots and logs are attached to the original email thread.",
)
_NAMES = ("Ada", "Grace", "Linus", "Ken", "Barbara", "Guido", "Margaret", "Dennis")


def _tickets(city: str) -> list[Ticket]:
    rng = random.Random(f"tickets:{city}")
    out: list[Ticket] = []
    for i in range(rng.randint(9, 14)):
        prio: Literal["low", "normal", "urgent"] = rng.choice(("low", "normal", "normal", "urgent"))
        out.append(
            {
                "id": f"{city[:3].upper()}-{1000 + i * 7 + rng.randint(0, 6)}",
                "office": city,
                "priority": prio,
                "title": rng.choice(_SUBJECTS),
                "description": " ".join(rng.sample(_DETAILS, 2)),
                "age_days": rng.randint(0, 30),
                "assignee": rng.choice((*_NAMES, None, None)),
            }
        )
    return out


def helpdesk_backend() -> LocalBackend:
    """The local help-desk tools (namespace ``helpdesk``)."""
    local = LocalBackend()

    @local.tool(namespace="helpdesk", inline=True, tags=("offices", "company"))
    def list_offices() -> list[Office]:
        """List every office of the company with its city, IANA time zone and head count."""
        return [Office(**o) for o in OFFICES]  # copies: a caller may change them

    @local.tool(namespace="helpdesk", inline=True, tags=("tickets", "support"))
    def list_tickets(office: str, status: Literal["open", "closed"] = "open") -> list[Ticket]:
        """List the help-desk tickets of one office, newest first.

        Args:
            office: City of the office, as returned by list_offices.
            status: Ticket status to list.
        """
        if office not in {o["city"] for o in OFFICES}:
            raise ValueError(f"no office in {office!r}; call list_offices for the cities")
        tickets = _tickets(office)
        return tickets if status == "open" else tickets[:2]

    @local.tool(namespace="helpdesk", inline=True, tags=("on-call", "people"))
    def on_call(office: str) -> list[Engineer]:
        """Who is on call for an office right now.

        Args:
            office: City of the office.
        """
        rng = random.Random(f"oncall:{office}")
        return [
            {"name": n, "office": office, "skills": rng.sample(["network", "hardware", "accounts"], 2)}
            for n in rng.sample(_NAMES, 2)
        ]

    @local.tool(namespace="helpdesk", inline=True, tags=("tickets", "support"))
    def assign_ticket(ticket_id: str, engineer: str) -> dict[str, str]:
        """Assign a ticket to an engineer (the demo only pretends).

        Args:
            ticket_id: Ticket id, e.g. "PAR-1003".
            engineer: Engineer's name.
        """
        return {"ticket_id": ticket_id, "assignee": engineer, "status": "assigned"}

    return local


def time_backend() -> MCPBackend:
    """The real ``mcp-server-time`` server, started as a child process (namespace ``time``)."""
    config = StdioServerConfig(command=sys.executable, args=("-m", "mcp_server_time", "--local-timezone", "UTC"))
    return MCPBackend("time", config)


def demo_backends() -> list[LocalBackend | MCPBackend]:
    """Every backend of the demo catalog."""
    return [helpdesk_backend(), time_backend()]
