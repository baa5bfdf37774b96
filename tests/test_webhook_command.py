"""`the-loop webhook` as a real process: no secret, no receiver; `--insecure` on loopback
only; one receiver per state root by its lock; SIGTERM finishes what was accepted and
exits 0; `status` and `stop`; a delivery answered 202 survives a `kill -9`."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.tmuxsock import wait_until
from tests.helpers.webhook_sender import (
    SECRET,
    comment_payload,
    deliver,
    free_port,
    read_answer,
    request,
)
from tests.helpers.world import World
from the_loop.dispatch.daemons import lock_holder, running_daemons
from the_loop.webhook.inbox import Inbox

SECRET_VARIABLE = "THE_LOOP_GH_WEBHOOK_SECRET"


class Receiving(World):
    """A world whose config puts the receiver on a free loopback port."""

    def __init__(self, home: Path, host: str = "127.0.0.1") -> None:
        self.port = free_port()
        super().__init__(home, {"webhook": {"host": host, "port": self.port}}, source="webhook")
        self.processes: list[subprocess.Popen[bytes]] = []

    @property
    def address(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    @property
    def inbox(self) -> Inbox:
        local = self.layout.local_dir
        return Inbox(local / "webhook-inbox", lock_path=self.layout.local_locks_dir / "x.lock")

    def status(self) -> dict[str, Any]:
        code, out, _ = self.run_cli(["webhook", "status", "--format", "json"])
        assert code == 0
        return json.loads(out)["items"][0]

    def start(self, *args: str, secret: str | None = SECRET) -> subprocess.Popen[bytes]:
        """``the-loop webhook`` in a process; returns once it answers on its port."""
        env = {key: value for key, value in os.environ.items() if key != SECRET_VARIABLE}
        if secret is not None:
            env[SECRET_VARIABLE] = secret
        argv = [sys.executable, "-m", "the_loop", "--config", str(self.config_path), "webhook"]
        process = subprocess.Popen([*argv, *args], env=env, stderr=subprocess.PIPE)
        self.processes.append(process)
        assert wait_until(lambda: self._serving(process), timeout=30), self._said(process)
        return process

    def _serving(self, process: subprocess.Popen[bytes]) -> bool:
        if process.poll() is not None:
            return True
        status_file = self.layout.local_dir / "webhook-status.json"
        try:
            status = json.loads(status_file.read_text("utf-8"))
        except (OSError, ValueError):
            return False
        return status.get("pid") == process.pid and status.get("stoppedAt") is None

    @staticmethod
    def _said(process: subprocess.Popen[bytes]) -> str:
        if process.poll() is None or process.stderr is None:
            return "still starting"
        return process.stderr.read().decode(errors="replace")

    def events_named(self, name: str) -> list[dict[str, Any]]:
        log = self.layout.event_log
        lines = log.read_text("utf-8").splitlines() if log.exists() else []
        return [event for line in lines if (event := json.loads(line))["event"] == name]


@pytest.fixture
def world(tmp_path: Path) -> Iterator[Receiving]:
    receiving = Receiving(tmp_path / "home")
    try:
        yield receiving
    finally:
        for process in receiving.processes:
            if process.poll() is None:
                process.kill()
                process.wait()


def test_without_the_secret_the_receiver_refuses_to_start(
    world: Receiving, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SECRET_VARIABLE, raising=False)
    code, _, err = world.run_cli(["webhook"])
    assert code == 2
    assert f"${SECRET_VARIABLE} (webhook.secretEnv) is unset or empty" in err
    monkeypatch.setenv(SECRET_VARIABLE, "")
    assert world.run_cli(["webhook"])[0] == 2
    assert not world.layout.pidfile.exists()


def test_the_secret_s_variable_is_the_one_webhook_secret_env_names(
    world: Receiving, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.configure({"webhook": {"port": world.port, "secretEnv": "MY_HOOK_SECRET"}})
    monkeypatch.setenv(SECRET_VARIABLE, SECRET)
    code, _, err = world.run_cli(["webhook"])
    assert code == 2 and "$MY_HOOK_SECRET" in err


def test_insecure_is_refused_off_a_loopback_address(
    world: Receiving, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SECRET_VARIABLE, raising=False)
    for host in ("0.0.0.0", "192.0.2.10", "::"):
        world.configure({"webhook": {"host": host, "port": world.port}})
        code, _, err = world.run_cli(["webhook", "--insecure"])
        assert code == 2, host
        assert f"--insecure is refused on {host}" in err
    assert not world.layout.pidfile.exists()


def test_insecure_on_loopback_starts_with_a_warning_and_checks_no_signature(
    world: Receiving,
) -> None:
    process = world.start("--insecure", secret=None)
    answer = deliver(world.address, comment_payload(), secret=None)
    assert answer.status == 202
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0
    assert process.stderr is not None
    assert "warning: webhook: --insecure:" in process.stderr.read().decode()
    [started] = world.events_named("webhook.started")
    assert (started["insecure"], started["level"]) == (True, "warning")


def test_a_second_receiver_is_refused_by_the_lock_naming_the_holder(world: Receiving) -> None:
    first = world.start()
    second = subprocess.run(
        [sys.executable, "-m", "the_loop", "--config", str(world.config_path), "webhook"],
        env={**os.environ, SECRET_VARIABLE: SECRET},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert second.returncode == 1
    assert (
        f"error: another webhook receiver holds {world.layout.webhook_lock} (pid {first.pid})"
        in second.stderr
    )
    assert lock_holder(world.layout.pidfile) == first.pid
    assert [(d.name, d.pid, d.evidence) for d in running_daemons(world.layout)] == [
        ("webhook receiver", first.pid, "lock")
    ]


def test_sigterm_finishes_an_accepted_delivery_then_exits_0_and_frees_the_lock(
    world: Receiving,
) -> None:
    process = world.start()
    data = request(json.dumps(comment_payload()).encode(), delivery="d-in-flight")
    with socket.create_connection(world.address, timeout=30) as connection:
        connection.sendall(data[:-10])
        time.sleep(0.3)  # the receiver has accepted the connection and reads its body
        process.send_signal(signal.SIGTERM)
        assert wait_until(lambda: _refused(world.address), timeout=10), "still accepting"
        connection.sendall(data[-10:])
        answer = read_answer(connection)
    assert answer.status == 202
    assert process.wait(timeout=30) == 0
    assert lock_holder(world.layout.pidfile) is None
    assert [e.delivery_id for e in world.inbox.pending()] == ["d-in-flight"]
    [stopped] = world.events_named("webhook.stopped")
    assert (stopped["signal"], stopped["accepted"]) == ("SIGTERM", 1)


def _refused(address: tuple[str, int]) -> bool:
    try:
        socket.create_connection(address, timeout=1).close()
    except OSError:
        return True
    return False


def test_status_and_stop_follow_the_receiver_by_its_lock(world: Receiving) -> None:
    assert world.status() == {"running": False, "pid": None, "status": None, "pending": 0}
    process = world.start()
    assert deliver(world.address, comment_payload(), delivery="d-1").status == 202
    assert deliver(world.address, comment_payload(), delivery="d-1").status == 202
    deliver(world.address, comment_payload(), secret="wrong")
    assert wait_until(lambda: (world.status()["status"] or {}).get("rejected") == 1, timeout=10)
    status = world.status()
    assert (status["running"], status["pid"], status["pending"]) == (True, process.pid, 1)
    counts = {key: status["status"][key] for key in ("accepted", "duplicate", "rejected")}
    assert counts == {"accepted": 1, "duplicate": 1, "rejected": 1}
    assert status["status"]["url"] == f"http://127.0.0.1:{world.port}/gh-webhook"
    code, out, _ = world.run_cli(["webhook", "status"])
    assert code == 0
    assert f"webhook: running (pid {process.pid}) on http://127.0.0.1:{world.port}" in out
    assert "1 accepted, 1 duplicate, 1 rejected" in out
    code, out, _ = world.run_cli(["webhook", "stop"])
    assert (code, out.strip()) == (0, f"webhook: stopped pid {process.pid}")
    assert process.wait(timeout=30) == 0
    code, out, _ = world.run_cli(["webhook", "status"])
    assert out.splitlines()[0] == "webhook: not running"
    assert f"the last receiver (pid {process.pid})" in out
    assert world.run_cli(["webhook", "stop"])[1].strip() == "webhook: not running"


def test_a_delivery_answered_202_is_still_there_after_kill_9(world: Receiving) -> None:
    process = world.start()
    assert deliver(world.address, comment_payload(), delivery="d-durable").status == 202
    process.kill()  # SIGKILL: nothing is flushed or closed by the receiver
    process.wait(timeout=30)
    assert [e.delivery_id for e in world.inbox.pending()] == ["d-durable"]
    world.start()  # the kernel released the lock with the process
    assert deliver(world.address, comment_payload(), delivery="d-durable").status == 202
    assert [e.delivery_id for e in world.inbox.pending()] == ["d-durable"]
    assert len(world.events_named("webhook.duplicate")) == 1


def test_print_setup_says_what_to_enter_on_github_and_starts_nothing(
    world: Receiving, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SECRET_VARIABLE, raising=False)
    world.configure({"webhook": {"port": world.port}, "polling": {"repositories": ["octo/app"]}})
    code, out, _ = world.run_cli(["webhook", "--print-setup"])
    assert code == 0
    local = f"http://127.0.0.1:{world.port}/gh-webhook"
    assert f"(this machine listens on {local})" in out
    assert "Content type:    application/json" in out
    assert f"${SECRET_VARIABLE} on this machine (NOT set here" in out
    assert (
        "gh webhook forward --repo=octo/app --events=issue_comment,issues,pull_request,"
        "pull_request_review,pull_request_review_comment,check_run,status "
        f'--url={local} --secret="${SECRET_VARIABLE}"'
    ) in out
    code, out, _ = world.run_cli(["webhook", "--print-setup", "--format", "json"])
    item = json.loads(out)["items"][0]
    assert item["events"] == [
        "issue_comment",
        "issues",
        "pull_request",
        "pull_request_review",
        "pull_request_review_comment",
        "check_run",
        "status",
    ]
    assert (item["contentType"], item["secretSet"]) == ("application/json", False)
    assert not world.layout.pidfile.exists()
    assert not (world.layout.local_dir / "webhook-inbox").exists()


def test_an_inbox_that_cannot_be_read_is_one_line_and_exit_1_not_a_traceback(
    world: Receiving, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SECRET_VARIABLE, SECRET)
    inbox = world.layout.local_dir / "webhook-inbox"
    inbox.parent.mkdir(parents=True, exist_ok=True)
    inbox.write_text("in the way", "utf-8")
    code, _, err = world.run_cli(["webhook"])
    assert code == 1, err
    assert f"the inbox {inbox} cannot be read" in err and "Traceback" not in err
