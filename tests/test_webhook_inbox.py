"""The receiver's inbox: durable deliveries keyed by delivery id, listed in arrival order,
marked processed, compacted, and found again by a receiver started after a crash."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from the_loop.webhook.inbox import PROCESSED_KEPT, Inbox


def make_inbox(tmp_path: Path) -> Inbox:
    inbox = Inbox(tmp_path / "local" / "webhook-inbox", lock_path=tmp_path / "locks" / "inbox.lock")
    inbox.open()
    return inbox


def put(inbox: Inbox, delivery_id: str, event: str = "issue_comment", body: str = "{}") -> bool:
    return inbox.store(
        event=event, delivery_id=delivery_id, text=body, received_at="2026-12-01T09:00:00.000Z"
    )


def test_deliveries_are_pending_in_arrival_order_with_their_payload(tmp_path: Path) -> None:
    inbox = make_inbox(tmp_path)
    for number, delivery in enumerate(("zz-late-name", "aa-early-name", "mm")):
        assert put(inbox, delivery, body=json.dumps({"n": number}))
    pending = inbox.pending()
    assert [entry.delivery_id for entry in pending] == ["zz-late-name", "aa-early-name", "mm"]
    assert [inbox.read(entry).payload for entry in pending] == [{"n": 0}, {"n": 1}, {"n": 2}]
    first = inbox.read(pending[0])
    assert (first.event, first.received_at) == ("issue_comment", "2026-12-01T09:00:00.000Z")
    assert pending[0].sequence < pending[1].sequence < pending[2].sequence


def test_an_id_already_here_is_not_stored_again(tmp_path: Path) -> None:
    inbox = make_inbox(tmp_path)
    assert put(inbox, "d-1") is True
    assert put(inbox, "d-1", body='{"other": true}') is False
    [entry] = inbox.pending()
    assert inbox.read(entry).payload == {}


def test_a_receiver_started_after_a_crash_finds_what_was_stored(tmp_path: Path) -> None:
    put(make_inbox(tmp_path), "d-before-crash")
    again = make_inbox(tmp_path)
    assert put(again, "d-before-crash") is False
    assert [entry.delivery_id for entry in again.pending()] == ["d-before-crash"]
    assert put(again, "d-after") is True
    assert [entry.delivery_id for entry in again.pending()] == ["d-before-crash", "d-after"]


def test_processed_deliveries_leave_the_pending_list_then_the_disk(tmp_path: Path) -> None:
    inbox = make_inbox(tmp_path)
    for delivery in ("d-1", "d-2", "d-3"):
        put(inbox, delivery)
    inbox = make_inbox(tmp_path)  # a restart: the next delivery starts a new segment
    put(inbox, "d-4")
    inbox.mark_processed(["d-1", "d-3", "d-4"])
    assert [entry.delivery_id for entry in inbox.pending()] == ["d-2"]
    assert inbox.compact() == 2  # not d-4: its segment is the newest, still written to
    assert [entry.delivery_id for entry in inbox.pending()] == ["d-2"]
    assert inbox.read(inbox.pending()[0]).delivery_id == "d-2"
    assert inbox.compact() == 0
    inbox.mark_processed(["d-2"])
    assert inbox.compact() == 1
    assert len(list(inbox.directory.glob("*.jsonl"))) == 1
    assert put(inbox, "d-1") is False  # processed, then re-sent: a duplicate
    assert put(make_inbox(tmp_path), "d-3") is False  # ... also after a restart


def test_a_line_cut_short_by_a_crash_is_skipped(tmp_path: Path) -> None:
    inbox = make_inbox(tmp_path)
    put(inbox, "d-1")
    [segment] = inbox.directory.glob("*.jsonl")
    with segment.open("ab") as handle:
        handle.write(
            b'{"version":1,"sequence":99999999999999999,"delivery":"d-2","event":"issues",'
            b'"receivedAt":"2026-12-01T09:00:00.000Z","payload":{"action": "lab'
        )
    assert [entry.delivery_id for entry in make_inbox(tmp_path).pending()] == ["d-1"]
    again = make_inbox(tmp_path)
    assert put(again, "d-2") is True  # never answered 202: taken when re-sent
    assert [entry.delivery_id for entry in again.pending()] == ["d-1", "d-2"]


def test_segments_are_bounded_and_each_run_starts_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("the_loop.webhook.journal.SEGMENT_LINES", 2)
    inbox = make_inbox(tmp_path)
    for number in range(5):
        put(inbox, f"d-{number}")
    assert len(list(inbox.directory.glob("*.jsonl"))) == 3
    inbox = make_inbox(tmp_path)
    put(inbox, "d-5")
    assert len(list(inbox.directory.glob("*.jsonl"))) == 4
    assert [entry.delivery_id for entry in inbox.pending()] == [f"d-{n}" for n in range(6)]


def test_the_processed_ids_are_bounded(tmp_path: Path) -> None:
    inbox = make_inbox(tmp_path)
    inbox.mark_processed(f"old-{n}" for n in range(PROCESSED_KEPT))
    inbox.mark_processed(["newest"])
    kept = inbox.processed_ids()
    assert len(kept) == PROCESSED_KEPT
    assert (kept[0], kept[-1]) == ("old-1", "newest")


def test_a_temporary_file_a_killed_compaction_left_goes_once_stale(tmp_path: Path) -> None:
    inbox = make_inbox(tmp_path)
    put(inbox, "d-1")
    stale = inbox.directory / ".00000000000000000001.jsonl.abc.tmp"
    fresh = inbox.directory / ".00000000000000000002.jsonl.def.tmp"
    stale.write_text("{", "utf-8")
    fresh.write_text("{", "utf-8")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    assert [entry.delivery_id for entry in inbox.pending()] == ["d-1"]
    inbox.compact()
    assert not stale.exists() and fresh.exists()


def test_a_line_that_is_no_longer_its_delivery_is_refused_when_read(tmp_path: Path) -> None:
    inbox = make_inbox(tmp_path)
    put(inbox, "d-1")
    [entry] = inbox.pending()
    entry.path.write_bytes(b" " * entry.length)
    with pytest.raises(ValueError):
        inbox.read(entry)


def test_threads_storing_at_once_share_appends_and_lose_nothing(tmp_path: Path) -> None:
    inbox = make_inbox(tmp_path)
    threads = [threading.Thread(target=put, args=(inbox, f"d-{n}")) for n in range(64)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    pending = inbox.pending()
    assert sorted(entry.delivery_id for entry in pending) == sorted(f"d-{n}" for n in range(64))
    assert [entry.sequence for entry in pending] == sorted(entry.sequence for entry in pending)
    assert all(inbox.read(entry).payload == {} for entry in pending)


def test_the_same_id_stored_from_two_threads_at_once_is_written_once(tmp_path: Path) -> None:
    inbox = make_inbox(tmp_path)
    results: list[bool] = []
    threads = [
        threading.Thread(target=lambda: results.append(put(inbox, "d-same"))) for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [False] * 7 + [True]
    assert len(inbox.pending()) == 1


def test_a_write_that_fails_leaves_the_id_free_for_the_next_try(tmp_path: Path) -> None:
    inbox = make_inbox(tmp_path)
    inbox.directory.parent.mkdir(parents=True)
    inbox.directory.write_text("not a directory", "utf-8")
    with pytest.raises(OSError):
        put(inbox, "d-1")
    inbox.directory.unlink()
    assert put(inbox, "d-1") is True
