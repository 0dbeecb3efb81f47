"""Title tagging in worker processes: a pool for a list of titles, and one that works in the background.

Workers are plain subprocesses (``python -c ...``), not ``multiprocessing``: a user's script is
never re-imported in them, so loading a large shop needs no ``if __name__ == "__main__":`` guard.
Each worker loads spaCy once and answers lists of titles with their nouns
(:func:`webshop_gym.data.tagger.tag_here` runs the same code in-process).  :func:`tag_nouns` is
the entry point: it tags a small job in this process and a large one in a pool.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from webshop_gym.data.tagger import BATCH_TITLES, PARALLEL_FROM, default_processes, tag_here

__all__ = ["BackgroundTagger", "tag_in_processes", "tag_nouns"]


class _TaggerProcess:
    """A tagging worker: a fresh ``python`` that reads title lists and answers their nouns.

    Workers are plain subprocesses (not ``multiprocessing``), so a user's script is never
    re-imported in them: loading a large shop needs no ``if __name__ == "__main__":`` guard.
    Messages are pickles with an 8-byte length prefix over the worker's stdin and stdout.
    """

    def __init__(self):
        import subprocess
        import sys

        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from webshop_gym.data.tagger_pool import serve; serve()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )

    def send(self, titles: list[str]) -> None:
        import pickle

        payload = pickle.dumps(titles, protocol=pickle.HIGHEST_PROTOCOL)
        self.proc.stdin.write(len(payload).to_bytes(8, "little") + payload)
        self.proc.stdin.flush()

    def receive(self) -> list[list[str]]:
        import pickle

        try:
            status, value = pickle.loads(_read_message(self.proc.stdout))
        except EOFError:
            code = self.proc.wait()
            raise RuntimeError(f"a title-tagging process exited unexpectedly (exit status {code})") from None
        if status != "ok":
            raise RuntimeError(f"a title-tagging process failed:\n{value}")
        return value

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001 - make sure it goes away
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


def _read_message(stream) -> bytes:
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError("the title-tagging process exited")
    size = int.from_bytes(head, "little")
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the title-tagging process exited")
    return data


def serve() -> None:  # pragma: no cover - runs in the worker processes
    """Worker loop of :class:`_TaggerProcess`."""
    import pickle
    import sys
    import traceback

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            titles = pickle.loads(_read_message(stdin))
        except EOFError:
            return
        try:
            answer = ("ok", tag_here(titles))
        except BaseException:  # noqa: BLE001 - reported to the parent
            answer = ("error", traceback.format_exc())
        payload = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
        stdout.write(len(payload).to_bytes(8, "little") + payload)
        stdout.flush()


def tag_in_processes(chunks: list[list[str]], processes: int, bar) -> list[list[str]]:
    """Tag ``chunks`` in ``processes`` workers, one chunk in flight per worker, results in order."""
    from collections import deque

    workers = [_TaggerProcess() for _ in range(min(processes, len(chunks)))]
    results: list[list[str]] = []
    try:
        pending = deque()
        for k, worker in enumerate(workers):
            worker.send(chunks[k])
            pending.append((k, worker))
        next_chunk = len(workers)
        while pending:
            k, worker = pending.popleft()
            results.extend(worker.receive())
            if bar is not None:
                bar.update(len(chunks[k]))
            if next_chunk < len(chunks):
                worker.send(chunks[next_chunk])
                pending.append((next_chunk, worker))
                next_chunk += 1
    finally:
        for worker in workers:
            worker.close()
    return results


class BackgroundTagger:
    """Tags titles in worker subprocesses while this process does other work.

    The catalog compiler hands it the titles goals point at as it reads them, so that tagging
    (the slow part of a first load) overlaps reading the products and building the goals.
    :meth:`finish` waits for the rest and returns ``{row: nouns}``.

    Args:
        processes: worker processes (default: one per CPU).
        chunk: titles per message to a worker.
    """

    def __init__(self, processes: int | None = None, chunk: int = 2000):
        import queue

        self.chunk = chunk
        self._rows: list[int] = []
        self._titles: list[str] = []
        self._queue: queue.Queue = queue.Queue()
        self._results: dict[int, list[list[str]]] = {}
        self._chunks: list[list[int]] = []
        self._done = threading.Condition()
        self._error: BaseException | None = None
        self._workers = [_TaggerProcess() for _ in range(processes or default_processes())]
        self._threads = [threading.Thread(target=self._drive, args=(w,), daemon=True) for w in self._workers]
        for thread in self._threads:
            thread.start()

    def _drive(self, worker: _TaggerProcess) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            index, titles = item
            try:
                worker.send(titles)
                result = worker.receive()
            except BaseException as exc:  # noqa: BLE001 - reported by finish()
                with self._done:
                    self._error = exc
                    self._done.notify_all()
                return
            with self._done:
                self._results[index] = result
                self._done.notify_all()

    def submit(self, row: int, title: str) -> None:
        """Queue one title (of catalog row ``row``)."""
        self._rows.append(row)
        self._titles.append(title)
        if len(self._titles) >= self.chunk:
            self._flush()

    def _flush(self) -> None:
        if self._titles:
            self._queue.put((len(self._chunks), self._titles))
            self._chunks.append(self._rows)
            self._rows, self._titles = [], []

    def finish(self, progress: bool = False) -> dict[int, list[str]]:
        """Wait for every queued title; return ``{row: nouns}`` and stop the workers."""
        self._flush()
        total = sum(len(c) for c in self._chunks)
        bar = None
        if progress:
            from tqdm import tqdm

            from webshop_gym.utils import progress as _progress

            bar = tqdm(disable=_progress.disable(), total=total, desc="tagging title nouns", unit="title", leave=False, dynamic_ncols=True)
        try:
            shown = 0
            with self._done:
                while len(self._results) < len(self._chunks) and self._error is None:
                    self._done.wait(0.5)
                    if bar is not None:
                        now = sum(len(self._chunks[i]) for i in self._results)
                        bar.update(now - shown)
                        shown = now
            if self._error is not None:
                raise RuntimeError(f"tagging title nouns failed: {self._error}") from self._error
        finally:
            if bar is not None:
                bar.close()
            self.close()
        out: dict[int, list[str]] = {}
        for index, rows in enumerate(self._chunks):
            out.update(zip(rows, self._results[index]))
        return out

    def close(self) -> None:
        """Stop the workers (unfinished work is dropped)."""
        for _ in self._threads:
            self._queue.put(None)
        for thread, worker in zip(self._threads, self._workers):
            thread.join(timeout=0.5)
            if thread.is_alive():  # busy with a chunk nobody will read
                worker.proc.kill()
                thread.join(timeout=10)
            worker.close()
        self._threads = []
        self._workers = []


def tag_nouns(
    titles: Sequence[str],
    batch_size: int | None = None,
    progress: bool = False,
    processes: int | None = None,
    desc: str = "tagging title nouns",
) -> list[list[str]]:
    """Return, for each title, the lower-cased NOUN/PROPN token texts in order (duplicates kept).

    Equal titles are tagged once.

    Args:
        titles: the titles.
        batch_size: ignored (batches are sized by :data:`BATCH_TITLES` and :data:`BATCH_CHARS`);
            kept for callers of earlier versions.
        progress: show a progress bar.
        processes: worker processes (default: one per CPU for jobs of at least
            :data:`PARALLEL_FROM` distinct titles, else none).
        desc: the progress bar's label.
    """
    unique = list(dict.fromkeys(titles))
    if processes is None:
        processes = default_processes() if len(unique) >= PARALLEL_FROM else 1
    bar = None
    if progress:
        from tqdm import tqdm

        from webshop_gym.utils import progress as _progress

        bar = tqdm(disable=_progress.disable(), total=len(unique), desc=desc, unit="title", leave=False, dynamic_ncols=True)
    try:
        chunk = max(BATCH_TITLES, min(20 * BATCH_TITLES, len(unique) // (8 * max(processes, 1)) + 1))
        chunks = [unique[i : i + chunk] for i in range(0, len(unique), chunk)]
        results: list[list[str]] = []
        if processes <= 1 or len(chunks) <= 1:
            for part in chunks:
                results.extend(tag_here(part))
                if bar is not None:
                    bar.update(len(part))
        else:
            results = tag_in_processes(chunks, processes, bar)
    finally:
        if bar is not None:
            bar.close()
    by_title = dict(zip(unique, results))
    return [by_title[t] for t in titles]
