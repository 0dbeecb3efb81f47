"""Errors raised by webshop-gym.

Every error derives from :class:`Error`, so ``except webshop_gym.error.Error`` catches them all.
Messages name what was given, what was expected and, where it helps, what to do.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class Error(Exception):
    """Base class of all webshop-gym errors."""


class Interrupted(KeyboardInterrupt):
    """A signal (SIGINT, SIGTERM, SIGHUP) stopped the work: it unwinds as Ctrl-C does.

    Attributes:
        signum: the signal's number (a command's exit status is 128 + signum).
    """

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class DataError(Error, ValueError):
    """A shop data file is malformed: the message names the file, the record and the field."""

    def __init__(self, path: str, message: str, record: int | str | None = None, field: str | None = None):
        where = str(path)
        if record is not None:
            where += f", record {record}"
        if field is not None:
            where += f", field {field!r}"
        super().__init__(f"{where}: {message}")
        self.path = str(path)
        self.record = record
        self.field = field


class CacheNotWritable(Error, PermissionError):
    """Something must be compiled into the cache folder, but the folder cannot be written."""


class CacheDamaged(Error, OSError):
    """A compiled cache folder is damaged and cannot be rebuilt where it is (a read-only cache)."""


class InvalidArgument(Error, TypeError, ValueError):
    """An argument has the wrong type or value; the message names it, what was expected and what was given.

    It is both a ``TypeError`` and a ``ValueError``, so code that caught either keeps working.
    """


class ShopNotFound(Error, FileNotFoundError):
    """A shop directory or one of its required files does not exist."""


class InvalidAction(Error, ValueError):
    """An action string could not be parsed (raised by parsers only; the envs never raise it)."""


class ProductNotFound(Error, KeyError):
    """An asin that is not in the catalog."""

    def __init__(self, asin: str, known: Iterable[str] = ()):
        hint = close_match(asin, known)
        super().__init__(f"unknown asin {asin!r}" + (f"; did you mean {hint!r}?" if hint else ""))
        self.asin = asin

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable.
        return str(self.args[0])


class GoalNotFound(Error, IndexError):
    """A goal index outside the goal set."""


class EpisodeFinished(Error, RuntimeError):
    """``step`` was called on an episode that already terminated or was truncated."""


class DependencyNotInstalled(Error, ImportError):
    """An optional or external dependency is missing or cannot start."""


class SearchEngineError(Error, RuntimeError):
    """The Lucene search engine (Pyserini on a Java VM) failed to start or to build an index."""


def close_match(word: str, candidates: Iterable[str]) -> str | None:
    """Return the candidate closest to ``word``, or None when nothing is close."""
    matches = difflib.get_close_matches(str(word), [str(c) for c in candidates], n=1, cutoff=0.6)
    return matches[0] if matches else None


def expect_one_of(name: str, value: object, allowed: Iterable[object]) -> None:
    """Raise ``ValueError`` naming the argument when ``value`` is not one of ``allowed``."""
    allowed = list(allowed)
    if value not in allowed:
        hint = close_match(str(value), [str(a) for a in allowed])
        raise ValueError(
            f"{name}={value!r} is not supported; expected one of {allowed}"
            + (f" (did you mean {hint!r}?)" if hint else "")
        )


class UnknownProtocol(Error, KeyError):
    """A protocol name that is not one of :func:`webshop_gym.protocols.protocol_names`."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable.
        return str(self.args[0])


class ProtocolError(Error, ValueError):
    """A protocol definition, or a protocol's goal-id file, is malformed (the message names the file and field)."""


class ShopMismatch(Error, ValueError):
    """The shop is not the one a protocol is defined on (the message names both)."""


class TestGoalsRefused(Error, ValueError):
    """Training goals that include a protocol's test goals, without ``allow_test_goals=True``."""

    __test__ = False  # not a pytest test class


class DownloadFailed(Error, OSError):
    """``webshop-gym data download`` could not fetch or verify a file (no network, a refusal, the wrong file)."""


class ShippedFileDamaged(Error, OSError):
    """A data file shipped with the package does not match the digest its code pins (a damaged or edited installation)."""
