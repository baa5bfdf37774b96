"""Who may read the API: a ``Host`` the server answers to (checked first: 421), then the
operator's credentials, the token as a bearer or the board's cookie (401)."""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable

from the_loop.api.token import COOKIE, cookie_value
from the_loop.webhook.wire import Head

#: The names a loopback server answers to, whatever it was asked to bind.
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine's loopback."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def allowed_hosts(bound: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The loopback names, the host the server binds, and ``extra`` (lowercased)."""
    return frozenset({*LOOPBACK_NAMES, bound.lower(), *(name.lower() for name in extra)})


def host_of(head: Head) -> str | None:
    """The name the ``Host`` header asks for, its port dropped; None when absent or
    sent more than once or malformed."""
    values = head.values("host")
    if len(values) != 1:
        return None
    value = values[0].strip().lower()
    if value.startswith("["):  # an IPv6 literal: [::1]:7878
        inside, bracket, rest = value[1:].partition("]")
        return inside if bracket and (not rest or rest[1:].isdigit()) else None
    name, colon, port = value.partition(":")
    if colon and not port.isdigit():
        return None
    return name or None


def host_allowed(head: Head, allowed: frozenset[str]) -> bool:
    host = host_of(head)
    return host is not None and host in allowed


def authorized(head: Head, token: str) -> bool:
    """Whether ``head`` carries ``Authorization: Bearer <token>`` or the board's cookie
    (each compared in constant time)."""
    for value in head.values("authorization"):
        scheme, _, given = value.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip(), token):
            return True
    expected = cookie_value(token)
    for header in head.values("cookie"):
        for pair in header.split(";"):
            name, _, given = pair.strip().partition("=")
            if name == COOKIE and hmac.compare_digest(given, expected):
                return True
    return False


__all__ = ["allowed_hosts", "authorized", "host_allowed", "host_of", "is_loopback"]
