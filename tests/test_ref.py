"""WorkItemRef: strict parsing, canonical form, slugs, and paths that never escape."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from the_loop.dispatch.tmux import tmux_session_name
from the_loop.records.directory import RecordDirectory, disambiguated_name, plain_name
from the_loop.ref import WorkItemRef, as_ref, is_record_file_name


def test_a_github_ref_has_a_canonical_form_slug_and_url() -> None:
    ref = WorkItemRef.parse("github:octo/repo#15")
    assert ref.ref == "github:octo/repo#15"
    assert ref.slug == "github-octo-repo-15"
    assert ref.url == "https://github.com/octo/repo/issues/15"
    assert ref.path == "octo/repo"


def test_the_default_host_is_dropped_and_compares_equal() -> None:
    assert WorkItemRef.parse("github:github.com/octo/repo#15") == WorkItemRef.parse(
        "github:octo/repo#15"
    )


def test_an_enterprise_host_is_kept() -> None:
    ref = WorkItemRef.parse("github:ghe.corp.example/octo/repo#15")
    assert ref.ref == "github:ghe.corp.example/octo/repo#15"
    assert ref.url == "https://ghe.corp.example/octo/repo/issues/15"
    assert ref.slug == "github-ghe.corp.example-octo-repo-15"


def test_a_host_with_a_port_collapses_into_a_safe_slug() -> None:
    ref = WorkItemRef.parse("github:git.example:8443/octo/repo#2")
    assert ref.url == "https://git.example:8443/octo/repo/issues/2"
    assert ref.slug == "github-git.example-8443-octo-repo-2"


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("octo/app#15", "github:octo/app#15"),
        ("github.com/octo/app#15", "github:octo/app#15"),
        ("https://github.com/octo/app/issues/15", "github:octo/app#15"),
        ("https://github.com/octo/app/pull/15", "github:octo/app#15"),
        ("https://github.com/octo/app/issues/15/", "github:octo/app#15"),
        ("ghe.corp/octo/app#15", "github:ghe.corp/octo/app#15"),
        ("https://ghe.corp/octo/app/issues/15", "github:ghe.corp/octo/app#15"),
        ("https://GHE.corp/octo/app/pull/15", "github:ghe.corp/octo/app#15"),
    ],
)
def test_the_shorthand_and_web_urls_mean_the_same_item_as_the_canonical_ref(
    text: str, canonical: str
) -> None:
    ref = WorkItemRef.parse(text)
    assert ref == WorkItemRef.parse(canonical)
    assert ref.ref == canonical


@pytest.mark.parametrize(
    "text",
    [
        "github:Octo/App#15",
        "Octo/App#15",
        "GitHub:octo/app#15",
        "GITHUB:OCTO/APP#15",
        "github:GitHub.com/Octo/App#15",
        "https://GitHub.com/Octo/App/issues/15",
        "HTTPS://github.com/octo/app/issues/15",
        "Https://github.com/OCTO/app/pull/15",
    ],
)
def test_owner_repository_provider_and_scheme_ignore_case_and_the_ref_is_lowercase(
    text: str,
) -> None:
    ref = WorkItemRef.parse(text)
    assert ref.ref == "github:octo/app#15"
    assert ref == WorkItemRef.parse("github:octo/app#15")
    assert ref.slug == "github-octo-app-15"
    assert ref.url == "https://github.com/octo/app/issues/15"


def test_an_enterprise_ref_is_lowercase_in_every_part() -> None:
    ref = WorkItemRef.parse("https://GHE.Corp.example/Octo/App/pull/7")
    assert ref.ref == "github:ghe.corp.example/octo/app#7"


@pytest.mark.parametrize(
    "text",
    [
        "https://github.com/octo/app/issues/15#issuecomment-1",
        "https://github.com/octo/app/issues/15?x=1",
        "https://github.com/octo/app/issues/15/?x=1#issuecomment-1",
        "https://github.com/octo/app/pull/15#discussion_r123",
        "https://github.com/octo/app/pull/15?notification_referrer_id=NT_x&y=2",
        "https://github.com/octo/app/issues/15#",
    ],
)
def test_a_url_copied_from_a_browser_keeps_its_item_and_drops_query_and_fragment(
    text: str,
) -> None:
    assert WorkItemRef.parse(text).ref == "github:octo/app#15"


@pytest.mark.parametrize(
    "text", ["gh:octo/app#15", "gitlab:octo/app#15", "jira:octo/app#15", "localhost:80/o/r#1"]
)
def test_an_unknown_provider_is_refused_with_the_accepted_forms(text: str) -> None:
    with pytest.raises(ValueError, match="unknown provider") as refused:
        WorkItemRef.parse(text)
    message = str(refused.value)
    assert "'github:[<host>/]<owner>/<repo>#<number>'" in message
    assert "'[<host>/]<owner>/<repo>#<number>'" in message
    assert "https://<host>/<owner>/<repo>/issues/<number>" in message


@pytest.mark.parametrize(
    "text",
    [
        "",
        "github:/octo/repo#1",
        "github:octo//repo#1",
        "github:octo/repo#0",
        "github:octo/repo#-1",
        "github:octo/repo#x",
        "github:octo/repo",
        "github:octo/repo#1 ",
        "github:oc to/repo#1",
        "github:octo/re\x00po#1",
        "github:octo/re\npo#1",
        "github:../repo#1",
        "github:octo/..#1",
        "github:./repo#1",
        "github:-octo/repo#1",
        "-github:octo/repo#1",
        "https://github.com/octo/repo/issues/1?x=1 2",
        "https://github.com/octo/repo/issues/#1",
        "octo#1",
        "https://github.com/octo/repo/commits/1",
        "https://github.com/octo/repo/issues/1/x",
        "http://github.com/octo/repo/issues/1",
        "https://github.com/octo/repo/issues/0",
        "https://github.com/../repo/issues/1",
        "github:a/b/c/d#1",
        "github:octo/re$po#1",
        "github:bad_host!/octo/repo#1",
        "github:octo/repo/x#1",
        "github:octo/" + "r" * 300 + "#1",
        "github:octo/repo#1234567890123456789",
    ],
)
def test_bad_refs_are_refused_with_a_message_naming_them(text: str) -> None:
    with pytest.raises(ValueError, match="expected"):
        WorkItemRef.parse(text)


def test_slugs_are_not_injective_but_disambiguated_names_differ() -> None:
    first = WorkItemRef.parse("github:octo-a/b#1")
    second = WorkItemRef.parse("github:octo/a-b#1")
    assert first.slug == second.slug
    assert first.disambiguated_slug != second.disambiguated_slug
    assert first.disambiguated_slug.startswith(first.slug + "~")


def test_tmux_names_replace_dots_and_colons() -> None:
    assert tmux_session_name("github-ghe.corp-o-r-1") == "loop-github-ghe_corp-o-r-1"


def test_record_file_names_are_recognised() -> None:
    assert is_record_file_name("github-octo-repo-15.json")
    assert is_record_file_name("github-octo-repo-15~0a1b2c3d.json")
    assert not is_record_file_name("index.json")
    assert not is_record_file_name("notes.txt")
    assert not is_record_file_name(".github-octo-repo-15.json.x.tmp")


ref_alphabet = string.ascii_letters + string.digits + "._-/#:~ \x00\n" + "é/"


@settings(max_examples=400)
@given(st.text(alphabet=ref_alphabet, max_size=40) | st.text(max_size=40))
def test_any_string_either_fails_to_parse_or_gives_one_safe_path_component(text: str) -> None:
    try:
        ref = WorkItemRef.parse(text)
    except ValueError:
        return
    for name in (ref.slug, ref.disambiguated_slug):
        assert name not in ("", ".", "..")
        assert "/" not in name and "\x00" not in name
        assert all(ch in string.ascii_letters + string.digits + "._-~" for ch in name)
    assert WorkItemRef.parse(ref.ref) == ref


owner_strategy = st.text(alphabet=string.ascii_letters + string.digits + "._-", min_size=1)


@settings(max_examples=200)
@given(owner=owner_strategy, repo=owner_strategy, number=st.integers(1, 10**9))
def test_no_store_path_built_from_a_ref_escapes_its_root(
    owner: str, repo: str, number: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tmp_path_factory.mktemp("root")
    try:
        ref = WorkItemRef.parse(f"github:{owner}/{repo}#{number}")
    except ValueError:
        return
    directory = RecordDirectory(root / "local", root / "locks")
    for path in (directory.path(plain_name(ref)), directory.path(disambiguated_name(ref))):
        assert Path(path).resolve().parent == (root / "local").resolve()
        assert is_record_file_name(path.name)


def test_the_longest_accepted_ref_still_fits_every_file_name_we_write(tmp_path: Path) -> None:
    from the_loop.fsio import write_json
    from the_loop.ref import MAX_SLUG_LENGTH

    repo = "r" * (MAX_SLUG_LENGTH - len("github-octo--1"))
    ref = WorkItemRef.parse(f"github:octo/{repo}#1")
    assert len(ref.slug) == MAX_SLUG_LENGTH
    write_json(tmp_path / f"{ref.disambiguated_slug}.json", {"ok": True})
    with pytest.raises(ValueError, match="too long"):
        WorkItemRef.parse(f"github:octo/{repo}r#1")


def test_derived_strings_are_computed_once_and_kept_on_the_ref() -> None:
    ref = WorkItemRef("github", "octo", "app", 15)
    assert "slug" not in vars(ref)
    assert ref.slug == "github-octo-app-15" and vars(ref)["slug"] == "github-octo-app-15"
    assert ref.slug is vars(ref)["slug"]
    assert WorkItemRef.slug.__doc__ and "File-name form" in WorkItemRef.slug.__doc__
    assert ref == WorkItemRef("github", "octo", "app", 15)  # kept values take no part


def test_the_one_ref_coercer_keeps_a_ref_and_parses_text() -> None:
    ref = WorkItemRef.parse("github:octo/repo#15")
    assert as_ref(ref) is ref
    assert as_ref("github:octo/repo#15") == ref
    with pytest.raises(ValueError):
        as_ref("not a ref")


def test_both_stores_take_their_default_locks_dir_from_the_record_directory(
    tmp_path: Path,
) -> None:
    from the_loop.layout import StateLayout
    from the_loop.portable.store import WorkItemStore
    from the_loop.sessions.registry import SessionRegistry

    layout = StateLayout(tmp_path / "state")
    assert RecordDirectory(layout.local_dir).locks_dir == layout.local_locks_dir
    assert SessionRegistry(layout.local_dir).locks_dir == layout.local_locks_dir
    assert WorkItemStore(layout.portable_dir).locks_dir == layout.portable_locks_dir
    assert RecordDirectory(layout.local_dir, tmp_path / "elsewhere").locks_dir == (
        tmp_path / "elsewhere"
    )
