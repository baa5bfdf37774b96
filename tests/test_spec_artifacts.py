"""Each phase's artifact and its required sections (the_loop/spec/artifacts.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from the_loop.ref import WorkItemRef
from the_loop.repofile.file import WorkItemStateFile
from the_loop.spec.artifacts import (
    REQUIRED_SECTIONS,
    artifact_path,
    check_artifact,
    missing_sections,
    section_headings,
)

ITEM = WorkItemRef.parse("github:octo/app#15")

REQUIREMENTS = """# Requirements of #15

## Problem

It is slow.

## Requirements

- fast

## Acceptance criteria

- p95 under 20 ms
"""


def test_each_phase_with_an_artifact_has_it_beside_the_state_file(tmp_path: Path) -> None:
    store = WorkItemStateFile(tmp_path, ITEM)
    specs = tmp_path / "docs/specs/github-octo-app-15"
    assert artifact_path(store, "requirements") == specs / "requirements.md"
    assert artifact_path(store, "design") == specs / "design.md"
    assert artifact_path(store, "tasks") == specs / "tasks.md"
    assert artifact_path(store, "implementation") is None


def test_the_artifact_follows_the_spec_directory_upstream_chose(tmp_path: Path) -> None:
    upstream = tmp_path / "docs/specs/issue-15"
    upstream.mkdir(parents=True)
    (upstream / "work-item-state.json").write_text('{"workItem": "github:octo/app#15"}')
    store = WorkItemStateFile(tmp_path, ITEM)
    assert artifact_path(store, "design") == upstream / "design.md"


def test_a_complete_artifact_lacks_nothing() -> None:
    assert missing_sections(REQUIREMENTS, "requirements") == ()


@pytest.mark.parametrize(
    ("phase", "section"),
    [(phase, section) for phase, sections in REQUIRED_SECTIONS.items() for section in sections],
)
def test_each_missing_section_is_named(phase: str, section: str) -> None:
    others = [name for name in REQUIRED_SECTIONS[phase] if name != section]
    text = "".join(f"## {name}\n\ntext\n\n" for name in others)
    assert missing_sections(text, phase) == (section,)


def test_a_heading_inside_a_fenced_code_block_does_not_count() -> None:
    text = REQUIREMENTS.replace(
        "## Problem\n", "```markdown\n## Problem\n```\n~~~~\n## Problem\n~~~\nstill fenced\n~~~~\n"
    )
    assert missing_sections(text, "requirements") == ("Problem",)


def test_an_unclosed_fence_runs_to_the_end_of_the_file() -> None:
    text = "## Design\n\n````\n```\n## Testing plan\n"
    assert section_headings(text) == ["design"]


def test_headings_of_other_levels_and_lookalikes_do_not_count() -> None:
    text = "# Tasks\n### Tasks\n##Tasks\n    ## Tasks\n`## Tasks`\n"
    assert missing_sections(text, "tasks") == ("Tasks",)


def test_a_heading_matches_by_its_words_case_and_spacing_aside() -> None:
    text = "## design\n   ##   Testing   PLAN  ##\n"
    assert missing_sections(text, "design") == ()


def test_checking_a_missing_artifact_says_write_it(tmp_path: Path) -> None:
    store = WorkItemStateFile(tmp_path, ITEM)
    checked = check_artifact(store, "design")
    assert (checked.exists, checked.ok) == (False, False)
    assert checked.problem("design.md") == (
        "design.md is missing: write it, with the sections ## Design and ## Testing plan, "
        "and commit it"
    )


def test_checking_an_artifact_names_every_missing_section_in_one_sentence(tmp_path: Path) -> None:
    store = WorkItemStateFile(tmp_path, ITEM)
    store.directory.mkdir(parents=True)
    (store.directory / "requirements.md").write_text("## Requirements\n", encoding="utf-8")
    checked = check_artifact(store, "requirements")
    assert checked.missing == ("Problem", "Acceptance criteria")
    assert (
        checked.problem("r.md") == "r.md lacks the sections ## Problem and ## Acceptance criteria"
    )
    (store.directory / "requirements.md").write_text(REQUIREMENTS, encoding="utf-8")
    assert check_artifact(store, "requirements").problem("r.md") is None


def test_an_artifact_that_is_a_link_is_not_read(tmp_path: Path) -> None:
    store = WorkItemStateFile(tmp_path, ITEM)
    store.directory.mkdir(parents=True)
    (tmp_path / "elsewhere.md").write_text("## Tasks\n", encoding="utf-8")
    (store.directory / "tasks.md").symlink_to(tmp_path / "elsewhere.md")
    checked = check_artifact(store, "tasks")
    assert not checked.ok
    assert "cannot be read: it is a symbolic link" in (checked.problem("tasks.md") or "")


def test_implementation_has_no_artifact_to_check(tmp_path: Path) -> None:
    checked = check_artifact(WorkItemStateFile(tmp_path, ITEM), "implementation")
    assert (checked.path, checked.ok, checked.problem("-")) == (None, True, None)
