"""Whether a log is still being written: its writer holds a lock on the file while it writes.

Every :class:`~webshop_gym.runs.log.TrajectoryWriter` (``eval --out``, the play server's logs)
takes an exclusive advisory lock (``flock``) on its file when it opens it and keeps it until it
closes it.  The operating system drops the lock when the process ends however it ends (finished,
Ctrl-C, killed, crashed), so a reader tells a run being written from one whose writer is gone by
trying a shared lock: :func:`writer_state`.  Locks are per open file, so this also holds within
one process (a test writing a run while the viewer reads it).

Where ``fcntl`` is missing (Windows) nothing is locked and :func:`writer_state` says ``None``
(unknown); a network file system that ignores ``flock`` gives "stopped" for a run another machine
is writing.
"""

from __future__ import annotations

import os
import time

try:  # POSIX only
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["RUNNING", "STOPPED", "hold_writer_lock", "writer_state"]

RUNNING, STOPPED = "running", "stopped"
#: Seconds a writer keeps trying to take its lock while a reader's probe holds it for an instant.
LOCK_PATIENCE = 1.0


def hold_writer_lock(handle) -> bool:
    """Lock the open file ``handle`` as its writer's for as long as it stays open; whether it could be locked.

    A reader's probe holds a shared lock for microseconds: the writer tries again for up to
    :data:`LOCK_PATIENCE` seconds.  When another writer holds the file (two processes writing one
    run), the file is written unlocked, as before locks existed.
    """
    if fcntl is None:
        return False
    deadline = time.monotonic() + LOCK_PATIENCE
    while True:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.001)
        except OSError:  # a file system without locks
            return False


def writer_state(path: str | os.PathLike) -> str | None:
    """``"running"`` while a writer holds ``path``, ``"stopped"`` once none does, ``None`` when it cannot be told."""
    if fcntl is None:
        return None
    try:
        with open(path, "rb") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return RUNNING
            except OSError:
                return None
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
            return STOPPED
    except OSError:
        return None
