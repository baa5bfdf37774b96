"""The one error type, the named exit codes (``docs/cli/exit-codes.md``), and the warning
sink of every collaborator."""

from __future__ import annotations

from collections.abc import Callable

TYPE_CHECKING = False  # not `typing`'s: importing typing would slow `--version`
if TYPE_CHECKING:
    from typing import Any

#: Success.
EXIT_OK = 0
#: An operation failed, or nothing was found: the report says what.
EXIT_FAILED = 1
#: Invalid input: one line on stderr, nothing touched.
EXIT_USAGE = 2
#: A bug: an unexpected exception, its traceback in ``<state root>/logs/crash.log``.
EXIT_BUG = 3
#: Ctrl-C.
EXIT_INTERRUPTED = 130
#: About how much of a value an error message quotes (files may hold anything).
QUOTE_LIMIT = 80
ELLIPSIS = "..."

#: Where a store, the dispatcher or a domain function sends a warning sentence.
WarningSink = Callable[[str], None]


def ignore_warning(message: str) -> None:
    """The no-op warning sink: what ``on_warning=None`` means to every collaborator."""
    del message


def or_ignore_warnings(on_warning: WarningSink | None) -> WarningSink:
    """``on_warning``, or :func:`ignore_warning` for None."""
    return ignore_warning if on_warning is None else on_warning


class TheLoopError(Exception):
    """An error whose message is the sentence the operator reads.

    ``exit_code`` is what the command exits with: 1 for a failed operation,
    2 for invalid input (nothing was touched).
    """

    def __init__(self, message: str, *, exit_code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class UsageError(TheLoopError):
    """Invalid input: reported as one line on stderr, exit 2, nothing touched."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=EXIT_USAGE)


class CloseIncomplete(TheLoopError):
    """A session close that failed part-way: the contract between a close path and reset.

    ``checkout_removed`` says whether a workspace checkout was removed before the failure.
    """

    def __init__(self, message: str, *, checkout_removed: bool) -> None:
        super().__init__(message)
        self.checkout_removed = checkout_removed


def describe_error(error: BaseException) -> str:
    """The sentence for an error: an ``OSError`` as ``<reason> (<file>)``, else its message."""
    if isinstance(error, OSError) and error.strerror:
        where = f" ({error.filename})" if error.filename else ""
        return f"{error.strerror}{where}"
    return str(error) or type(error).__name__


def describe_unexpected(error: BaseException) -> str:
    """The sentence for an exception no code path expects (a bug): its type, then its message."""
    detail = f": {error}" if str(error) else ""
    return f"unexpected {type(error).__name__} (a bug; please report it){detail}"


def quoted(value: object, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)`` for an error message, cut to about ``limit`` characters with ``...``.

    Never formats more of a value than it shows, so a huge value costs next to nothing.
    """
    if isinstance(value, str) and len(value) > limit:
        return repr(value[:limit]) + ELLIPSIS
    text = _short_repr(value)
    return text if len(text) <= limit else text[:limit] + ELLIPSIS


class RemovalIncomplete(TheLoopError):
    """A removal of several things that failed part-way: ``removed`` names what went;
    ``done`` is what the remover did with each thing, in its own terms (may be empty)."""

    def __init__(
        self, message: str, *, removed: tuple[str, ...], done: tuple[Any, ...] = ()
    ) -> None:
        super().__init__(message)
        self.removed = removed
        self.done = done


def _short_repr(value: object) -> str:
    import reprlib  # here, not at the top: `--version` never quotes anything

    short = reprlib.Repr()
    short.maxlevel, short.maxlist, short.maxdict, short.maxstring = 2, 4, 4, QUOTE_LIMIT
    return short.repr(value)
