"""``the-loop state check | paths | attributes`` end to end through ``main([...])``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.world import World
from the_loop.attributes import ATTRIBUTES
from the_loop.layout import GENERATED_PATHS
from the_loop.portable.store import WorkItemStore
from the_loop.ref import WorkItemRef
from the_loop.repofile.file import WorkItemStateFile
from the_loop.sessions.session import Session

ITEM = WorkItemRef.parse("github:octo/app#15")
PR = WorkItemRef.parse("github:octo/lib#7")


class Machine(World):
    """A state root, a workspace root and a config file naming both (the shared world)."""

    def __init__(self, tmp_path: Path) -> None:
        self.workspace = tmp_path / "ws"
        super().__init__(tmp_path, {"routing": {"workspace": {"root": str(self.workspace)}}})

    def run(self, *argv: str) -> int:
        """``the-loop state <argv>`` on this machine's config."""
        return super().run("state", *argv)

    def json(self, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
        code = self.run(*argv, "--format", "json")
        return code, json.loads(capsys.readouterr().out)


def write(path: Path, document: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document), encoding="utf-8")


def files_under(root: Path) -> dict[str, bytes]:
    return {str(path): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def test_a_machine_with_nothing_retired_exits_0_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    machine = Machine(tmp_path)
    machine.store.write_section(ITEM, "control", {"ref": ITEM.ref, "command": "start"})
    assert machine.run("check") == 0
    assert capsys.readouterr().out == "nothing retired is left on this machine\n"
    code, document = machine.json(capsys, "check")
    assert (code, document["ok"], document["items"]) == (0, True, [])
    assert document["summary"] == {"clean": True, "checkouts": [], "unscanned": []}


def test_every_retired_location_is_listed_with_its_replacement_and_nothing_is_deleted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    machine = Machine(tmp_path)
    write(machine.legacy.control_dir / f"{ITEM.slug}.json", {"ref": ITEM.ref, "command": "start"})
    write(machine.legacy.poll_state, {"items": {ITEM.ref: {"seenComments": []}}})
    write(machine.store.path_for(ITEM), {"ref": ITEM.ref, "graph": {"sessionPerPr": "always"}})
    machine.store.write_pull_request_ledger(ITEM, PR, {"seenComments": []})
    machine.store.write_section(PR, "poll", {"seenComments": ["PRC_1"]})
    before = files_under(tmp_path)
    assert machine.run("check") == 1
    out = capsys.readouterr().out
    for kind in (
        "legacy-control-record",
        "legacy-poll-state",
        "graph-section",
        "pull-request-record",
    ):
        assert kind in out
    assert "the control section of portable/<slug>.json" in out
    assert "pullRequests.<pr ref> of the owner's portable/<slug>.json" in out
    assert "4 retired locations left, 3 still read as a fallback; nothing was deleted" in out
    assert files_under(tmp_path) == before


def test_the_json_report_is_one_document_with_stable_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    machine = Machine(tmp_path)
    write(machine.legacy.control_dir / f"{ITEM.slug}.json", {"ref": ITEM.ref, "command": "stop"})
    code, document = machine.json(capsys, "check")
    assert code == 1
    assert document["summary"]["clean"] is False
    [location] = document["items"]
    assert location == {
        "kind": "legacy-control-record",
        "path": str(machine.legacy.control_dir / f"{ITEM.slug}.json"),
        "workItem": ITEM.ref,
        "read": True,
        "replacedBy": "the control section of portable/<slug>.json",
        "detail": "read as a fallback until its section is written",
    }


def test_graph_state_files_are_found_in_session_cwds_and_workspace_checkouts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    machine = Machine(tmp_path)
    own = tmp_path / "own-checkout"
    own.mkdir()
    machine.registry.register(Session(ITEM, "claude", "s1", cwd=str(own)))
    in_workspace = machine.workspace / ".worktrees" / "github.com" / "octo" / "lib" / PR.slug
    (in_workspace / ".git").mkdir(parents=True)
    write(WorkItemStateFile(own, ITEM).legacy_path, {"workItem": ITEM.ref, "session": {}})
    write(WorkItemStateFile(in_workspace, PR).legacy_path, {"workItem": PR.ref})
    code, document = machine.json(capsys, "check")
    assert code == 1
    assert [item["workItem"] for item in document["items"]] == [ITEM.ref, PR.ref]
    assert document["summary"]["checkouts"] == [str(own), str(in_workspace)]


def test_no_discover_scans_only_the_checkouts_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    machine = Machine(tmp_path)
    hidden = machine.workspace / "github.com" / "octo" / "app"
    (hidden / ".git").mkdir(parents=True)
    write(WorkItemStateFile(hidden, ITEM).legacy_path, {"workItem": ITEM.ref})
    given = tmp_path / "given"
    write(WorkItemStateFile(given, PR).legacy_path, {"workItem": PR.ref})
    code, document = machine.json(capsys, "check", "--no-discover", "--checkout", str(given))
    assert code == 1
    assert [item["workItem"] for item in document["items"]] == [PR.ref]
    assert document["summary"]["checkouts"] == [str(given)]


def test_a_checkout_that_is_not_a_directory_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    machine = Machine(tmp_path)
    assert machine.run("check", "--checkout", str(tmp_path / "missing")) == 2
    assert "not a directory" in capsys.readouterr().err


def test_the_state_directory_overrides_point_the_check_elsewhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    machine = Machine(tmp_path)
    other = WorkItemStore(tmp_path / "elsewhere" / "portable")
    other.write_pull_request_ledger(ITEM, PR, {"seenComments": []})
    other.write_section(PR, "poll", {"seenComments": []})
    assert machine.run("check") == 0
    capsys.readouterr()
    code = machine.run("check", "--portable-dir", str(other.root))
    assert code == 1
    assert "pull-request-record" in capsys.readouterr().out


def test_state_paths_prints_every_generated_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    machine = Machine(tmp_path)
    code, document = machine.json(capsys, "paths")
    assert code == 0
    assert [item["where"] for item in document["items"]] == [p.where for p in GENERATED_PATHS]
    assert machine.run("paths") == 0
    assert "portable/<slug>.json" in capsys.readouterr().out


def test_state_attributes_prints_the_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    machine = Machine(tmp_path)
    code, document = machine.json(capsys, "attributes")
    assert code == 0
    assert len(document["items"]) == len(ATTRIBUTES)
    assert document["summary"]["allowedKinds"]["machine"] == ["machine-handle", "derived"]
    assert [item["name"] for item in document["summary"]["files"]] == [
        "repository",
        "operator",
        "machine",
    ]
    assert machine.run("attributes") == 0
    assert "sessionPerPr" in capsys.readouterr().out
