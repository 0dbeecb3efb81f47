"""The stored title nouns of a catalog: ids into a vocabulary of title tokens, tagged once.

See :mod:`webshop_gym.data.tagger` for how titles are tagged and :mod:`webshop_gym.data.catalog` for where
the stages live in the cache.
"""

from __future__ import annotations

import logging
import threading
from array import array
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from webshop_gym.data.columns import (
    Ragged,
    RaggedWriter,
    StringColumn,
    gather_rows,
    load_array,
    save_array,
)
from webshop_gym.data.tagger import token_vocabulary
from webshop_gym.data.tagger_pool import tag_nouns

__all__ = ["TitleNouns"]

log = logging.getLogger("webshop_gym")


class TitleNouns:
    """Per catalog product: the nouns of its title, as ids into a vocabulary of title tokens.

    The vocabulary holds every lower-cased token of every title (sorted), so the nouns of any
    title, tagged now or later, have ids that never change.  A compiled stage stores, per row,
    the noun ids in order (``noun_seq``), sorted and unique (``nouns``), their number
    (``noun_count``) and whether the row was tagged (``tagged``).  Rows left untagged (a large
    shop tags no title at compile time) are tagged on first use, in this process, and appended
    to a file beside the stage so that later processes read them back.

    Args:
        folder: the stage folder (``vocab``, ``tagged``, ``noun_seq``, ``nouns``, ``noun_count``).
        titles: the catalog's titles (for tagging rows on demand).
        extra: the file of rows tagged on demand (``None``: keep them in memory only).
    """

    def __init__(self, folder: Path, titles: StringColumn, extra: Path | None):
        self.folder = folder
        self.titles = titles
        self.vocab = StringColumn.load(folder, "vocab")
        self.tagged = load_array(folder, "tagged")
        self.noun_seq = Ragged.load(folder, "noun_seq")
        self.nouns = Ragged.load(folder, "nouns")
        self.noun_count = load_array(folder, "noun_count")
        self.complete = bool(np.all(self.tagged)) if len(self.tagged) else True
        self.extra_path = extra
        self._extra: dict[int, np.ndarray] = {}
        self._lock = threading.Lock()
        self._warned = False
        if extra is not None and not self.complete:
            self._read_extra()

    # -- building -------------------------------------------------------------------------------

    @staticmethod
    def build(folder: Path, titles: StringColumn, rows: np.ndarray, progress: bool = False) -> dict:
        """Tag the titles of ``rows`` and write a stage into ``folder``; return its counts.

        Args:
            folder: an empty folder.
            titles: every title of the catalog.
            rows: the rows to tag.
            progress: show progress bars.
        """
        n = len(titles)
        words = token_vocabulary(_iter_titles(titles, progress, "listing title tokens"))
        StringColumn.build(words).save(folder, "vocab")
        word_ids = {w: i for i, w in enumerate(words)}
        del words
        unique_rows = np.unique(np.asarray(rows, dtype=np.int64))
        tagged_words = tag_nouns([titles[r] for r in unique_rows.tolist()], progress=progress)
        seq = RaggedWriter()
        uniq = RaggedWriter()
        count = np.zeros(n, dtype=np.int32)
        tagged = np.zeros(n, dtype=bool)
        tagged[unique_rows] = True
        by_row = dict(zip(unique_rows.tolist(), tagged_words))
        for row in range(n):
            nouns = by_row.get(row)
            if nouns is None:
                seq.append(())
                uniq.append(())
                continue
            ids = [word_ids[w] for w in nouns]
            seq.append(ids)
            uniq.append(sorted(set(ids)))
            count[row] = len(nouns)
        seq.save(folder, "noun_seq")
        uniq.save(folder, "nouns")
        save_array(folder, "noun_count", count)
        save_array(folder, "tagged", tagged)
        return {"tagged": int(tagged.sum()), "products": n, "vocabulary": len(word_ids)}

    @staticmethod
    def build_complete(folder: Path, partial: TitleNouns, progress: bool = False) -> dict:
        """Write a stage with every title tagged, reusing what ``partial`` already holds."""
        n = len(partial.titles)
        done = np.asarray(partial.tagged)
        missing = [r for r in np.flatnonzero(~done).tolist() if r not in partial._extra]
        words = partial.vocab.tolist()
        word_ids = {w: i for i, w in enumerate(words)}
        del words
        fresh = dict(zip(missing, tag_nouns([partial.titles[r] for r in missing], progress=progress)))
        seq = RaggedWriter()
        uniq = RaggedWriter()
        count = np.zeros(n, dtype=np.int32)
        for row in range(n):
            if done[row]:
                ids = partial.noun_seq[row].tolist()
            elif row in partial._extra:
                ids = partial._extra[row].tolist()
            else:
                ids = [word_ids[w] for w in fresh[row]]
            seq.append(ids)
            uniq.append(sorted(set(ids)))
            count[row] = len(ids)
        partial.vocab.save(folder, "vocab")
        seq.save(folder, "noun_seq")
        uniq.save(folder, "nouns")
        save_array(folder, "noun_count", count)
        save_array(folder, "tagged", np.ones(n, dtype=bool))
        return {"tagged": n, "products": n, "vocabulary": len(word_ids), "tagged_now": len(missing)}

    # -- reading --------------------------------------------------------------------------------

    def _read_extra(self) -> None:
        try:
            raw = np.fromfile(self.extra_path, dtype="<i4")
        except (FileNotFoundError, ValueError):
            return
        except OSError as exc:
            log.warning("cannot read %s (%s); its products are tagged again on use", self.extra_path, exc)
            return
        pos = 0
        n = len(self.tagged)
        while pos + 2 <= len(raw):
            row, length = int(raw[pos]), int(raw[pos + 1])
            if length < 0 or pos + 2 + length > len(raw) or not 0 <= row < n:
                break  # a record cut short by an interrupted write: ignore the rest
            self._extra[row] = raw[pos + 2 : pos + 2 + length].copy()
            pos += 2 + length

    def _tag_rows(self, rows: list[int]) -> None:
        """Tag untagged ``rows`` now, remember them and append them to the extra file."""
        with self._lock:
            rows = [r for r in dict.fromkeys(rows) if r not in self._extra]
            if not rows:
                return
            words = tag_nouns([self.titles[r] for r in rows])
            index = _VocabIndex(self.vocab)
            records = array("i")
            for row, w in zip(rows, words):
                ids = np.asarray(index.ids(w), dtype=np.int32)
                self._extra[row] = ids
                records.extend((row, len(ids)))
                records.extend(ids.tolist())
            self._append(records)

    def _append(self, records: array) -> None:
        if self.extra_path is None:
            return
        try:
            from filelock import FileLock

            with FileLock(str(self.extra_path) + ".lock"), open(self.extra_path, "ab") as handle:
                handle.write(records.tobytes())
        except OSError as exc:
            if not self._warned:
                self._warned = True
                log.info("title nouns tagged on demand are kept in memory only (%s: %s)", self.extra_path, exc)

    def ensure(self, rows: Iterable[int]) -> None:
        """Tag those of ``rows`` that are not tagged yet."""
        if self.complete:
            return
        rows = [int(r) for r in rows]
        missing = [r for r in rows if not self.tagged[r] and r not in self._extra]
        if missing:
            self._tag_rows(missing)

    def sequence(self, row: int) -> np.ndarray:
        """Noun ids of a title in order, duplicates kept (tagging it now if needed)."""
        if self.complete or self.tagged[row]:
            return self.noun_seq[row]
        self.ensure([row])
        return self._extra[row]

    def one(self, row: int) -> tuple[np.ndarray, int]:
        """Sorted unique noun ids of one title (a new writable int32 array) and its number of noun tokens."""
        if self.complete or self.tagged[row]:
            return np.array(self.nouns[row], dtype=np.int32), int(self.noun_count[row])
        seq = self.sequence(row)
        return np.unique(seq).astype(np.int32), len(seq)

    def words(self, row: int) -> list[str]:
        """The lower-cased nouns of a title in order, duplicates kept."""
        vocab = self.vocab
        return [vocab[i] for i in self.sequence(row).tolist()]

    def unique(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sorted unique noun ids of each of ``rows``: ``(offsets, values)`` with one row per entry."""
        rows = np.asarray(rows, dtype=np.int64)
        if len(rows) == 1:  # the common case of a single purchase, without numpy's per-call overheads
            ids, _ = self.one(int(rows[0]))  # a writable copy, like the batch path's (one kernel type)
            return np.array([0, len(ids)], dtype=np.int64), ids
        offsets, values = gather_rows(self.nouns, rows)
        if self.complete:
            return offsets, values
        pending = np.flatnonzero(~np.asarray(self.tagged)[rows])
        if not len(pending):
            return offsets, values
        self.ensure(rows[pending].tolist())
        lengths = np.diff(offsets)
        fixed = {int(i): np.unique(self._extra[int(rows[i])]) for i in pending.tolist()}
        for i, ids in fixed.items():
            lengths[i] = len(ids)
        out_offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=out_offsets[1:])
        out = np.empty(int(out_offsets[-1]), dtype=values.dtype)
        keep = np.ones(len(rows), dtype=bool)
        keep[pending] = False
        src = np.repeat(keep, np.diff(offsets))
        dst = np.repeat(keep, lengths)
        out[dst] = values[src]
        for i, ids in fixed.items():
            out[out_offsets[i] : out_offsets[i + 1]] = ids
        return out_offsets, out

    def counts(self, rows: np.ndarray) -> np.ndarray:
        """Number of noun tokens (duplicates included) of each of ``rows``."""
        rows = np.asarray(rows, dtype=np.int64)
        counts = np.asarray(self.noun_count)[rows].astype(np.int32)
        if not self.complete:
            for i in np.flatnonzero(~np.asarray(self.tagged)[rows]).tolist():
                counts[i] = len(self.sequence(int(rows[i])))
        return counts

    def ids(self, words: Sequence[str]) -> list[int]:
        """Vocabulary ids of ``words`` (words that are no title's token are left out)."""
        return _VocabIndex(self.vocab).ids(words, missing_ok=True)


class _VocabIndex:
    """Word -> id in a sorted vocabulary column, by binary search (no dict of the whole vocabulary)."""

    def __init__(self, vocab: StringColumn):
        self.vocab = vocab

    def find(self, word: str) -> int:
        vocab = self.vocab
        lo, hi = 0, len(vocab)
        while lo < hi:
            mid = (lo + hi) // 2
            if vocab[mid] < word:
                lo = mid + 1
            else:
                hi = mid
        return lo if lo < len(vocab) and vocab[lo] == word else -1

    def ids(self, words: Sequence[str], missing_ok: bool = False) -> list[int]:
        out = []
        for w in words:
            i = self.find(w)
            if i < 0:
                if missing_ok:
                    continue
                raise KeyError(f"noun {w!r} is not a token of the title vocabulary")
            out.append(i)
        return out


def _iter_titles(titles: StringColumn, progress: bool, desc: str) -> Iterator[str]:
    if not progress:
        yield from titles
        return
    from tqdm import tqdm

    from webshop_gym.utils import progress as _progress

    yield from tqdm(titles, disable=_progress.disable(), total=len(titles), desc=desc, unit="title", leave=False, dynamic_ncols=True)
