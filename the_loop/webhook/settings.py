"""Where the receiver listens, the path it answers on, and the secret deliveries are signed with."""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

#: The events the receiver keeps in its inbox; anything else is answered 202 and ignored.
HANDLED_EVENTS = (
    "issue_comment",
    "issues",
    "pull_request",
    "pull_request_review",
    "pull_request_review_comment",
    "check_run",
    "status",
)


@dataclass(frozen=True)
class ReceiverSettings:
    """The receiver's address and secret. ``secret`` None: signatures are not checked
    (``--insecure``, which the command allows on a loopback address only)."""

    host: str
    port: int
    path: str
    secret: bytes | None

    @property
    def insecure(self) -> bool:
        return self.secret is None


def url_of(host: str, port: int, path: str) -> str:
    """``http://host:port/path``, an IPv6 address in brackets."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{path}"


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback address (``127.0.0.1``, ``::1``,
    ``localhost`` as this machine resolves it); a name that does not resolve is not."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return False
    addresses = {str(info[4][0]).split("%", 1)[0] for info in found}
    return bool(addresses) and all(ipaddress.ip_address(a).is_loopback for a in addresses)


@dataclass(frozen=True)
class Limits:
    """The receiver's bounds (seconds, counts, bytes)."""

    head_seconds: float = 10.0
    body_seconds: float = 30.0
    write_seconds: float = 10.0
    linger_seconds: float = 2.0
    linger_bytes: int = 32 * 1024 * 1024
    connections: int = 256
    backlog: int = 1024
    body_bytes_in_flight: int = 64 * 1024 * 1024
    threads: int = 8
    status_seconds: float = 1.0
    tick_seconds: float = 2.0
