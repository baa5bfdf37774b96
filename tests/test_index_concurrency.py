"""What ``portable/index.json`` promises under concurrent writers and crashes, proved with
real processes writing through the store's public API.

The promise (docs/cli/state.md): every entry of the index names a record file that
exists and stores that ref, at every moment, even right after a writer was killed;
once every writer is done and a write has followed the last crash, the index equals a
full rebuild from the records.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import pytest

from the_loop.portable.format import load_record
from the_loop.portable.store import CONTROL, POLL, WorkItemStore

WRITERS = 5
ROUNDS = 18
OWN_REFS = 6
SHARED = tuple(f"github:octo/app#{n}" for n in (1, 2, 3))


def own_ref(writer: int, index: int) -> str:
    return f"github:octo/app#{100 * (writer + 1) + index}"


def open_store(root: Path) -> WorkItemStore:
    return WorkItemStore(root / "portable", locks_dir=root / "locks" / "portable")


def full_rebuild(root: Path, scratch: Path) -> str | None:
    """The index a full rebuild makes from the records of ``root`` (copied to ``scratch``)."""
    copy = scratch / "portable"
    shutil.rmtree(scratch, ignore_errors=True)
    copy.mkdir(parents=True)
    for path in (root / "portable").iterdir():
        if path.name != "index.json" and not path.name.startswith("."):
            shutil.copy2(path, copy / path.name)
    open_store(scratch).rebuild_index()
    index = copy / "index.json"
    return index.read_text(encoding="utf-8") if index.exists() else None


def index_text(root: Path) -> str | None:
    index = root / "portable" / "index.json"
    return index.read_text(encoding="utf-8") if index.exists() else None


def entries(text: str | None) -> list[dict[str, Any]]:
    return [] if text is None else json.loads(text)["workItems"]


def dangling(root: Path) -> list[str]:
    """The index entries whose file is missing or stores another ref."""
    found: list[str] = []
    for entry in entries(index_text(root)):
        loaded = load_record(root / "portable" / entry["file"])
        if loaded.status != "ok" or loaded.item is None or loaded.item.ref != entry["ref"]:
            found.append(entry["ref"])
    return found


def one_change(store: WorkItemStore, rng: random.Random, ref: str) -> None:
    """A write, a change of sections, a clear of one section or a deletion of ``ref``."""
    choice = rng.randrange(5)
    if choice == 0:
        store.write_section(ref, CONTROL, {"command": rng.choice(("start", "stop"))})
    elif choice == 1:
        store.write_sections(ref, {POLL: {"seen": [rng.randrange(100)]}, CONTROL: None})
    elif choice == 2:
        store.write_section(ref, POLL, None)
    elif choice == 3:
        store.write_pull_request_ledger(ref, "github:octo/lib#9", {"seen": []})
    else:
        store.drop(ref)


def write_many(root: str, writer: int, start: Event) -> None:
    """Child process: many changes to this writer's own refs and to the shared ones."""
    store = open_store(Path(root))
    rng = random.Random(writer)
    start.wait()
    for _ in range(ROUNDS):
        for index in range(OWN_REFS):
            one_change(store, rng, own_ref(writer, index))
        for shared in SHARED:
            pr = f"github:octo/lib#{writer + 1}"
            store.write_pull_request_ledger(shared, pr, {"round": rng.randrange(1000)})


@pytest.mark.slow
def test_concurrent_writers_of_many_refs_leave_the_index_equal_to_a_full_rebuild(
    tmp_path: Path,
) -> None:
    root = tmp_path / "state"
    open_store(root).write_section(SHARED[0], CONTROL, {"command": "start"})
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    writers = [
        context.Process(target=write_many, args=(str(root), writer, start))
        for writer in range(WRITERS)
    ]
    for process in writers:
        process.start()
    start.set()
    for process in writers:
        process.join(timeout=300)

    assert [process.exitcode for process in writers] == [0] * WRITERS
    assert index_text(root) == full_rebuild(root, tmp_path / "rebuilt")
    assert dangling(root) == []
    shared = {e["ref"]: e.get("pullRequests") for e in entries(index_text(root))}
    every_pr = [f"github:octo/lib#{writer + 1}" for writer in range(WRITERS)]
    assert all(shared[ref] == every_pr for ref in SHARED), "a writer's change was lost"


def delete_all(root: str, refs: list[str], start: Event) -> None:
    """Child process: delete each of ``refs``."""
    store = open_store(Path(root))
    start.wait()
    for ref in refs:
        store.drop(ref)


def create_all(root: str, refs: list[str], start: Event) -> None:
    """Child process: create a record for each of ``refs``."""
    store = open_store(Path(root))
    start.wait()
    for ref in refs:
        store.write_section(ref, CONTROL, {"command": "start"})


def read_until_stopped(
    root: str, deleting: bool, start: Event, stop: Event, bad: Synchronized[int]
) -> None:
    """Child process: compare the index with the directory again and again; count every
    entry whose file was not there. Deleting, the directory is listed before the index is
    read (files only go away); creating, after (files only come)."""
    portable = Path(root) / "portable"
    start.wait()
    while not stop.is_set():
        before = set(os.listdir(portable)) if deleting else set[str]()
        try:
            raw = (portable / "index.json").read_bytes()
        except FileNotFoundError:
            raw = b""
        names = before if deleting else set(os.listdir(portable))
        try:
            listed = entries(raw.decode("utf-8") or None)
        except ValueError:
            bad.value += 1000  # half an index: never acceptable
            continue
        bad.value += sum(1 for entry in listed if entry["file"] not in names)


@pytest.mark.slow
@pytest.mark.parametrize("deleting", [True, False], ids=["deleting", "creating"])
def test_a_reader_never_sees_an_index_entry_for_a_record_that_is_not_there(
    tmp_path: Path, deleting: bool
) -> None:
    root = tmp_path / "state"
    refs = [own_ref(writer, index) for writer in range(3) for index in range(50)]
    store = open_store(root)
    with store.batch():
        for ref in refs if deleting else refs[:1]:
            store.write_section(ref, CONTROL, {"command": "start"})
    context = multiprocessing.get_context("spawn")
    start, stop, bad = context.Event(), context.Event(), context.Value("i", 0)
    target = delete_all if deleting else create_all
    writers = [
        context.Process(target=target, args=(str(root), refs[i::3], start)) for i in range(3)
    ]
    reading = (str(root), deleting, start, stop, bad)
    reader = context.Process(target=read_until_stopped, args=reading)
    for process in [*writers, reader]:
        process.start()
    start.set()
    for process in writers:
        process.join(timeout=300)
    stop.set()
    reader.join(timeout=30)

    assert [process.exitcode for process in [*writers, reader]] == [0] * 4
    assert bad.value == 0, f"{bad.value} index entries named a record that was not there"
    assert index_text(root) == full_rebuild(root, tmp_path / "rebuilt")


# -- a writer killed between its writes ---------------------------------------

#: The child: one change through the store, SIGKILLed right after the named file
#: operation (the hook wraps the module attribute the store calls).
CRASH_CHILD = """
import os, signal, sys
from pathlib import Path
import the_loop.portable.index as index_module
import the_loop.portable.listing as listing_module
import the_loop.portable.store as store_module
from the_loop.portable.store import CONTROL, POLL, WorkItemStore

root, point, op, ref = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
HOOKS = {
    "after-stamp-taken": (index_module, "remove_file"),
    "after-record-written": (store_module, "write_json"),
    "after-record-removed": (store_module, "remove_file"),
    "after-index-written": (listing_module, "write_text"),
    "after-index-removed": (listing_module, "remove_file"),
}
module, name = HOOKS[point]
original = getattr(module, name)

def then_die(*args, **kwargs):
    original(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)

setattr(module, name, then_die)
store = WorkItemStore(root / "portable", locks_dir=root / "locks" / "portable")
if op == "create" or op == "change":
    store.write_section(ref, POLL, {"seen": [1]})
elif op == "delete":
    store.drop(ref)
elif op == "delete-untrusted":  # the stamp gone, as after an earlier crash
    (root / "locks" / "portable" / "index.stamp").unlink()
    store.drop(ref)
else:  # as a reset does: many changes, the index rebuilt once at the end
    with store.batch():
        store.write_section("github:octo/app#98", CONTROL, {"command": "start"})
        store.drop("github:octo/app#11")
        store.drop(ref)
"""

CRASHES = [
    ("create", "after-stamp-taken"),
    ("create", "after-record-written"),
    ("create", "after-index-written"),
    ("change", "after-stamp-taken"),
    ("change", "after-record-written"),
    ("change", "after-index-written"),
    ("delete", "after-stamp-taken"),
    ("delete", "after-record-removed"),
    ("delete", "after-index-written"),
    ("delete-untrusted", "after-index-removed"),
    ("delete-untrusted", "after-record-removed"),
    ("batch", "after-record-written"),
    ("batch", "after-index-removed"),
    ("batch", "after-record-removed"),
]


def seeded(root: Path) -> None:
    """Five records, an index that matches them and its stamp."""
    store = open_store(root)
    for number in range(10, 15):
        store.write_section(f"github:octo/app#{number}", CONTROL, {"command": "start"})


@pytest.mark.parametrize(("op", "point"), CRASHES, ids=[f"{o}-{p}" for o, p in CRASHES])
def test_a_writer_killed_between_its_writes_leaves_no_dangling_entry_and_the_next_write_heals(
    tmp_path: Path, op: str, point: str
) -> None:
    root = tmp_path / "state"
    seeded(root)
    ref = "github:octo/app#99" if op == "create" else "github:octo/app#12"
    child = subprocess.run(
        [sys.executable, "-c", CRASH_CHILD, str(root), point, op, ref],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr

    assert dangling(root) == []
    open_store(root).write_section("github:octo/app#10", POLL, {"seen": [2]})
    assert index_text(root) == full_rebuild(root, tmp_path / "rebuilt")
    listed = {entry["ref"] for entry in entries(index_text(root))}
    assert (ref in listed) == (open_store(root).record_status(ref) == "ok")


#: The child: random changes to a few refs for ever, until it is killed.
LOOP_CHILD = """
import random, sys
from pathlib import Path
from tests.test_index_concurrency import one_change, open_store

root, seed = Path(sys.argv[1]), int(sys.argv[2])
store, rng = open_store(root), random.Random(seed)
print("go", flush=True)
while True:
    one_change(store, rng, f"github:octo/app#{rng.randrange(20, 32)}")
"""


@pytest.mark.slow
def test_writers_killed_at_random_moments_never_leave_a_dangling_entry(tmp_path: Path) -> None:
    root = tmp_path / "state"
    seeded(root)
    rng = random.Random(13)
    healed = 0
    for run in range(20):
        child = subprocess.Popen(
            [sys.executable, "-c", LOOP_CHILD, str(root), str(run)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).parent.parent,
        )
        assert child.stdout is not None and child.stdout.readline() == "go\n"
        time.sleep(rng.uniform(0.0, 0.25))
        child.kill()
        child.wait(timeout=30)
        child.stdout.close()
        assert dangling(root) == [], f"run {run}"
        open_store(root).write_section("github:octo/app#10", POLL, {"seen": [run]})
        assert index_text(root) == full_rebuild(root, tmp_path / "rebuilt"), f"run {run}"
        healed += 1
    assert healed == 20
