"""When progress bars are drawn: on a terminal only, unless ``WEBSHOP_GYM_PROGRESS`` says otherwise.

A bar redraws itself with carriage returns; written into a log file or CI output, that leaves a
fragment per update.  Every bar of the package therefore passes ``disable=disable()`` to tqdm:
``None`` (tqdm draws only when its stream is a terminal), unless ``WEBSHOP_GYM_PROGRESS=1``
(always draw, e.g. to watch a log with ``tail -f``) or ``0`` (never).  ``progress=False`` and
``--quiet`` still silence everything.
"""

from __future__ import annotations

import os

__all__ = ["PROGRESS_ENV", "disable"]

PROGRESS_ENV = "WEBSHOP_GYM_PROGRESS"


def disable() -> bool | None:
    """Return tqdm's ``disable`` argument: ``None`` (terminal only), ``False`` (always) or ``True`` (never)."""
    value = os.environ.get(PROGRESS_ENV, "").strip().lower()
    if value in ("1", "true", "yes", "always"):
        return False
    if value in ("0", "false", "no", "never"):
        return True
    return None
