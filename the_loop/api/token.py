"""The operator's credentials for the local API: the token, the board's cookie, and the
single-use codes that open the board.

The token is made once per state root in ``local/api-token`` (mode 0600) and sent as
``Authorization: Bearer <token>``. The cookie's value is derived from the token (an
HMAC), so it proves the same thing without being the token. A code is
``<expiry>.<nonce>.<HMAC of both>``: any holder of the token can mint one (``serve``
prints a link with one), it is good for :data:`CODE_SECONDS`, and the server that
redeems it remembers it, so it opens the board once.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path

from the_loop.errors import TheLoopError
from the_loop.fsio import read_bytes, write_text

#: How long a code that opens the board is good for.
CODE_SECONDS = 600
#: The name of the board's cookie.
COOKIE = "the_loop_board"
_TOKEN_BYTES = 32
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def api_token(path: Path, *, make: bool = False) -> str:
    """The token kept at ``path``; with ``make``, made (0600) when there is none.
    :class:`TheLoopError` (exit 1) when it is missing or not a token the-loop wrote."""
    held = read_bytes(path)
    if (held is None and path.is_symlink()) or (path.exists() and not path.is_file()):
        raise TheLoopError(f"{path} is not a regular file: remove it and start `the-loop serve`")
    if held is not None and stat.S_IMODE(path.stat().st_mode) & 0o077:
        os.chmod(path, 0o600)  # readable by others: the operator's alone again
    if held is None and make and not path.exists():
        write_text(path, secrets.token_urlsafe(_TOKEN_BYTES) + "\n")  # mkstemp: mode 0600
        os.chmod(path, 0o600)
        held = read_bytes(path)
    token = (held or b"").decode("ascii", "replace").strip()
    if len(token) < 32 or not set(token) <= _TOKEN_CHARS:
        raise TheLoopError(
            f"no API token in {path}: `the-loop serve` makes one when it starts"
            if held is None
            else f"{path} does not hold an API token the-loop wrote; remove it and start "
            "`the-loop serve` again to make a new one"
        )
    return token


def cookie_value(token: str) -> str:
    """The board's cookie for ``token``: proof of it, never the token itself."""
    return _sign(token, "board-cookie")


def mint_code(token: str, *, now: float | None = None) -> str:
    """A code that opens the board once within :data:`CODE_SECONDS` of ``now``."""
    expiry = int((time.time() if now is None else now) + CODE_SECONDS)
    nonce = secrets.token_urlsafe(12)
    return f"{expiry}.{nonce}.{_sign(token, f'code:{expiry}:{nonce}')}"


class Codes:
    """The codes one server redeems: each once, and only before its expiry."""

    def __init__(self, token: str, clock: Callable[[], float] = time.time) -> None:
        self._token = token
        self._clock = clock
        self._used: dict[str, int] = {}
        self._lock = threading.Lock()

    def redeem(self, code: str) -> bool:
        """True (once) for a code minted with this token and not expired."""
        expiry_text, _, rest = code.partition(".")
        nonce, _, signature = rest.partition(".")
        if not (expiry_text.isascii() and expiry_text.isdigit()) or not nonce or not signature:
            return False
        expiry, now = int(expiry_text), self._clock()
        expected = _sign(self._token, f"code:{expiry}:{nonce}")
        if not hmac.compare_digest(signature, expected) or now > expiry:
            return False
        with self._lock:  # the server's threads redeem at once: one of them wins a code
            self._used = {used: until for used, until in self._used.items() if until >= now}
            if nonce in self._used:
                return False
            self._used[nonce] = expiry
        return True


def _sign(token: str, what: str) -> str:
    return hmac.new(token.encode(), what.encode(), hashlib.sha256).hexdigest()


__all__ = ["CODE_SECONDS", "COOKIE", "Codes", "api_token", "cookie_value", "mint_code"]
