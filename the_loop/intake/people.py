"""Who may command: the authorized logins, compared case-insensitively, bots, and the
repository permissions that still let a listed login command."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

#: ASCII only: GitHub logins are ASCII, and Unicode case folding would let a look-alike
#: (``K``, the Kelvin sign) match an authorized ``k``.
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
BOT_USER_TYPE = "Bot"
BOT_SUFFIX = "[bot]"
#: The repository permissions that may command (``maintain`` is also GitHub's ``write``).
WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})


def login_key(login: str) -> str:
    """``login`` as compared: surrounding space dropped, ASCII letters lower-cased."""
    return login.strip().translate(_ASCII_LOWER)


def may_write(permission: str) -> bool:
    """True for a repository permission that lets a listed login command."""
    return permission.strip().lower() in WRITE_PERMISSIONS


def is_bot(login: str, user_type: str) -> bool:
    """True for a GitHub App or bot account: user type ``Bot`` or a login ending ``[bot]``."""
    return user_type == BOT_USER_TYPE or login_key(login).endswith(BOT_SUFFIX)


@dataclass(frozen=True)
class AuthorizedUsers:
    """``routing.authorizedUsers``; empty means nobody may command."""

    logins: frozenset[str]

    @classmethod
    def of(cls, logins: Iterable[str]) -> AuthorizedUsers:
        """The set of ``logins`` (blank entries dropped), compared by :func:`login_key`."""
        return cls(frozenset(key for key in map(login_key, logins) if key))

    def permits(self, login: str) -> bool:
        """True when ``login`` is listed (a bot is permitted only when listed by name)."""
        key = login_key(login)
        return bool(key) and key in self.logins

    @property
    def nobody(self) -> bool:
        """True when the list is empty: no comment can command."""
        return not self.logins
