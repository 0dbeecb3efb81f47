"""SIGTERM and SIGINT during a served evaluation: taken at a safe point, never lost, never a traceback.

Python runs a signal handler between any two bytecodes of the main thread: an exception raised
there (as Ctrl-C's ``KeyboardInterrupt``) can land in a ``__del__`` or a callback, where it is
printed and dropped, so a run went on to its end; or in the middle of the event loop's
bookkeeping.  While :func:`signals_deferred` holds, the two signals only record that a stop was
asked (:meth:`Stop.asked`); the episodes' loop looks at each turn of its loop (every 0.5 s at
least) and the evaluation between its phases, and :meth:`Stop.check` raises
:class:`~webshop_gym.error.Interrupted` there, which unwinds as Ctrl-C does (every finished
episode written, the run file marked stopped).  A second signal raises at once: the way out of
anything that would not end.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from webshop_gym.error import Interrupted

__all__ = ["Stop", "signals_deferred"]

SIGNALS = tuple(s for s in (getattr(signal, "SIGINT", None), getattr(signal, "SIGTERM", None)) if s is not None)


class Stop:
    """Whether a stop was asked (by a signal) while :func:`signals_deferred` held."""

    def __init__(self):
        self.signum: int | None = None

    def asked(self) -> int | None:
        """The first signal's number, ``None`` while none arrived."""
        return self.signum

    def check(self) -> None:
        """Raise :class:`~webshop_gym.error.Interrupted` if a stop was asked."""
        if self.signum is not None:
            raise Interrupted(self.signum)

    def _handler(self, signum, frame) -> None:
        if self.signum is not None:  # the second signal: at once
            raise Interrupted(self.signum)
        self.signum = signum


@contextmanager
def signals_deferred() -> Iterator[Stop]:
    """Record SIGINT and SIGTERM instead of raising where they land (main thread only; elsewhere a no-op)."""
    stop = Stop()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = {}
    try:
        for signum in SIGNALS:
            if signal.getsignal(signum) is not signal.SIG_IGN:  # ignored (a background job's SIGINT): it stays so
                previous[signum] = signal.signal(signum, stop._handler)
        yield stop
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
