"""A catalog's stem table: the Porter stem of every word its documents and instructions use.

A query never seen before costs its new words' Porter stemming in Python (a few microseconds a
word, :mod:`webshop_gym.search.porter`).  Agents' queries are made of the shop's words (the
instructions' and the products'), so the stem of every such word is computed once per catalog,
when its search is first used, and kept in the catalog's cache folder:
``stems-v<STEMS_VERSION>/`` holds the words and their stems as two string columns and an
open-addressing hash table over the words (CRC-32 of the word, linear probing), all memory-mapped,
so a process looks a word up without loading the table.

The words are the analyser's tokens as :func:`webshop_gym.search.analysis.term` sees them just
before stemming: lower-cased, a trailing ``'s`` dropped, stop words left out.  A word the table
lacks goes to the stemmer; a test checks the table against the stemmer on every word it holds.
The Java-free index build (:mod:`webshop_gym.search.indexing`) stems the documents' words as it
analyses them and hands them over, so the table then costs one pass over the instructions only.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np

from webshop_gym.data.catalog import Catalog
from webshop_gym.data.columns import StringColumn, readonly
from webshop_gym.error import CacheNotWritable
from webshop_gym.search.analysis import raw_tokens, word_of
from webshop_gym.search.porter import stem
from webshop_gym.utils.paths import build_atomically, is_built

__all__ = ["STEMS_VERSION", "StemTable", "build_stem_table", "catalog_words", "load_stem_table", "stem_table_path",
           "text_words"]

STEMS_VERSION = 2


class StemTable:
    """Words and their Porter stems, looked up through a memory-mapped hash table.

    Args:
        words: the words (ASCII), in any order.
        stems: ``stems[i]`` is the Porter stem of ``words[i]``.
        slots: a power-of-two number of slots, each a word's index or -1.
    """

    __slots__ = ("words", "stems", "slots", "_slots", "_mask")

    def __init__(self, words: StringColumn, stems: StringColumn, slots: np.ndarray):
        if len(words) != len(stems) or len(slots) & (len(slots) - 1) or len(slots) <= len(words):
            raise ValueError("a stem table needs as many stems as words and a power-of-two table larger than both")
        self.words, self.stems, self.slots = words, stems, slots
        self._slots = memoryview(np.ascontiguousarray(slots, dtype=np.int32))
        self._mask = len(slots) - 1

    def __len__(self) -> int:
        return len(self.words)

    def get(self, word: str) -> str | None:
        """The stem of ``word``, or ``None`` when the table does not hold it."""
        if not word.isascii():
            return None
        slots, mask, words = self._slots, self._mask, self.words
        h = zlib.crc32(word.encode("ascii")) & mask
        while True:
            i = slots[h]
            if i < 0:
                return None
            if words[i] == word:
                return self.stems[i]
            h = (h + 1) & mask

    @classmethod
    def build(cls, words, known: dict[str, str] | None = None) -> StemTable:
        """The table of ``words`` (ASCII strings), stemmed here unless ``known`` holds their stems."""
        words = sorted(set(words))
        known = known or {}
        size = 2
        while size < 2 * len(words):
            size *= 2
        slots = np.full(size, -1, dtype=np.int32)
        mask = size - 1
        for i, word in enumerate(words):
            h = zlib.crc32(word.encode("ascii")) & mask
            while slots[h] >= 0:
                h = (h + 1) & mask
            slots[h] = i
        stems = [known.get(w) or stem(w) for w in words]
        return cls(StringColumn.build(words), StringColumn.build(stems), readonly(slots))

    def save(self, folder: Path) -> None:
        """Write the table into ``folder`` (``meta.json`` last)."""
        self.words.save(folder, "words")
        self.stems.save(folder, "stems")
        np.save(folder / "slots.npy", np.asarray(self.slots))
        (folder / "meta.json").write_text(json.dumps({"version": STEMS_VERSION, "words": len(self.words)}))

    @classmethod
    def load(cls, folder: Path) -> StemTable:
        """Map a table written by :meth:`save`."""
        slots = readonly(np.load(folder / "slots.npy", mmap_mode="r"))
        return cls(StringColumn.load(folder, "words"), StringColumn.load(folder, "stems"), slots)


def text_words(texts, into: set[str]) -> set[str]:
    """Add the ASCII words of ``texts`` (raw tokens lower-cased, possessive dropped, stop words left out) to ``into``."""
    tokens: set[str] = set()
    for text in texts:
        tokens.update(raw_tokens(text))
    for token in tokens:
        word = word_of(token)
        if word and word.isascii():
            into.add(word)
    return into


def catalog_words(catalog: Catalog, progress: bool = False, documents: bool = True) -> set[str]:
    """The words of a catalog's documents and instructions (synthetic and human), as the stemmer sees them.

    About 20 s at 100,000 products for the documents, which the Java-free index build collects as it
    goes (``documents=False``: the instructions only).  ``progress``: a progress bar over the products.
    """
    from tqdm import tqdm

    from webshop_gym.search.lucene import document_text
    from webshop_gym.utils import progress as _progress

    words: set[str] = set()
    if documents:
        rows = tqdm(range(len(catalog)), desc="collecting the words to stem", unit="product",
                    disable=not progress or _progress.disable())
        text_words((document_text(catalog, row) for row in rows), words)
    for column in (catalog.instruction, catalog.human_text):
        text_words(column, words)
    return words


def stem_table_path(catalog: Catalog) -> Path:
    """The folder of a catalog's stem table."""
    return catalog.folder / f"stems-v{STEMS_VERSION}"


def build_stem_table(catalog: Catalog, progress: bool = False, document_words: dict[str, str] | None = None) -> Path:
    """Build a catalog's stem table into its cache folder (no-op when it is there).

    ``document_words``: the documents' words and their stems, as the Java-free index build found
    them (:func:`~webshop_gym.search.indexing.analysed_postings`); then only the instructions are read.
    """
    folder = stem_table_path(catalog)

    def build(tmp: Path) -> None:
        if document_words is None:
            table = StemTable.build(catalog_words(catalog, progress))
        else:
            table = StemTable.build(catalog_words(catalog, documents=False) | document_words.keys(), document_words)
        table.save(tmp)

    build_atomically(folder, build, what="stem table")
    return folder


def load_stem_table(catalog: Catalog, build: bool = True, progress: bool = False,
                    document_words: dict[str, str] | None = None) -> StemTable | None:
    """A catalog's stem table (built first when missing and ``build``; ``None`` where it cannot be).

    ``document_words``: see :func:`build_stem_table`.
    """
    folder = stem_table_path(catalog)
    if not is_built(folder):
        if not build:
            return None
        try:
            build_stem_table(catalog, progress, document_words)
        except CacheNotWritable:  # a read-only cache made before the table existed: stem as before
            return None
    return StemTable.load(folder)
