"""The embedded demo catalog and the ``toolcode demo`` walkthrough (no config, no network)."""

from toolcode.demo._catalog import OFFICES, demo_backends, helpdesk_backend, time_backend
from toolcode.demo._walkthrough import DEMO_SNIPPET, DEMO_TASK, demo_toolbox, run_demo

__all__ = [
    "DEMO_SNIPPET",
    "DEMO_TASK",
    "OFFICES",
    "demo_backends",
    "demo_toolbox",
    "helpdesk_backend",
    "run_demo",
    "time_backend",
]
