"""The API's credentials: the token file, the board's cookie, the single-use codes."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from the_loop.api.token import CODE_SECONDS, Codes, api_token, cookie_value, mint_code
from the_loop.errors import TheLoopError


def test_the_token_is_made_once_mode_0600_and_then_read(tmp_path: Path) -> None:
    path = tmp_path / "local" / "api-token"
    with pytest.raises(TheLoopError, match="makes one when it starts"):
        api_token(path)
    made = api_token(path, make=True)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert api_token(path, make=True) == made == api_token(path)
    path.chmod(0o644)
    assert api_token(path) == made and stat.S_IMODE(path.stat().st_mode) == 0o600
    path.write_text("short\n")
    with pytest.raises(TheLoopError, match="does not hold an API token"):
        api_token(path, make=True)


def test_the_cookie_proves_the_token_without_being_it() -> None:
    token = "t" * 43
    assert cookie_value(token) == cookie_value(token) != token
    assert token not in cookie_value(token) and cookie_value("u" * 43) != cookie_value(token)


def test_a_code_opens_once_before_its_expiry_and_only_with_its_token() -> None:
    token, now = "t" * 43, 1_800_000_000.0
    clock = [now]
    codes = Codes(token, clock=lambda: clock[0])
    code = mint_code(token, now=now)
    assert token not in code
    assert codes.redeem(code) and not codes.redeem(code), "once"
    late = mint_code(token, now=now)
    clock[0] = now + CODE_SECONDS + 1
    assert not codes.redeem(late), "expired"
    clock[0] = now
    assert not codes.redeem(mint_code("u" * 43, now=now)), "another token's"
    forged = late.rsplit(".", 1)[0] + "." + "0" * 64
    assert not codes.redeem(forged) and not codes.redeem("") and not codes.redeem("1.2")
    assert not codes.redeem("\u00b2.a.b"), "a digit Python reads but int() does not"
    longer = late.replace(late.split(".", 1)[0], str(int(late.split(".", 1)[0]) + 3600), 1)
    assert not codes.redeem(longer), "its expiry is signed"


def test_a_link_or_a_fifo_at_the_tokens_place_is_refused_never_read(tmp_path: Path) -> None:
    import os

    outside = tmp_path / "outside"
    outside.write_text("t" * 43 + "\n")
    link = tmp_path / "api-token"
    link.symlink_to(outside)
    with pytest.raises(TheLoopError, match="not a regular file"):
        api_token(link, make=True)
    fifo = tmp_path / "fifo-token"
    os.mkfifo(fifo)
    with pytest.raises(TheLoopError, match="not a regular file"):
        api_token(fifo, make=True)
