"""How a served evaluation shows its progress: one updating line on a terminal, a few lines in a log.

On a terminal the bar is one line that redraws itself (tqdm): episodes done, then errored
episodes and retries first (an 80-column terminal cuts the end of the line), SR so far, requests
in flight now (the most so far and the time average), tokens/s.  Written to a file or a pipe
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
        self._in_flight = self.max_in_flight = 0
        self._area, self._since = 0.0, self.started  # requests in flight x seconds, for the time average
        self._shown = 0.0
        self._line_at = self.started
        self._quarter = 0

    @property
    def in_flight(self) -> int:
        """Requests in flight now (set by the loop that plays the episodes)."""
        return self._in_flight

    @in_flight.setter
    def in_flight(self, value: int) -> None:
        now = time.perf_counter()
        self._area += self._in_flight * (now - self._since)
        self._since, self._in_flight = now, int(value)
        self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def mean_in_flight(self) -> float:
        """Requests in flight on average over the time so far (each count weighted by how long it held)."""
        now = time.perf_counter()
        elapsed = now - self.started
        return (self._area + self._in_flight * (now - self._since)) / elapsed if elapsed > 0 else float(self._in_flight)

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
        return (f"errored {self.errored}, retries {self.retries}, SR {sr}, in flight {self.in_flight} (max "
                f"{self.max_in_flight}, average {self.mean_in_flight():.0f}), {rate:,.0f} tok/s")

    def close(self) -> None:
        """Show the last figures and close the bar."""
        if self.bar is not None:
            self.update(force=True)
            self.bar.close()
