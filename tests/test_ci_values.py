"""Issue 19, CI failures, the values: what GitHub's check runs and statuses say of a head,
the key of a failure's paste, the end of a step's log, the kept heads; and the client's
one redirect, followed without the token to another host."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from the_loop.adapters.heads_file import FileHeads
from the_loop.github.client import GitHubClient
from the_loop.github.replies import GitHubHTTPError
from the_loop.intake.ci import (
    CheckDetails,
    FailedCheck,
    HeadChecks,
    check_key,
    check_paste,
    check_runs_reading,
    first_failed_step,
    head_verdict,
    statuses_reading,
    step_log,
)
from the_loop.intake.drain import delivery_key
from the_loop.polling.ci_ports import HeadState
from the_loop.ref import WorkItemRef

SHA = "3f2a9c1d4b5e6f708192a3b4c5d6e7f801234567"
HEAD = HeadChecks(
    WorkItemRef.parse("github:octo/app#40"), WorkItemRef.parse("github:octo/app#15"), SHA, "failing"
)


def run(name: str, status: str = "completed", conclusion: str | None = "success") -> Any:
    return {
        "id": 7002,
        "name": name,
        "status": status,
        "conclusion": conclusion,
        "html_url": "https://github.com/octo/app/runs/7002",
        "details_url": "https://github.com/octo/app/actions/runs/7001/job/7003",
        "app": {"slug": "github-actions"},
        "output": {"title": "1 test failed"},
    }


def test_check_runs_say_failing_active_green_or_none() -> None:
    failing = check_runs_reading({"check_runs": [run("lint"), run("test", conclusion="failure")]})
    assert failing.state == "failing"
    [check] = failing.failed
    assert (check.name, check.conclusion, check.job_id, check.by) == (
        "test",
        "failure",
        7003,
        "github-actions",
    )
    assert check.url == "https://github.com/octo/app/runs/7002" and check.summary == "1 test failed"
    running = check_runs_reading({"check_runs": [run("a", "in_progress", None), run("b")]})
    assert running.state == "active"
    assert check_runs_reading({"check_runs": [run("a"), run("b", conclusion="skipped")]}).state == (
        "green"
    )
    assert check_runs_reading({"check_runs": [run("a", conclusion="cancelled")]}).state == "other"
    assert check_runs_reading({"check_runs": []}).state == "none"
    timed_out = check_runs_reading({"check_runs": [run("a", conclusion="timed_out")]})
    assert [c.conclusion for c in timed_out.failed] == ["timed_out"]
    other_app = {**run("a", conclusion="failure"), "app": {"slug": "circleci"}}
    assert check_runs_reading({"check_runs": [other_app]}).failed[0].job_id is None


def test_statuses_fail_on_failure_or_error_and_are_green_only_all_success() -> None:
    def status(context: str, state: str) -> dict[str, Any]:
        return {"context": context, "state": state, "target_url": "https://ci/1", "description": ""}

    reading = statuses_reading({"statuses": [status("a", "error"), status("b", "success")]})
    assert reading.state == "failing" and [c.kind for c in reading.failed] == ["status"]
    assert statuses_reading({"statuses": [status("a", "pending")]}).state == "active"
    assert statuses_reading({"statuses": [status("a", "success")]}).state == "green"
    assert statuses_reading({"state": "pending", "statuses": []}).state == "none"


def test_a_head_is_green_by_both_answers() -> None:
    assert head_verdict(["green", "none"]) == "green"
    assert head_verdict(["green", "green"]) == "green"
    assert head_verdict(["none", "none"]) == "pending"
    assert head_verdict(["green", "active"]) == "pending"
    assert head_verdict(["green", "failing"]) == "failing"
    assert head_verdict(["active", "none"], failed=True) == "failing"


def test_a_failures_key_is_a_delivery_key_one_per_head_and_check() -> None:
    names = ["test (3.11)", "ünïcode / ✓", "x" * 300, "", "a/b", "a-b"]
    keys = [check_key(SHA, FailedCheck(name, "failure")) for name in names]
    assert all(delivery_key(key) == key for key in keys)
    assert keys[0].startswith("ci-3f2a9c1d4b5e-test-3.11-") and len(set(keys)) == len(keys)
    assert check_key(SHA, FailedCheck("x", "failure")) != check_key(
        SHA, FailedCheck("x", "error", kind="status")
    )
    assert check_key("0" * 40, FailedCheck("x", "failure")) != check_key(
        SHA, FailedCheck("x", "failure")
    )


def test_the_first_failed_step_is_the_first_by_number() -> None:
    steps = [
        {"name": "Post", "number": 4, "conclusion": "failure"},
        {"name": "Run pytest", "number": 3, "conclusion": "timed_out"},
        {"name": "Set up", "number": 1, "conclusion": "success"},
    ]
    assert first_failed_step({"steps": steps}) == "Run pytest"
    assert first_failed_step({"steps": [{"name": "a", "conclusion": "success"}]}) == ""
    assert first_failed_step({}) == ""


def test_a_steps_log_runs_from_its_group_to_its_last_error_without_stamps_or_escapes() -> None:
    stamp = "2026-12-01T09:00:00.1234567Z "
    log = "\n".join(
        stamp + line
        for line in (
            "##[group]Run ruff check",
            "ok",
            "##[group]Run pytest",
            "\x1b[31mboom\x1b[0m",
            "##[error]Process completed with exit code 1.",
            "Post job cleanup.",
        )
    )
    assert step_log(log, "Run pytest") == (
        "##[group]Run pytest\nboom\n##[error]Process completed with exit code 1."
    )
    assert step_log(log, "pytest").startswith("##[group]Run pytest")
    assert step_log("plain\nlines\n", "Run pytest") == "plain\nlines"


def test_a_paste_quotes_every_line_of_the_log_and_holds_no_control_character() -> None:
    check = FailedCheck('evil"\x1b[2J name\nsecond', "failure", "https://x/1\x07")
    log = "line one\r\n\x1b]0;title\x07line two\u202e\n\x00end"
    text = check_paste(HEAD, check, CheckDetails("Run\ttests", log))
    assert not any(ord(c) < 32 and c != "\n" for c in text) and "\x1b" not in text
    framing = [line for line in text.splitlines() if line and not line.startswith("> ")]
    assert all(line.startswith(("[the-loop] ", "https://")) for line in framing), framing
    assert "> line two" in text and "Hidden content" in text


def test_a_paste_without_a_log_says_why() -> None:
    text = check_paste(HEAD, FailedCheck("t", "failure"), CheckDetails(missing="no answer"))
    assert text.endswith("[the-loop] No log here: no answer; read it at the link.")


def test_the_heads_file_keeps_states_across_instances_and_forgets_on_request(
    tmp_path: Path,
) -> None:
    path, lock = tmp_path / "local" / "poll-heads.json", tmp_path / "locks" / "heads.lock"
    heads = FileHeads(path, lock)
    heads.put("github:octo/app#40", HeadState(SHA, runs="green", statuses="none", turn="statuses"))
    heads.put("github:octo/app#41", HeadState("b" * 40, is_open=False))
    assert not path.exists(), "staged until saved"
    heads.save()
    again = FileHeads(path, lock)
    assert again.get("github:octo/app#40") == HeadState(SHA, True, "green", "none", "statuses")
    assert sorted(again.known()) == ["github:octo/app#40", "github:octo/app#41"]
    again.put("github:octo/app#41", None)
    again.save()
    assert FileHeads(path, lock).known() == ["github:octo/app#40"]
    path.write_text("{not json", encoding="utf-8")
    assert FileHeads(path, lock).get("github:octo/app#40") is None


class _Recorder(BaseHTTPRequestHandler):
    """Serves ``answers[path]`` (status, headers, body) and records each request's headers."""

    answers: ClassVar[dict[str, tuple[int, dict[str, str], bytes]]] = {}
    seen: ClassVar[list[tuple[str, dict[str, str]]]] = []

    def do_GET(self) -> None:
        self.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
        status, headers, body = self.answers.get(self.path, (404, {}, b"{}"))
        self.send_response(status)
        for name, value in {**headers, "Content-Length": str(len(body))}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def two_hosts() -> Iterator[tuple[str, str, type[_Recorder]]]:
    handler = type("Recorder", (_Recorder,), {"answers": {}, "seen": []})
    servers = [ThreadingHTTPServer(("127.0.0.1", 0), handler) for _ in range(2)]
    threads = [threading.Thread(target=s.serve_forever, args=(0.05,), daemon=True) for s in servers]
    for thread in threads:
        thread.start()
    try:
        api, blob = (f"http://127.0.0.1:{s.server_address[1]}" for s in servers)
        yield api, blob, handler
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


def test_a_download_follows_one_redirect_to_another_host_without_the_token(
    two_hosts: tuple[str, str, type[_Recorder]],
) -> None:
    api, blob, handler = two_hosts
    handler.answers["/logs"] = (302, {"Location": f"{blob}/blob?sig=secret"}, b"")
    handler.answers["/blob?sig=secret"] = (200, {"Content-Type": "text/plain"}, b"the log\n")
    with GitHubClient(api, "ghp_secret") as client:
        assert client.download("/logs") == b"the log\n"
    (first, asked), (second, sent) = handler.seen
    assert (first, second) == ("/logs", "/blob?sig=secret")
    assert asked["authorization"] == "Bearer ghp_secret" and "authorization" not in sent


def test_a_second_redirect_or_a_target_that_is_no_url_is_refused_naming_hosts_only(
    two_hosts: tuple[str, str, type[_Recorder]],
) -> None:
    api, blob, handler = two_hosts
    handler.answers["/logs"] = (302, {"Location": f"{blob}/again?sig=secret"}, b"")
    handler.answers["/again?sig=secret"] = (302, {"Location": f"{api}/logs"}, b"")
    handler.answers["/ftp"] = (302, {"Location": "ftp://example.com/x"}, b"")
    handler.answers["/gone"] = (302, {"Location": f"{blob}/missing?sig=secret"}, b"")
    with GitHubClient(api, "ghp_secret") as client:
        with pytest.raises(GitHubHTTPError, match="redirected the download again") as again:
            client.download("/logs")
        with pytest.raises(GitHubHTTPError, match="no usable URL"):
            client.download("/ftp")
        with pytest.raises(GitHubHTTPError, match="answered 404") as gone:
            client.download("/gone")
    for error in (again.value, gone.value):
        assert "secret" not in str(error)
    blobs = [h for path, h in handler.seen if path.startswith(("/again", "/missing"))]
    assert len(blobs) == 2 and all("authorization" not in h for h in blobs)
