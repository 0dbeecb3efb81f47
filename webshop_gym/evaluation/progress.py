"""How a served evaluation shows its progress: one updating line on a terminal, a few lines in a log.

On a terminal the bar is one line that redraws itself (tqdm): episodes done, SR so far,
requests in flight, tokens/s, retries and errored episodes.  Written to a file or a pipe
(``eval ... 2> log``, CI), a redrawn bar would leave a fragment per update, so the same figures
go out as a few plain lines instead: at each quarter of the episodes, and at least every
:data:`EVERY_S` seconds in between.  ``WEBSHOP_GYM_PROGRESS=1`` draws the bar anywhere, ``0``
prints nothing (:mod:`webshop_gym.utils.progress`); ``--quiet`` silences both.
"""

from __future__ import annotations

import sys
import time

from webshop_gym.utils import progress

__all__ = ["EVERY_S", "Progress"]

#: Longest time between two progress lines in a log (seconds).
EVERY_S = 300.0


class Progress:
    """The counters of a served evaluation's progress and where they are shown (see the module docstring)."""

    def __init__(self, total: int, desc: str | None, stream=None):
        self.stream = sys.stderr if stream is None else stream
        self.total = int(total)
        self.desc = desc
        self.bar = None
        self.lines = False
        if desc is not None:
            mode = progress.disable()  # None: a bar on a terminal only
            terminal = bool(getattr(self.stream, "isatty", lambda: False)())
            if mode is False or (mode is None and terminal):
                from tqdm import tqdm

                self.bar = tqdm(total=total, desc=desc, unit="ep", file=self.stream, dynamic_ncols=True)
            elif mode is None:
                self.lines = True
        self.started = time.perf_counter()
        self.done = self.successes = self.errored = self.retries = self.tokens = 0
        self.in_flight = 0
        self._shown = 0.0
        self._line_at = self.started
        self._quarter = 0

    def update(self, episode: dict | None = None, force: bool = False) -> None:
        """Count a finished episode (or none) and refresh what is shown."""
        if episode is not None:
            self.done += 1
            self.errored += int(bool(episode.get("errored")))
            self.successes += int(bool(episode.get("success")))
        now = time.perf_counter()
        if self.lines:
            quarter = 4 * self.done // self.total if self.total else 4
            if quarter > self._quarter or now - self._line_at >= EVERY_S:
                self._quarter = max(self._quarter, quarter)
                self._line_at = now
                print(f"{self.desc}: {self.done:,}/{self.total:,} episodes ({100 * self.done / max(self.total, 1):.0f}%)"
                      f" in {now - self.started:.1f} s, {self._figures(now)}", file=self.stream, flush=True)
            return
        if self.bar is None:
            return
        if episode is not None:
            self.bar.update(1)
        if force or now - self._shown > 0.25:
            self._shown = now
            self.bar.set_postfix_str(self._figures(now), refresh=False)

    def _figures(self, now: float) -> str:
        scored = self.done - self.errored
        sr = f"{100.0 * self.successes / scored:.1f}%" if scored else "-"
        rate = self.tokens / (now - self.started) if now > self.started else 0.0
        return (f"SR {sr}, in flight {self.in_flight}, {rate:,.0f} tok/s, retries {self.retries}, "
                f"errored {self.errored}")

    def close(self) -> None:
        """Show the last figures and close the bar."""
        if self.bar is not None:
            self.update(force=True)
            self.bar.close()
