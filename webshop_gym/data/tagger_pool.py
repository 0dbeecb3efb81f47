"""Title tagging in worker processes: a pool for a list of titles.

Workers are plain subprocesses (``python -c ...``), not ``multiprocessing``: a user's script is
never re-imported in them, so loading a large shop needs no ``if __name__ == "__main__":`` guard.
Each worker loads spaCy once and answers lists of titles with their nouns
(:func:`webshop_gym.data.tagger.tag_here` runs the same code in-process).  :func:`tag_nouns` is
the entry point: it tags a small job in this process and a large one in a pool.
"""

from __future__ import annotations

from collections.abc import Sequence

from webshop_gym.data.tagger import BATCH_TITLES, PARALLEL_FROM, default_processes, tag_here

__all__ = ["tag_in_processes", "tag_nouns"]


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
