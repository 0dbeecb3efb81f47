"""Run a uvicorn server in the foreground so that one stop signal stops it once.

uvicorn catches SIGINT and SIGTERM while it serves.  After its graceful shutdown it puts back the
handlers it found and raises the captured signal again, for the process's own handler to see.
The command line's handlers turn SIGTERM into an exception (and SIGINT is Python's
KeyboardInterrupt, or ignored in a background job).  That second delivery then surfaces as an
exception wherever the process happens to be after the server returned (or nowhere at all, where
SIGINT is ignored).  So a server's "stopped" could be printed twice, or the stop could go unseen.

:func:`serve_until_stopped` hands uvicorn handlers of its own instead: they ask the server to stop
(which covers a signal that arrives before uvicorn has put its handlers in) and record the
signal.  The re-raised signal is then recorded, not raised, and the call returns normally.
"""

from __future__ import annotations

import signal
import threading

__all__ = ["STOP_SIGNALS", "serve_until_stopped"]

#: The signals that stop a server (the ones uvicorn handles on POSIX).
STOP_SIGNALS = tuple(s for s in (getattr(signal, "SIGINT", None), getattr(signal, "SIGTERM", None)) if s is not None)


def serve_until_stopped(server, sockets=None) -> int | None:
    """Run ``server`` (a ``uvicorn.Server``) until it is asked to stop.

    On the main thread, SIGINT and SIGTERM stop it, also one that arrives before uvicorn has put
    its own handlers in (while it serves, uvicorn's handling applies: a second Ctrl+C forces the
    exit).  The handlers in place before the call are back when it returns, and none of them sees
    the signal that stopped the server.
    Off the main thread, the server is run as it is (stop it by setting ``should_exit``).

    Args:
        server: the uvicorn server.
        sockets: bound sockets to serve on.

    Returns:
        The first stop signal received, or None when the server stopped otherwise.
    """
    if threading.current_thread() is not threading.main_thread():
        server.run(sockets=sockets)
        return None
    received: list[int] = []

    def stop(signum, frame):  # in place only while uvicorn's own handlers are not
        received.append(signum)
        server.should_exit = True

    previous = {}
    try:
        for signum in STOP_SIGNALS:
            previous[signum] = signal.signal(signum, stop)
        server.run(sockets=sockets)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return received[0] if received else None
