"""The claim book in ``local/claims.json``: every change one locked read-modify-write,
written atomically; a file this release did not write is refused with a sentence naming
it and left as it is; a row it cannot read is skipped; writers in several processes at
once lose nothing."""

from __future__ import annotations

import json
import multiprocessing
import os
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from the_loop.adapters.claim_file import FORMAT_VERSION, FileClaimBook
from the_loop.errors import TheLoopError
from the_loop.intake.claim_ports import Holder, PendingClaim
from the_loop.ref import WorkItemRef

ITEM = WorkItemRef.parse("github:octo/app#15")
OTHER_ITEM = WorkItemRef.parse("github:octo/app#16")
ME, OTHER = "a" * 32, "b" * 32
T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def book_in(root: Path) -> FileClaimBook:
    return FileClaimBook(root / "local" / "claims.json", root / "local" / "locks" / "claims.lock")


@pytest.fixture
def book(tmp_path: Path) -> FileClaimBook:
    return book_in(tmp_path)


def pending(
    ref: WorkItemRef = ITEM, start: int = 2000, *, nonce: str = "0123456789abcdef", **fields: Any
) -> PendingClaim:
    return PendingClaim(ref, start, T0, "alice", nonce, **fields)


def stored(book: FileClaimBook) -> dict[str, Any]:
    return json.loads(book.path.read_text(encoding="utf-8"))


def write(book: FileClaimBook, data: object) -> None:
    book.path.parent.mkdir(parents=True, exist_ok=True)
    book.path.write_text(json.dumps(data), encoding="utf-8")


# -- a round trip ----------------------------------------------------------------------


def test_an_absent_book_reads_as_empty_and_writes_nothing(book: FileClaimBook) -> None:
    assert (book.pending(), book.holders(), book.machines("octo/app")) == ([], {}, {})
    assert not book.path.exists()


def test_a_round_reads_back_as_begun_updated_and_settled(book: FileClaimBook) -> None:
    named = pending(kind="no-machine", named="nowhere")
    book.begin(named)
    assert book.pending() == [named]
    assert stored(book)["version"] == FORMAT_VERSION
    posting = PendingClaim(ITEM, 2000, T0, "alice", named.nonce, "no-machine", "nowhere", True)
    book.update(posting)
    assert book.pending() == [posting]
    posted = PendingClaim(ITEM, 2000, T0, "alice", named.nonce, "no-machine", "nowhere", True, 9)
    book.update(posted)
    assert book.pending() == [posted]
    holder = Holder(2000, OTHER, "buildbox", 2001)
    book.settle(ITEM, 2000, holder)
    assert book.pending() == []
    assert book.holders() == {ITEM: holder}
    assert book_in(book.path.parent.parent).holders() == {ITEM: holder}, "a new process reads it"


def test_a_holder_without_a_comment_reads_back(book: FileClaimBook) -> None:
    book.settle(ITEM, 2000, Holder(2000, OTHER, "buildbox"))
    assert book.holders() == {ITEM: Holder(2000, OTHER, "buildbox", None)}


def test_a_since_is_kept_in_utc_and_never_later_than_given(book: FileClaimBook) -> None:
    moment = datetime(2026, 12, 1, 13, 0, 0, 900_000, tzinfo=timezone(timedelta(hours=1)))
    book.begin(PendingClaim(ITEM, 2000, moment, "alice", "0123456789abcdef"))
    [read] = book.pending()
    assert read.since <= moment
    assert moment - read.since < timedelta(seconds=1)
    assert read.since == datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
    assert stored(book)["pending"][0]["since"] == "2026-12-01T12:00:00Z"


def test_begin_replaces_the_items_earlier_round_and_keeps_the_others(book: FileClaimBook) -> None:
    book.begin(pending(start=2000))
    book.begin(pending(OTHER_ITEM, start=2100))
    book.begin(pending(start=2200, nonce="fedcba9876543210"))
    assert sorted((p.ref.number, p.start) for p in book.pending()) == [(15, 2200), (16, 2100)]


def test_update_only_touches_the_same_start(book: FileClaimBook) -> None:
    book.begin(pending(start=2200))
    book.update(pending(start=2000, posting=True, comment_id=5))  # an older round's answer
    book.update(pending(OTHER_ITEM, start=2200, posting=True))  # another item's
    assert book.pending() == [pending(start=2200)]
    book.update(pending(start=2200, posting=True, comment_id=6))
    assert book.pending() == [pending(start=2200, posting=True, comment_id=6)]


def test_update_of_a_round_settled_meanwhile_brings_nothing_back(book: FileClaimBook) -> None:
    book.begin(pending())
    book.settle(ITEM, 2000, Holder(2000, ME, "laptop", 9))
    book.update(pending(posting=True, comment_id=9))
    assert book.pending() == []


def test_settle_ends_only_that_starts_round(book: FileClaimBook) -> None:
    book.begin(pending(start=2200))
    book.begin(pending(OTHER_ITEM, start=2000))
    book.settle(ITEM, 2000, Holder(2000, OTHER, "buildbox", 2001))  # an older start's
    assert sorted(p.start for p in book.pending()) == [2000, 2200]
    assert [p.ref for p in book.pending() if p.start == 2000] == [OTHER_ITEM]
    book.settle(ITEM, 2200, None)
    assert [p.ref for p in book.pending()] == [OTHER_ITEM]
    assert book.holders() == {}, "None: nobody holds the item"


def test_release_forgets_the_items_round_and_holder_only(book: FileClaimBook) -> None:
    book.settle(ITEM, 2000, Holder(2000, OTHER, "buildbox", 2001))
    book.begin(pending(start=2200))
    book.settle(OTHER_ITEM, 2100, Holder(2100, OTHER, "buildbox", 2101))
    book.begin(pending(OTHER_ITEM, start=2300))
    book.note_machines("octo/app", {OTHER: "buildbox"})
    book.release(ITEM)
    assert [p.ref for p in book.pending()] == [OTHER_ITEM]
    assert list(book.holders()) == [OTHER_ITEM]
    assert book.machines("octo/app") == {OTHER: "buildbox"}, "the machines seen stay"


def test_machines_are_kept_by_repository_without_case(book: FileClaimBook) -> None:
    book.note_machines("Octo/App", {OTHER: "buildbox"})
    book.note_machines("octo/app", {ME: "laptop"})
    book.note_machines("octo/lib", {ME: "desk"})
    assert book.machines("OCTO/app") == {OTHER: "buildbox", ME: "laptop"}
    assert book.machines("octo/lib") == {ME: "desk"}
    assert book.machines("octo/none") == {}
    book.note_machines("octo/app", {OTHER: "renamed"})
    assert book.machines("octo/app")[OTHER] == "renamed", "a new name is news"


def test_note_machines_writes_nothing_when_nothing_is_new(book: FileClaimBook) -> None:
    book.note_machines("octo/app", {OTHER: "buildbox", ME: "laptop"})
    before = os.stat(book.path)
    book.note_machines("octo/app", {OTHER: "buildbox"})
    book.note_machines("OCTO/APP", {ME: "laptop", OTHER: "buildbox"})
    book.note_machines("octo/app", {})
    after = os.stat(book.path)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    book.note_machines("octo/app", {"c" * 32: "desk"})
    assert os.stat(book.path).st_ino != before.st_ino, "something new is written"


def test_nothing_new_to_an_absent_book_creates_no_file(book: FileClaimBook) -> None:
    book.note_machines("octo/app", {})
    assert not book.path.exists()


def test_a_write_leaves_no_temporary_file_behind(book: FileClaimBook) -> None:
    book.begin(pending())
    book.settle(ITEM, 2000, None)
    assert sorted(p.name for p in book.path.parent.iterdir()) == ["claims.json", "locks"]


# -- a file this release did not write ---------------------------------------------------


def every_use(book: FileClaimBook) -> list[tuple[str, Any]]:
    holder = Holder(2000, OTHER, "buildbox", 2001)
    return [
        ("pending", book.pending),
        ("holders", book.holders),
        ("machines", lambda: book.machines("octo/app")),
        ("begin", lambda: book.begin(pending())),
        ("update", lambda: book.update(pending(posting=True))),
        ("settle", lambda: book.settle(ITEM, 2000, holder)),
        ("release", lambda: book.release(ITEM)),
        ("note_machines", lambda: book.note_machines("octo/app", {OTHER: "buildbox"})),
    ]


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("{not json", "cannot be read"),
        ("", "cannot be read"),
        (json.dumps({"version": 2, "pending": []}), "expected version 1"),
        (json.dumps({"pending": []}), "expected version 1"),
        (json.dumps({"version": "1"}), "expected version 1"),
        (json.dumps([{"version": 1}]), "expected version 1"),
        (json.dumps(None), "expected version 1"),
    ],
)
def test_a_book_this_release_did_not_write_is_refused_and_left_as_it_is(
    book: FileClaimBook, content: str, said: str
) -> None:
    book.path.parent.mkdir(parents=True)
    book.path.write_text(content, encoding="utf-8")
    before = os.stat(book.path)
    for name, use in every_use(book):
        with pytest.raises(TheLoopError) as raised:
            use()
        assert str(book.path) in str(raised.value), name
        assert said in str(raised.value), name
    after = os.stat(book.path)
    assert book.path.read_text(encoding="utf-8") == content
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_a_symlink_in_the_books_place_is_refused_and_never_followed(
    book: FileClaimBook, tmp_path: Path
) -> None:
    elsewhere = book_in(tmp_path / "elsewhere")
    elsewhere.settle(ITEM, 2000, Holder(2000, OTHER, "buildbox", 2001))
    target = elsewhere.path.read_text(encoding="utf-8")
    book.path.parent.mkdir(parents=True)
    book.path.symlink_to(elsewhere.path)
    for name, use in every_use(book):
        with pytest.raises(TheLoopError) as raised:
            use()
        assert str(raised.value) == (
            f"{book.path}: the claim book cannot be read: it is a symbolic link, not a regular file"
        ), name
    assert book.path.is_symlink() and os.readlink(book.path) == str(elsewhere.path)
    assert elsewhere.path.read_text(encoding="utf-8") == target


def test_a_dangling_symlink_in_the_books_place_is_refused_and_nothing_is_made(
    book: FileClaimBook, tmp_path: Path
) -> None:
    book.path.parent.mkdir(parents=True)
    book.path.symlink_to(tmp_path / "nowhere.json")
    with pytest.raises(TheLoopError, match="cannot be read: it is a symbolic link"):
        book.begin(pending())
    assert not (tmp_path / "nowhere.json").exists()
    assert book.path.is_symlink()


def test_a_directory_in_the_books_place_is_refused_and_left_as_it_is(book: FileClaimBook) -> None:
    book.path.mkdir(parents=True)
    (book.path / "keep").write_text("x", encoding="utf-8")
    for name, use in every_use(book):
        with pytest.raises(TheLoopError) as raised:
            use()
        assert str(raised.value) == (
            f"{book.path}: the claim book cannot be read: it is a directory, not a regular file"
        ), name
    assert book.path.is_dir() and (book.path / "keep").read_text(encoding="utf-8") == "x"


# -- rows it cannot read ---------------------------------------------------------------------


def good_row(**fields: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "ref": ITEM.ref,
        "start": 2000,
        "since": "2026-12-01T12:00:00Z",
        "actor": "alice",
        "nonce": "0123456789abcdef",
        "kind": "claim",
        "named": "",
        "posting": False,
        "commentId": None,
    }
    return {**row, **fields}


def test_pending_rows_with_junk_are_skipped_not_raised(book: FileClaimBook) -> None:
    rows: list[Any] = [
        "not a row",
        7,
        None,
        good_row(ref="not a ref"),
        good_row(ref=15),
        {k: v for k, v in good_row().items() if k != "ref"},
        good_row(start="2000"),
        good_row(start=True),
        good_row(start=None),
        good_row(since="yesterday"),
        good_row(since=""),
        good_row(since=1700000000),
        good_row(kind="vote"),
        good_row(kind=None),
        good_row(ref=OTHER_ITEM.ref, start=2100),
    ]
    write(book, {"version": 1, "pending": rows})
    [kept] = book.pending()
    assert (kept.ref, kept.start, kept.kind) == (OTHER_ITEM, 2100, "claim")


def test_odd_field_values_of_a_readable_row_read_as_their_defaults(book: FileClaimBook) -> None:
    row = good_row(actor=3, named=["x"], posting="yes", commentId="12")
    write(book, {"version": 1, "pending": [row]})
    [kept] = book.pending()
    assert (kept.actor, kept.named, kept.posting, kept.comment_id) == ("", "", False, None)
    write(book, {"version": 1, "pending": [good_row(posting=True, commentId=True)]})
    [kept] = book.pending()
    assert (kept.posting, kept.comment_id) == (True, None)


@pytest.mark.parametrize(
    "row",
    [
        good_row(nonce="not-a-nonce"),
        good_row(nonce=""),
        good_row(nonce="0123456789ABCDEF"),
        good_row(start=0),
        good_row(start=-5),
        good_row(start=10**18),
    ],
    ids=["nonce-word", "nonce-empty", "nonce-upper", "start-zero", "start-negative", "start-big"],
)
def test_a_pending_row_its_claim_could_not_carry_is_skipped(
    book: FileClaimBook, row: dict[str, Any]
) -> None:
    write(book, {"version": 1, "pending": [row, good_row(ref=OTHER_ITEM.ref)]})
    assert [p.ref for p in book.pending()] == [OTHER_ITEM]


def test_holder_and_machine_rows_with_junk_are_skipped_not_raised(book: FileClaimBook) -> None:
    holders: dict[str, Any] = {
        "not a ref": {"start": 1, "machine": OTHER, "name": "x"},
        ITEM.ref: "not a row",
        "github:octo/app#20": {"start": "1", "machine": OTHER},
        "github:octo/app#21": {"start": 1, "machine": ""},
        "github:octo/app#22": {"start": 1},
        "github:octo/app#23": {"start": False, "machine": OTHER},
        OTHER_ITEM.ref: {"start": 2100, "machine": OTHER, "name": 5, "commentId": "x"},
    }
    machines: dict[str, Any] = {
        "octo/app": {OTHER: "buildbox", ME: 7, "c" * 32: None},
        "octo/lib": "not a map",
    }
    write(book, {"version": 1, "holders": holders, "machines": machines})
    assert book.holders() == {OTHER_ITEM: Holder(2100, OTHER, "", None)}
    assert book.machines("octo/app") == {OTHER: "buildbox"}
    assert book.machines("octo/lib") == {}


@pytest.mark.parametrize(
    "data",
    [
        {"version": 1, "pending": "x", "holders": [], "machines": 3},
        {"version": 1, "pending": {}, "holders": None, "machines": []},
        {"version": 1},
    ],
)
def test_sections_of_the_wrong_shape_read_as_empty_and_are_rewritten(
    book: FileClaimBook, data: dict[str, Any]
) -> None:
    write(book, data)
    assert (book.pending(), book.holders(), book.machines("octo/app")) == ([], {}, {})
    book.begin(pending())
    book.settle(OTHER_ITEM, 1, Holder(1, OTHER, "buildbox", 2))
    book.note_machines("octo/app", {OTHER: "buildbox"})
    assert book.pending() == [pending()]
    assert list(book.holders()) == [OTHER_ITEM]
    assert book.machines("octo/app") == {OTHER: "buildbox"}


def test_a_change_keeps_what_it_does_not_know(book: FileClaimBook) -> None:
    write(book, {"version": 1, "later": {"kept": True}})
    book.begin(pending())
    assert stored(book)["later"] == {"kept": True}


# -- several writers at once ----------------------------------------------------------------------


WRITERS, CHANGES = 4, 12


def _writer(root: str, writer: int) -> None:
    """One process's changes: each a round begun, a holder settled, a machine noted."""
    book = book_in(Path(root))
    for n in range(CHANGES):
        number = 100 + writer * CHANGES + n
        ref = WorkItemRef.parse(f"github:octo/app#{number}")
        book.begin(PendingClaim(ref, number, T0, "alice", f"{number:016x}"))
        book.settle(WorkItemRef.parse(f"github:octo/lib#{number}"), 1, Holder(1, OTHER, "x", 2))
        book.note_machines("octo/app", {f"{number:032x}": f"machine-{number}"})


def test_processes_changing_the_book_at_once_lose_nothing(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    writers = [
        context.Process(target=_writer, args=(str(tmp_path), writer)) for writer in range(WRITERS)
    ]
    for process in writers:
        process.start()
    for process in writers:
        process.join(timeout=120)
    assert [p.exitcode for p in writers] == [0] * WRITERS
    book = book_in(tmp_path)
    numbers = list(range(100, 100 + WRITERS * CHANGES))
    assert sorted(p.start for p in book.pending()) == numbers
    assert sorted(ref.number for ref in book.holders()) == numbers
    assert sorted(book.machines("octo/app")) == [f"{n:032x}" for n in numbers]
