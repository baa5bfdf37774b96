"""docs/cli/config.md, the config schema and the code's defaults agree: every schema key
is documented with the default the code uses, and every schema key has a description."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from the_loop.config.defaults import DEFAULTS
from the_loop.config.file import SCHEMA_PATH, Config
from the_loop.dispatch.harnesses import harnesses_from_config
from the_loop.dispatch.settings import DispatchSettings
from the_loop.dispatch.tmux import TmuxRunner
from the_loop.dispatch.workspace import Workspace

DOC = Path(__file__).resolve().parents[1] / "docs" / "cli" / "config.md"
SCHEMA: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
HARNESS = re.compile(r"^routing\.harnesses\.(claude|cursor|command)\.")
ROW = re.compile(r"^\| `(?P<key>[^`]+)` \| [^|]+ \| (?P<default>.+?) \| .+ \|$")


def resolved(node: Mapping[str, Any]) -> Mapping[str, Any]:
    while "$ref" in node:
        node = SCHEMA["$defs"][str(node["$ref"]).rsplit("/", 1)[1]]
    return node


def schema_nodes(
    node: Mapping[str, Any], path: str = ""
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every key of the schema, dotted, with its own (unresolved) node."""
    for key, child in resolved(node).get("properties", {}).items():
        dotted = f"{path}{key}"
        yield dotted, child
        yield from schema_nodes(child, dotted + ".")


def leaf_keys() -> set[str]:
    return {key for key, node in schema_nodes(SCHEMA) if "properties" not in resolved(node)}


def documented_key(key: str) -> str:
    return HARNESS.sub("routing.harnesses.<name>.", key)


def documented_rows(text: str) -> dict[str, str]:
    return {m["key"]: m["default"] for line in text.splitlines() if (m := ROW.match(line))}


def undocumented(text: str) -> list[str]:
    rows = documented_rows(text)
    return sorted({documented_key(key) for key in leaf_keys()} - set(rows))


def documented_defaults(key: str, cell: str) -> Any:
    """The value the cell shows for ``key``: ``"`x`"``, or ``"name: `x`; ..."`` per harness."""
    parts = dict(re.findall(r"(\w+): `([^`]*)`", cell))
    if parts and key.startswith("routing.harnesses."):
        return yaml.safe_load(parts[HARNESS.match(key)[1]])  # type: ignore[index]
    [value] = re.fullmatch(r"`([^`]*)`", cell).groups()  # type: ignore[union-attr]
    return yaml.safe_load(value)


def test_every_schema_key_is_documented_in_the_config_reference() -> None:
    assert undocumented(DOC.read_text(encoding="utf-8")) == []


def test_the_reference_check_names_a_key_whose_row_is_gone() -> None:
    text = DOC.read_text(encoding="utf-8")
    without = "\n".join(line for line in text.splitlines() if "`routing.tmux.binary`" not in line)
    assert undocumented(without) == ["routing.tmux.binary"]


def test_the_reference_documents_no_key_the_schema_lacks() -> None:
    known = {documented_key(key) for key in leaf_keys()}
    assert set(documented_rows(DOC.read_text(encoding="utf-8"))) - known == set()


def test_every_key_has_a_declared_default_and_every_declared_default_a_key() -> None:
    assert set(DEFAULTS) == leaf_keys()


def test_every_documented_default_is_the_declared_default() -> None:
    rows = documented_rows(DOC.read_text(encoding="utf-8"))
    wrong = {
        key: (documented_defaults(key, rows[documented_key(key)]), DEFAULTS[key])
        for key in sorted(leaf_keys())
        if documented_defaults(key, rows[documented_key(key)]) != DEFAULTS[key]
    }
    assert wrong == {}


def test_every_schema_key_has_a_description() -> None:
    missing = [
        key
        for key, node in schema_nodes(SCHEMA)
        if not isinstance(node.get("description", resolved(node).get("description")), str)
    ]
    assert missing == []


def test_the_readers_of_an_empty_config_use_the_declared_defaults() -> None:
    empty = Config()
    settings = DispatchSettings.from_config(empty)
    runner = TmuxRunner.from_config(empty)
    workspace = Workspace.from_config(empty)
    harnesses = harnesses_from_config(empty)
    read = {
        "routing.defaultHarness": settings.default_harness,
        "routing.prompt": settings.prompt,
        "routing.spawnWorkdir": settings.spawn_workdir,
        "routing.tmux.keepSessionOnClose": settings.keep_session_on_close,
        "routing.tmux.killHarnessOnClose": settings.kill_harness_on_close,
        "routing.tmux.harnessKillGraceSeconds": settings.harness_kill_grace_seconds,
        "routing.workspace.keepCheckoutOnClose": settings.keep_checkout_on_close,
        "routing.tmux.binary": runner.binary,
        "routing.tmux.socket": runner.socket,
        "routing.dispatchTimeoutSeconds": runner.timeout,
        "routing.workspace.strategy": workspace.strategy,
        "routing.workspace.gitBinary": workspace.git_binary,
        "routing.workspace.cloneProtocol": workspace.clone_protocol,
        "routing.workspace.defaultHost": workspace.default_host,
        "routing.harnesses.claude.binary": harnesses["claude"].binary,
        "routing.harnesses.cursor.binary": harnesses["cursor"].binary,
    }
    assert read == {key: DEFAULTS[key] for key in read}
    assert DispatchSettings() == settings


EXAMPLE = DOC.parents[1] / "examples" / "cli-config.yaml"
LINE = re.compile(r"^(?P<indent> *)(?P<key>[\w/]+):(?P<value>[^#]*?)\s*(#\s*(?P<note>.*))?$")


def example_claims() -> dict[str, tuple[str, str]]:
    """Each key of the example whose comment starts with ``default``: (value, comment)."""
    stack: list[str] = []
    claims: dict[str, tuple[str, str]] = {}
    for line in EXAMPLE.read_text(encoding="utf-8").splitlines():
        match = LINE.match(line)
        if match is None:
            continue
        depth = len(match["indent"]) // 2
        stack[depth:] = [match["key"]]
        note = match["note"] or ""
        if note.startswith("default"):
            claims[".".join(stack)] = (match["value"].strip(), note)
    return claims


def test_every_default_the_example_config_states_is_the_declared_default() -> None:
    wrong: dict[str, Any] = {}
    for key, (value, note) in example_claims().items():
        stated = note.removeprefix("default").split(";")[0].split(":")[0].strip()
        claimed = yaml.safe_load(stated) if stated else yaml.safe_load(value)
        if claimed is None and value == "":
            claimed = {}
        if claimed != DEFAULTS[key]:
            wrong[key] = (claimed, DEFAULTS[key])
    assert len(example_claims()) > 20
    assert wrong == {}
