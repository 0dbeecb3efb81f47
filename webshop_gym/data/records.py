"""The reference's input files: finding and hashing them, and parsing single records (SPEC section 1).

:mod:`webshop_gym.data.compiler` streams the files through these parsers into columns and
:mod:`webshop_gym.data.catalog` keys its cache on the files' hashes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

from webshop_gym.data.jsonstream import JsonStream
from webshop_gym.error import DataError, ShopNotFound
from webshop_gym.utils.memo import read_memo, write_memo
from webshop_gym.utils.paths import cache_dir

__all__ = [
    "CATEGORY_SEPARATOR",
    "DUMMY_ATTR",
    "ShopFiles",
    "content_sha256",
    "file_sha256",
    "find_shop_files",
    "parse_pricing",
    "record_bullets",
    "record_options",
    "record_reviews",
    "record_text",
]

log = logging.getLogger("webshop_gym")

DUMMY_ATTR = "DUMMY_ATTR"
CATEGORY_SEPARATOR = "›"

PRODUCT_FILES = ("items_shuffle.json", "items_shuffle_1000.json")
ATTRIBUTE_FILES = ("items_ins_v2.json", "items_ins_v2_1000.json")
HUMAN_FILES = ("items_human_ins.json",)

_NON_PRICE = re.compile(r"[^\d.]")


# --------------------------------------------------------------------------------------------
# Locating and hashing the input files


@dataclass(frozen=True)
class ShopFiles:
    """The reference-format files of one shop."""

    products: Path
    attributes: Path | None
    human: Path | None

    def paths(self) -> list[Path]:
        """Return the files that exist, products first."""
        return [p for p in (self.products, self.attributes, self.human) if p is not None]


def _first(directory: Path, names: Sequence[str], pattern: str) -> Path | None:
    for name in names:
        if (directory / name).is_file():
            return directory / name
    matches = sorted(directory.glob(pattern))
    return matches[0] if matches else None


def find_shop_files(directory: str | os.PathLike) -> ShopFiles:
    """Find the product, attribute and human-instruction files of a shop directory.

    Products: ``items_shuffle.json`` or ``items_shuffle_1000.json`` (else the first
    ``items_shuffle*.json``); attributes: ``items_ins_v2*.json``; human instructions:
    ``items_human_ins*.json``.  Only the product file is required.

    Raises:
        ShopNotFound: when the directory or its product file does not exist.
    """
    path = Path(directory).expanduser()
    if not path.is_dir():
        raise ShopNotFound(f"shop directory {str(path)!r} does not exist")
    products = _first(path, PRODUCT_FILES, "items_shuffle*.json")
    if products is None:
        raise ShopNotFound(
            f"no product file in {str(path)!r}: expected items_shuffle.json (the reference's "
            "product list); generate a shop with `webshop-gym data synth --out DIR`"
        )
    return ShopFiles(
        products=products,
        attributes=_first(path, ATTRIBUTE_FILES, "items_ins_v2*.json"),
        human=_first(path, HUMAN_FILES, "items_human_ins*.json"),
    )


FILE_HASHES_MEMO = "file-hashes.memo.json"
"""The memo of source files' SHA-256 in the cache folder (:mod:`webshop_gym.utils.memo`)."""
CONTENT_DIGESTS_MEMO = "content-digests.memo.json"
"""The memo of JSON files' canonical-content SHA-256, by byte digest, in the cache folder."""
MEMO_BYTES = 1 << 20
"""The most that each of those memos holds (about 6,000 entries); the oldest entries go first."""


def _remembered(memo_name: str, key: str, compute) -> str:
    """``compute()`` (a hex SHA-256), remembered under ``key`` in the cache folder's checked memo ``memo_name``.

    A read-only cache remembers nothing (computed again next time); a damaged memo is named,
    removed and started afresh (:func:`~webshop_gym.utils.memo.read_memo`).
    """
    memo_path = cache_dir(create=False) / memo_name
    memo = read_memo(memo_path)
    if not isinstance(memo, dict):
        memo = {}
    known = memo.get(key)
    if isinstance(known, str) and len(known) == 64:
        return known
    value = compute()
    memo.pop(key, None)
    memo[key] = value
    size = sum(len(k) + len(str(v)) + 6 for k, v in memo.items())
    for old in list(memo)[:-1]:  # bounded in bytes: the oldest entries go first
        if size <= MEMO_BYTES:
            break
        size -= len(old) + len(str(memo.pop(old))) + 6
    write_memo(memo_path, memo)
    return value


def file_sha256(path: Path) -> str:
    """Return the SHA-256 of a file, remembered by (path, size, mtime) in a checked memo in the cache folder."""
    stat = path.stat()

    def compute() -> str:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 22), b""):
                digest.update(block)
        return digest.hexdigest()

    return _remembered(FILE_HASHES_MEMO, f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}", compute)


CONTENT_DIGEST_VERSION = 2
"""Bumped when :func:`content_sha256`'s canonical form changes (the memo is keyed by it).

2: a product's option groups (``customization_options``) keep their order (it is the order of
the option groups on its item page)."""

ORDERED_FIELDS = ("customization_options",)
"""A product record's object fields whose key order reaches a page: its option groups, in the order
the item page shows them (:func:`record_options` reads them in file order).  Every other object's
key order (a record's own fields, an option value's ``value``/``image``) reaches no page."""


def _canonical_bytes(value) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=True).encode("ascii")


def _canonical_record(record) -> bytes:
    """A product record's canonical dump: keys sorted except the :data:`ORDERED_FIELDS`, kept as [name, value] pairs."""
    if isinstance(record, dict) and any(isinstance(record.get(k), dict) for k in ORDERED_FIELDS):
        record = {k: ({"ordered": [[name, v] for name, v in value.items()]} if k in ORDERED_FIELDS and isinstance(value, dict)
                      else value) for k, value in record.items()}
    return _canonical_bytes(record)


def _first_char(path: Path) -> str:
    with open(path, "rb") as handle:
        head = handle.read(4096).decode("utf-8", "ignore").lstrip("\ufeff \t\r\n")
    return head[:1]


def content_sha256(path: Path, byte_sha256: str | None = None) -> str:
    r"""The SHA-256 of a JSON file's canonical content: what it says, not how it is written.

    What counts is what reaches a page: indentation, line ends, escapes (``\u00e9`` or ``é``), a
    byte-order mark and key order that no page shows (a record's own fields, an option value's
    ``value``/``image``) do not count; a product's fields, their values, the order of the records
    and the order of its option groups (:data:`ORDERED_FIELDS`: the item page lists them in file
    order) do.  A list
    file (the products) digests its records in order, each dumped canonically
    (``sort_keys``, no spaces, ASCII escapes): the SHA-256 of the canonical dump of the whole
    list.  An object file (``asin -> record``: attributes, human instructions) digests its
    members sorted by key.  Computed in one streaming pass and remembered in the cache folder
    by the file's byte digest (a copy with the same bytes is never read twice).

    Args:
        path: the JSON file.
        byte_sha256: its byte digest, when known (:func:`file_sha256` otherwise).
    """
    def compute() -> str:
        digest = hashlib.sha256()
        stream = JsonStream(path)
        try:
            if _first_char(path) == "{":
                members = sorted((name, hashlib.sha256(_canonical_bytes(value)).hexdigest())
                                 for name, value in stream.members("a JSON object"))
                digest.update(_canonical_bytes(dict(members)))
            else:
                digest.update(b"[")
                for index, record in stream.items("a JSON list"):
                    digest.update((b"," if index else b"") + _canonical_record(record))
                digest.update(b"]")
            stream.end()
        finally:
            stream.close()
        return digest.hexdigest()

    key = f"v{CONTENT_DIGEST_VERSION}|{byte_sha256 or file_sha256(path)}"
    return _remembered(CONTENT_DIGESTS_MEMO, key, compute)


# --------------------------------------------------------------------------------------------
# Parsing single records (SPEC section 1)


def parse_pricing(pricing, path="<products>", record=None) -> tuple[list[float], str]:
    """Parse a ``pricing`` field into (numbers, price tag) as the reference does.

    ``None`` or ``""`` give ``[100.0]`` and ``"$100.0"``; each ``$``-separated amount is
    stripped of everything but digits and dots; two or more amounts keep the first two and the
    tag ``"$<lo> to $<hi>"``.

    Raises:
        DataError: when an amount is not a number or the string holds no ``$`` amount.
    """
    if pricing is None or pricing == "":
        return [100.0], "$100.0"
    if not isinstance(pricing, str):
        raise DataError(path, f"expected a string like '$12.99', got {type(pricing).__name__}", record, "pricing")
    numbers = []
    for part in pricing.split("$")[1:]:
        cleaned = _NON_PRICE.sub("", part)
        try:
            numbers.append(float(Decimal(cleaned)))
        except InvalidOperation:
            raise DataError(path, f"{pricing!r} holds an amount that is not a number", record, "pricing") from None
    if not numbers:
        raise DataError(path, f"{pricing!r} holds no '$' amount", record, "pricing")
    if len(numbers) == 1:
        return numbers, f"${numbers[0]}"
    return numbers[:2], f"${numbers[0]} to ${numbers[1]}"


def record_text(record: dict, key: str, path, index, default: str | None = "") -> str:
    """Return the string field ``key`` of a product record (``default`` when absent or null)."""
    value = record.get(key, default)
    if value is None and default is not None:
        value = default
    if not isinstance(value, str):
        if value is None:
            raise DataError(path, "required field is missing", index, key)
        raise DataError(path, f"expected a string, got {type(value).__name__}", index, key)
    return value


def record_bullets(record: dict, path, index) -> list[str]:
    """Return a product's bullet points (``small_description``: a list, one string or nothing)."""
    value = record.get("small_description", [])
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise DataError(path, "expected a list of strings or a string", index, "small_description")


def record_options(record: dict, path, index) -> dict[str, list[str]]:
    """Return a product's option groups and values (``customization_options``)."""
    raw = record.get("customization_options")
    if not raw:
        return {}
    if not isinstance(raw, dict):
        raise DataError(path, f"expected an object, got {type(raw).__name__}", index, "customization_options")
    options: dict[str, list[str]] = {}
    for name, contents in raw.items():
        if contents is None:
            continue
        if not isinstance(contents, list):
            raise DataError(path, f"option {name!r}: expected a list", index, "customization_options")
        values = []
        for j, content in enumerate(contents):
            if not isinstance(content, dict) or not isinstance(content.get("value"), str):
                raise DataError(
                    path, f"option {name!r}, entry {j}: expected {{'value': str, ...}}", index, "customization_options"
                )
            values.append(content["value"].strip().replace("/", " | ").lower())
        options[name.lower()] = values
    return options


def record_reviews(record: dict, path, index) -> tuple[list[tuple[str, str, str]], str]:
    """Our extension: an optional ``reviews`` list; without it the reference shows no reviews."""
    if "reviews" not in record:
        return [], "N.A."
    raw = record["reviews"] or []
    if not isinstance(raw, list):
        raise DataError(path, "expected a list of reviews", index, "reviews")
    reviews = []
    for j, review in enumerate(raw):
        if not isinstance(review, dict):
            raise DataError(path, f"review {j}: expected an object", index, "reviews")
        score = review.get("score", review.get("stars", ""))
        body = review.get("body", review.get("review", ""))
        reviews.append((str(review.get("title", "")), str(score), str(body)))
    rating = record.get("average_rating", "")
    return reviews, (str(rating) if rating not in ("", None) else "N.A.")
