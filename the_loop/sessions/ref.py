"""Work-item references: ``<provider>:[<host>/]<owner>/<repo>#<number>``.

:meth:`WorkItemRef.parse` is strict (see ``state.md`` §1); every path the
stores build comes from :attr:`WorkItemRef.slug`, which is always one safe
path component.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

DEFAULT_GITHUB_HOST = "github.com"
EXPECTED_SHAPE = "<provider>:[<host>/]<owner>/<repo>#<number>, e.g. github:octo/repo#15"

_PROVIDER = re.compile(r"[a-z][a-z0-9-]*\Z")
_NAME = re.compile(r"[A-Za-z0-9._-]+\Z")
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
#: A host segment is a dotted name (``ghe.corp.example``) or ``name:port``.
_HOST = re.compile(rf"(?:{_LABEL}(?:\.{_LABEL})+(?::[0-9]{{1,5}})?|{_LABEL}:[0-9]{{1,5}})\Z")
_NUMBER = re.compile(r"[0-9]+\Z")
_UNSAFE_RUN = re.compile(r"[^A-Za-z0-9._-]+")


def _refuse(text: str, problem: str) -> ValueError:
    return ValueError(f"invalid work item {text!r}: {problem}; expected {EXPECTED_SHAPE}")


def _check_name(text: str, kind: str, value: str) -> None:
    if not _NAME.match(value):
        raise _refuse(text, f"{kind} {value!r} may only hold letters, digits, '.', '_' and '-'")
    if value in (".", "..") or value.startswith("-"):
        raise _refuse(text, f"{kind} {value!r} is not allowed")


@dataclass(frozen=True, order=True)
class WorkItemRef:
    """One work item. Equal across spellings (an explicit default host is dropped)."""

    provider: str
    owner: str
    repo: str
    number: int
    host: str = ""

    @classmethod
    def parse(cls, text: str) -> WorkItemRef:
        """Parse ``text`` strictly; raise ``ValueError`` naming the ref and the shape."""
        if not isinstance(text, str) or not text:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise _refuse(str(text), "it is empty")
        if (
            any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in text)
            or not text.isprintable()
        ):
            raise _refuse(text, "it contains whitespace or control characters")
        provider, colon, rest = text.partition(":")
        if not colon or not _PROVIDER.match(provider):
            raise _refuse(text, "it must start with a lowercase provider name and ':'")
        path, hash_sign, number_text = rest.rpartition("#")
        if not hash_sign:
            raise _refuse(text, "the '#<number>' part is missing")
        if not _NUMBER.match(number_text) or int(number_text) <= 0:
            raise _refuse(text, f"the number {number_text!r} is not a positive integer")
        segments = path.split("/")
        if any(segment == "" for segment in segments):
            raise _refuse(text, "it has an empty path segment")
        if len(segments) == 3:
            host, owner, repo = segments
            if not _HOST.match(host):
                raise _refuse(text, f"host {host!r} is not a dotted host name or name:port")
            host = host.lower()
        elif len(segments) == 2:
            host = ""
            owner, repo = segments
        else:
            raise _refuse(text, "the path must be <owner>/<repo> or <host>/<owner>/<repo>")
        _check_name(text, "owner", owner)
        _check_name(text, "repository", repo)
        if provider == "github" and host == DEFAULT_GITHUB_HOST:
            host = ""
        return cls(provider=provider, owner=owner, repo=repo, number=int(number_text), host=host)

    @property
    def path(self) -> str:
        """``[<host>/]<owner>/<repo>``: the repository part of the ref."""
        prefix = f"{self.host}/" if self.host else ""
        return f"{prefix}{self.owner}/{self.repo}"

    @property
    def repository(self) -> str:
        """``<owner>/<repo>``."""
        return f"{self.owner}/{self.repo}"

    @property
    def effective_host(self) -> str:
        """The host, with github.com filled in for ``github`` refs."""
        if self.host:
            return self.host
        return DEFAULT_GITHUB_HOST if self.provider == "github" else ""

    @property
    def ref(self) -> str:
        """The canonical string form."""
        return f"{self.provider}:{self.path}#{self.number}"

    @property
    def slug(self) -> str:
        """File-name form: one path component of ``[A-Za-z0-9._-]`` characters."""
        raw = f"{self.provider}-{self.path.replace('/', '-')}-{self.number}"
        return _UNSAFE_RUN.sub("-", raw)

    @property
    def disambiguated_slug(self) -> str:
        """``<slug>~<8 hex>``: the name used when another ref already holds :attr:`slug`."""
        digest = hashlib.sha256(self.ref.encode("utf-8")).hexdigest()[:8]
        return f"{self.slug}~{digest}"

    @property
    def url(self) -> str:
        """The web URL for ``github`` refs, ``""`` for other providers."""
        if self.provider != "github":
            return ""
        return f"https://{self.effective_host}/{self.owner}/{self.repo}/issues/{self.number}"

    def with_number(self, number: int) -> WorkItemRef:
        """The ref of item ``number`` in the same repository."""
        if number <= 0:
            raise ValueError(f"invalid number {number}: must be a positive integer")
        return WorkItemRef(self.provider, self.owner, self.repo, number, self.host)

    def __str__(self) -> str:
        return self.ref


def tmux_session_name(slug: str) -> str:
    """The tmux session name for a record slug (tmux turns '.' and ':' into '_')."""
    return "loop-" + slug.replace(".", "_").replace(":", "_")


_RECORD_NAME = re.compile(r"[a-z][a-z0-9-]*-[A-Za-z0-9._-]*-[0-9]+(?:~[0-9a-f]{8})?\.json\Z")


def is_record_file_name(name: str) -> bool:
    """True for ``<slug>.json`` / ``<slug>~<hash>.json`` names (not the index, not temp files)."""
    return bool(_RECORD_NAME.match(name)) and not name.startswith(".")
