"""Work-item references: ``github:[<host>/]<owner>/<repo>#<number>``.

:meth:`WorkItemRef.parse` is strict (see ``state.md`` §1): it accepts the
canonical form, the ``[<host>/]<owner>/<repo>#<number>`` shorthand and the web
URL of an issue or pull request (its query and fragment ignored), all meaning the
same item, and refuses every other provider. Provider, scheme, host, owner and
repository ignore case: the canonical ref is lowercase. Every path the stores build
comes from :attr:`WorkItemRef.slug`, which is always one safe path component.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, overload

from the_loop.errors import quoted

DEFAULT_GITHUB_HOST = "github.com"
#: The one provider the-loop knows.
GITHUB = "github"
EXPECTED_SHAPE = (
    "one of 'github:[<host>/]<owner>/<repo>#<number>' (e.g. 'github:octo/repo#15'), "
    "'[<host>/]<owner>/<repo>#<number>' or "
    "'https://<host>/<owner>/<repo>/issues/<number>' (or /pull/<number>)"
)
#: An issue's or pull request's web URL: host, owner, repo, number; a trailing '/', a
#: query and a fragment (as copied from a browser: ``?x=1``, ``#issuecomment-1``) ignored.
_WEB_URL = re.compile(
    r"(?i:https)://([^/?#]+)/([^/?#]+)/([^/?#]+)/(?:issues|pull)/([^/?#]+)/?(?:\?[^#]*)?(?:#.*)?\Z"
)

_PROVIDER = re.compile(r"[a-z][a-z0-9-]*\Z")
_NAME = re.compile(r"[A-Za-z0-9._-]+\Z")
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
#: A host segment is a dotted name (``ghe.corp.example``) or ``name:port``.
_HOST = re.compile(rf"(?:{_LABEL}(?:\.{_LABEL})+(?::[0-9]{{1,5}})?|{_LABEL}:[0-9]{{1,5}})\Z")
_NUMBER = re.compile(r"[0-9]{1,18}\Z")
#: Longest slug: every file name written for it — ``<slug>~<8 hex>.json`` and the
#: temp name around that, ``.<name>.<8 random>.tmp`` — fits the 255-byte name limit.
MAX_SLUG_LENGTH = 227
_UNSAFE_RUN = re.compile(r"[^A-Za-z0-9._-]+")
#: ``\s`` matches exactly what ``str.isspace`` accepts; with C0 controls and DEL.
_SPACE_OR_CONTROL = re.compile(r"[\s\x00-\x1f\x7f]")
_DOTS = (".", "..")
#: The common spelling (no host, no leading zero), which the strict rules accept as is.
_PLAIN_SHAPE = re.compile(
    r"github:([A-Za-z0-9._][A-Za-z0-9._-]*)/([A-Za-z0-9._][A-Za-z0-9._-]*)"
    r"#([1-9][0-9]{0,17})\Z"
)


def _refuse(text: str, problem: str) -> ValueError:
    return ValueError(f"invalid work item {quoted(text)}: {problem}; expected {EXPECTED_SHAPE}")


def _check_name(text: str, kind: str, value: str) -> None:
    if not _NAME.match(value):
        raise _refuse(
            text, f"{kind} {quoted(value)} may only hold letters, digits, '.', '_' and '-'"
        )
    if value in (".", "..") or value.startswith("-"):
        raise _refuse(text, f"{kind} {quoted(value)} is not allowed")


_Value = TypeVar("_Value")


class _derived(Generic[_Value]):
    """A property computed on first use and kept in the instance's ``__dict__``.

    ``functools.cached_property`` takes a lock on every first use (Python 3.11), which
    a listing of ten thousand refs pays three times per ref; a ref is immutable, so
    two threads that race here compute and store the same string, and no lock is
    needed. Like ``cached_property`` it is a non-data descriptor: once stored, the
    instance's own value is found without calling it again.
    """

    def __init__(self, compute: Callable[[Any], _Value]) -> None:
        self._compute = compute
        self._name = compute.__name__
        self.__doc__ = compute.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> _derived[_Value]: ...
    @overload
    def __get__(self, instance: object, owner: type | None = None) -> _Value: ...
    def __get__(self, instance: object, owner: type | None = None) -> Any:
        if instance is None:
            return self
        value = instance.__dict__[self._name] = self._compute(instance)
        return value


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
        if cls is WorkItemRef:
            return _parse_cached(text)
        return _parse(cls, text)

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

    @_derived
    def ref(self) -> str:
        """The canonical string form."""
        return f"{self.provider}:{self.path}#{self.number}"

    @_derived
    def slug(self) -> str:
        """File-name form: one path component of ``[A-Za-z0-9._-]`` characters."""
        raw = f"{self.provider}-{self.path.replace('/', '-')}-{self.number}"
        return _UNSAFE_RUN.sub("-", raw)

    @_derived
    def disambiguated_slug(self) -> str:
        """``<slug>~<8 hex>``: the name used when another ref already holds :attr:`slug`."""
        import hashlib  # deferred: most commands never need a disambiguated name

        digest = hashlib.sha256(self.ref.encode("utf-8")).hexdigest()[:8]
        return f"{self.slug}~{digest}"

    @_derived
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


def _parse(cls: type[WorkItemRef], text: str) -> WorkItemRef:
    """The strict parse behind :meth:`WorkItemRef.parse` (``text`` is a non-empty str)."""
    plain = _PLAIN_SHAPE.match(text)
    # Such a ref's slug is the text with ':', '/' and '#' as '-': just as long.
    if plain and len(text) <= MAX_SLUG_LENGTH:
        owner, repo, number = plain.groups()
        if owner not in _DOTS and repo not in _DOTS:
            return cls(GITHUB, owner.lower(), repo.lower(), int(number))
    return _parse_strict(cls, text)


def _canonical_spelling(text: str) -> str:
    """``text`` in the ``github:`` form when it is a web URL or the shorthand; else as is."""
    url = _WEB_URL.match(text)
    if url:
        host, owner, repo, number = url.groups()
        return f"{GITHUB}:{host}/{owner}/{repo}#{number}"
    head = text.split("/", 1)[0]
    if "/" in text and ":" not in head:
        return f"{GITHUB}:{text}"
    return text


def _parse_strict(cls: type[WorkItemRef], text: str) -> WorkItemRef:
    """Every rule of ``state.md`` §1 on ``text`` in the ``github:`` form, one by one,
    naming ``text`` and the first rule it breaks."""
    if _SPACE_OR_CONTROL.search(text) or not text.isprintable():
        raise _refuse(text, "it contains whitespace or control characters")
    provider, rest = _provider_and_rest(text)
    path, hash_sign, number_text = rest.rpartition("#")
    if not hash_sign:
        raise _refuse(text, "the '#<number>' part is missing")
    if not _NUMBER.match(number_text) or int(number_text) <= 0:
        raise _refuse(text, f"the number {quoted(number_text)} is not a positive integer")
    host, owner, repo = _path_parts(text, path)
    _check_name(text, "owner", owner)
    _check_name(text, "repository", repo)
    # GitHub's owner and repository names ignore case: the canonical ref is lowercase.
    owner, repo = owner.lower(), repo.lower()
    ref = cls(provider=provider, owner=owner, repo=repo, number=int(number_text), host=host)
    if len(ref.slug) > MAX_SLUG_LENGTH:
        raise _refuse(text, f"it is too long (its file name would exceed {MAX_SLUG_LENGTH})")
    return ref


def _provider_and_rest(text: str) -> tuple[str, str]:
    """The provider (only ``github``) and what follows its ``:``, from any accepted form."""
    spelling = _canonical_spelling(text)
    if spelling[:8].lower().startswith(("https://", "http://")):
        raise _refuse(text, "it is not the https URL of an issue or a pull request")
    provider, colon, rest = spelling.partition(":")
    provider = provider.lower()
    if not colon or not _PROVIDER.match(provider):
        raise _refuse(text, "it must start with 'github:', be '<owner>/<repo>#<number>' or a URL")
    if provider != GITHUB:
        raise _refuse(text, f"unknown provider {provider!r}: only 'github' is known")
    return provider, rest


def _path_parts(text: str, path: str) -> tuple[str, str, str]:
    """``(host, owner, repo)`` of ``[<host>/]<owner>/<repo>``; the host ``""`` for github.com."""
    segments = path.split("/")
    if any(segment == "" for segment in segments):
        raise _refuse(text, "it has an empty path segment")
    if len(segments) == 2:
        owner, repo = segments
        return "", owner, repo
    if len(segments) != 3:
        raise _refuse(text, "the path must be <owner>/<repo> or <host>/<owner>/<repo>")
    host, owner, repo = segments
    if not _HOST.match(host):
        raise _refuse(text, f"host {quoted(host)} is not a dotted host name or name:port")
    host = host.lower()
    return ("" if host == DEFAULT_GITHUB_HOST else host), owner, repo


@functools.lru_cache(maxsize=1 << 16)
def _parse_cached(text: str) -> WorkItemRef:
    # Refs are immutable: a listing of 10,000 records parses each stored spelling once.
    return _parse(WorkItemRef, text)


#: ``WorkItemRef`` order as a sort key: the same order, compared as plain tuples.
ref_order = operator.attrgetter("provider", "owner", "repo", "number", "host")

#: A work item as the stores accept it: the ref itself or its text.
RefLike = WorkItemRef | str


def as_ref(ref: RefLike) -> WorkItemRef:
    """``ref`` itself, or parsed from its text (``ValueError`` for a bad ref)."""
    return ref if isinstance(ref, WorkItemRef) else WorkItemRef.parse(ref)


_RECORD_NAME = re.compile(r"[a-z][a-z0-9-]*-[A-Za-z0-9._-]*-[0-9]+(?:~[0-9a-f]{8})?\.json\Z")


def is_record_file_name(name: str) -> bool:
    """True for ``<slug>.json`` / ``<slug>~<hash>.json`` names (not the index, not temp files)."""
    return bool(_RECORD_NAME.match(name)) and not name.startswith(".")
