"""The environment a stdio server starts with: a minimal set, the networking settings, and its ``env``.

A server does not get this process's whole environment (it holds tokens the server has no
business with) unless its config says ``"inheritEnv": true``. What it does get is enough to run
(:data:`BASE_ENV`) and to reach the network the way the user's own shell does
(:data:`NETWORK_ENV`): servers started through ``uvx`` or ``npx`` download packages before they
speak MCP, and behind a proxy or a company certificate authority they fail without these.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

from toolrun._config import url_secrets
from toolrun._redact import looks_secret, register_secrets

__all__ = ["BASE_ENV", "NETWORK_ENV", "child_env"]

BASE_ENV: Final = (
    "HOME",
    "LOGNAME",
    "USER",
    "PATH",
    "SHELL",
    "TERM",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "TEMP",
    "TMP",
    "SYSTEMROOT",
    "APPDATA",
    "LOCALAPPDATA",
    "USERPROFILE",
    "PATHEXT",
)
"""Enough to find executables, a home directory, temp space and the locale (and their Windows forms)."""

_PROXY: Final = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
_NPM: Final = ("proxy", "https_proxy", "noproxy", "cafile", "ca", "strict_ssl", "registry", "offline")

NETWORK_ENV: Final = (
    # Proxies, in both spellings (curl, Python, Go and uv read the lower-case ones first).
    *_PROXY,
    *(name.lower() for name in _PROXY),
    # Certificate authorities: OpenSSL and Python's ssl, uv (SSL_CERT_FILE, SSL_CERT_DIR); requests;
    # curl; Node (extra CAs, or the system store; NODE_USE_ENV_PROXY makes Node read the proxies).
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "NODE_USE_SYSTEM_CA",
    "NODE_USE_ENV_PROXY",
    # uv / uvx: the system certificate store, hosts allowed without TLS checks, package indexes, offline.
    "UV_SYSTEM_CERTS",
    "UV_NATIVE_TLS",
    "UV_INSECURE_HOST",
    "UV_DEFAULT_INDEX",
    "UV_INDEX",
    "UV_INDEX_URL",
    "UV_EXTRA_INDEX_URL",
    "UV_OFFLINE",
    # pip (and pipx): certificates, proxy, package indexes.
    "PIP_CERT",
    "PIP_CLIENT_CERT",
    "PIP_PROXY",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_TRUSTED_HOST",
    # npm / npx: the same settings as npm_config_* (npm reads either case).
    *(f"npm_config_{name}" for name in _NPM),
    *(f"NPM_CONFIG_{name.upper()}" for name in _NPM),
)
"""What a server (or the package runner in front of it) needs to reach the network as the user's
shell does: proxies, certificate authorities, and the package managers' own settings for them
(indexes and registries included). Credentials beyond what these hold (``NPM_TOKEN``,
``UV_PUBLISH_TOKEN``, API keys) are not passed: give them in the server's ``env``."""


def child_env(
    env: Mapping[str, str], *, inherit: bool = False, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment a stdio server is started with.

    Args:
        env: The server's own ``env`` (wins over everything else).
        inherit: Pass the whole environment (``"inheritEnv": true``).
        environ: This process's environment (default: ``os.environ``).

    Returns:
        :data:`BASE_ENV` and :data:`NETWORK_ENV` as far as they are set (or everything with
        ``inherit``), then ``env``.
    """
    source = os.environ if environ is None else environ
    if inherit:
        out = dict(source)
        # The whole environment goes to the child: its credentials are secrets like the config's.
        register_secrets(v for k, v in out.items() if looks_secret(k))
    else:
        out = {k: source[k] for k in (*BASE_ENV, *NETWORK_ENV) if k in source}
    # A proxy URL may carry a user and password.
    register_secrets(s for v in out.values() if "://" in v for s in url_secrets(v))
    out.update(env)
    return out
