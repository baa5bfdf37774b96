"""One session record file as read: what the registry finds at a record's file name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from the_loop.fsio import read_bounded_object
from the_loop.sessions.session import Session, record_from_json, stored_ref


@dataclass(frozen=True)
class RecordRead:
    """One record file as read: ``foreign`` when it stores another ref."""

    status: Literal["absent", "ok", "unreadable", "foreign"]
    record: Session | None = None
    stored: str | None = None
    problem: str = ""
    #: A symlink, FIFO or directory: someone else's, read as absent and stepped around.
    stranger: bool = False


def read_record_file(path: str) -> RecordRead:
    """Read one record file; never raises. A symlink, FIFO or directory at the path is
    someone else's: it reads as absent and is never followed, blocked on or removed."""
    status, data, problem = read_bounded_object(path)
    if status in ("absent", "stranger"):
        return RecordRead("absent", stranger=status == "stranger")
    if status != "ok":
        # A file that nests too deeply still names the ref it stores.
        return RecordRead("unreadable", stored=stored_ref(data), problem=problem)
    try:
        record = record_from_json(data)
    except (ValueError, RecursionError) as error:
        return RecordRead("unreadable", stored=stored_ref(data), problem=str(error))
    # A readable record stores the ref it was built from (what ``stored_ref`` would parse).
    return RecordRead("ok", record, record.ref)
