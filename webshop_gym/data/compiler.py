"""Compiling a shop's JSON files into catalog columns, streaming.

The three reference files are read one record at a time (:class:`~webshop_gym.data.jsonstream.JsonStream`):
first the attribute and human-instruction files, kept compactly by asin, then the product list,
whose text goes straight to the column files on disk.  Memory therefore holds one read window,
the per-asin attribute entries and the small vocabularies (categories, queries, attribute names,
option values), never the whole JSON nor every column at once.  Each file gets a progress bar.

Loading rules are SPEC section 1's, record for record, exactly as
:mod:`webshop_gym.data.catalog` documents them.
"""

from __future__ import annotations

import time
from array import array
from pathlib import Path

import numpy as np

from webshop_gym.data.colors import normalize_color
from webshop_gym.data.columns import (
    Interner,
    RaggedWriter,
    StringColumn,
    StringColumnWriter,
    save_array,
)
from webshop_gym.data.fuzz import FuzzTableBuilder
from webshop_gym.data.jsonstream import JsonStream
from webshop_gym.data.records import (
    CATEGORY_SEPARATOR,
    DUMMY_ATTR,
    ShopFiles,
    parse_pricing,
    record_bullets,
    record_options,
    record_reviews,
    record_text,
)
from webshop_gym.data.tagger import MAX_TITLE_CHARS
from webshop_gym.error import DataError

__all__ = ["compile_base"]

_STREAMED = (
    "asin", "title", "description", "bullet_text", "price_tag", "main_image", "rating", "review_title",
    "review_score", "review_body", "group_name", "value_text", "instruction", "human_text", "title_lower",
    "bullets_lower", "description_lower",
)  # fmt: skip
"""String columns written while reading (the others are vocabularies kept in memory)."""

STRING_FIELDS = (
    "asin", "title", "description", "bullet_text", "price_tag", "main_image", "rating",
    "review_title", "review_score", "review_body", "category_names", "query_names",
    "product_category_names", "group_name", "value_text", "attribute_names", "instruction",
    "human_text", "human_option_text", "title_lower", "bullets_lower", "description_lower",
    "part_names", "option_names", "value_names",
)  # fmt: skip
RAGGED_FIELDS = (
    "bullets", "reviews", "option_groups", "group_values", "attributes", "instruction_attributes",
    "human", "human_attributes", "human_options", "category_parts",
)  # fmt: skip
ARRAY_FIELDS = (
    "pricing", "has_instruction", "category", "query", "product_category", "value_fz",
    "value_group", "value_name_id", "group_name_id", "attribute_fz", "product_attribute_fz",
    "asin_sorted", "asin_order",
)  # fmt: skip



class _Bar:
    """A byte-progress bar for one file (or nothing when progress is off)."""

    def __init__(self, path: Path, desc: str, progress: bool):
        self.bar = None
        if progress:
            from tqdm import tqdm

            from webshop_gym.utils import progress as _progress

            self.bar = tqdm(disable=_progress.disable(), total=path.stat().st_size, desc=desc, unit="B", unit_scale=True, unit_divisor=1024,
                            leave=False, dynamic_ncols=True)
        self.done = 0

    def update(self, done: int) -> None:
        if self.bar is not None:
            self.bar.update(done - self.done)
            self.done = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _stream(path: Path, desc: str, progress: bool) -> tuple[JsonStream, _Bar]:
    bar = _Bar(path, desc, progress)
    return JsonStream(path, on_read=bar.update), bar


# --------------------------------------------------------------------------------------------
# The attribute and human-instruction files, kept compactly by asin


def _strings(value, canon: dict) -> tuple[str, ...] | None:
    """The value as a tuple of shared strings, or None when it is not a list of strings."""
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        return None
    return tuple(canon.setdefault(a, a) for a in value)


def _attribute_entry(path: Path, asin: str, entry, canon: dict):
    """``(attributes or None, instruction or None, instruction attributes)``, or the DataError to raise.

    Errors are raised only when a product uses the entry, as the reference would meet them.
    """
    if entry is None:
        return None
    if not isinstance(entry, dict):
        return DataError(path, "expected an object", asin)
    attrs = None
    if "attributes" in entry:
        attrs = _strings(entry["attributes"], canon)
        if attrs is None:
            return DataError(path, "expected a list of strings", asin, "attributes")
    instruction = entry.get("instruction") if entry else None
    ins_attrs: tuple[str, ...] = ()
    if instruction is not None:
        if not isinstance(instruction, str):
            return DataError(path, "expected a string", asin, "instruction")
        found = _strings(entry.get("instruction_attributes") or [], canon)
        if found is None:
            return DataError(path, "expected a list of strings", asin, "instruction_attributes")
        if not found:
            return DataError(path, "an instruction needs at least one instruction attribute", asin,
                             "instruction_attributes")
        ins_attrs = found
    return attrs, instruction, ins_attrs


def _human_entry(path: Path, asin: str, entries, canon: dict):
    """A tuple of ``(text, attributes, options)`` per instruction, or the DataError to raise."""
    entries = entries or []
    if not isinstance(entries, list):
        return DataError(path, "expected a list of instructions", asin)
    out = []
    for j, item in enumerate(entries):
        where = f"{asin}[{j}]"
        if not isinstance(item, dict) or not isinstance(item.get("instruction"), str):
            return DataError(path, "expected an object with a string 'instruction'", where, "instruction")
        fields = []
        for name in ("instruction_attributes", "instruction_options"):
            found = _strings(item.get(name) or [], canon)
            if found is None:
                return DataError(path, "expected a list of strings", where, name)
            fields.append(found)
        out.append((item["instruction"], fields[0], fields[1]))
    return tuple(out)


def _read_entries(path: Path | None, what: str, desc: str, convert, progress: bool) -> dict:
    if path is None:
        return {}
    canon: dict[str, str] = {}
    entries = {}
    stream, bar = _stream(path, desc, progress)
    try:
        for asin, value in stream.members(what):
            entries[asin] = convert(path, asin, value, canon)
        stream.end()
    finally:
        stream.close()
        bar.close()
    return entries


# --------------------------------------------------------------------------------------------
# Products


def _check_title(title: str, path: Path, index: int) -> None:
    """Titles are tagged with spaCy: refuse what its tokenizer or length limit would refuse."""
    if len(title) > MAX_TITLE_CHARS:
        raise DataError(path, f"a title of {len(title):,} characters is longer than spaCy tags "
                        f"({MAX_TITLE_CHARS:,}; the reference's tagger refuses it too)", index, "name")
    if not title.isascii():
        try:
            title.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise DataError(path, f"holds a lone surrogate (\\u{ord(title[exc.start]):04x} at character "
                            f"{exc.start}), which is not text spaCy can tag", index, "name") from None


def _abandon(writers: dict) -> None:
    """A failed compile: drop the half-written columns."""
    for writer in writers.values():
        writer.abort()


def compile_base(files: ShopFiles, num_products: int | None, folder: Path, progress: bool = True) -> dict:
    """Read a shop's files and write every base column into ``folder``.

    Args:
        files: the shop's files.
        num_products: keep only the first N product records.
        folder: an empty folder that receives the ``.npy`` files.
        progress: show a progress bar per file.

    Returns:
        ``{"counts": ..., "seconds": {stage: seconds}}``.

    Raises:
        DataError: a file or record is malformed (file, record and field named).
    """
    seconds = {}
    started = time.perf_counter()
    attributes = _read_entries(files.attributes, "an object asin -> record", "reading attributes",
                               _attribute_entry, progress)
    human = _read_entries(files.human, "an object asin -> list of instructions", "reading human instructions",
                          _human_entry, progress)
    seconds["read_instructions"] = time.perf_counter() - started

    started = time.perf_counter()
    writers = {name: StringColumnWriter(folder, name) for name in _STREAMED}
    w = writers
    bullets_rows, review_rows, group_rows, group_values = RaggedWriter(), RaggedWriter(), RaggedWriter(), RaggedWriter()
    attr_rows, instr_attr_rows = RaggedWriter(), RaggedWriter()
    human_rows, human_attr_rows, human_opt_rows = RaggedWriter(), RaggedWriter(), RaggedWriter()
    categories, queries, pcats = Interner(), Interner(), Interner()
    attr_names, human_opt_names, values, option_names = Interner(), Interner(), Interner(), Interner()
    category_ids, query_ids, pcat_ids, value_ids = array("i"), array("i"), array("i"), array("i")
    group_name_ids, value_groups = array("i"), array("i")
    pricing = array("d")
    has_instruction = bytearray()
    asins: list[str] = []
    seen: set[str] = set()
    skipped = duplicates = records = 0
    n_bullets = n_reviews = n_groups = n_human = 0

    path = files.products
    stream, bar = _stream(path, "reading products", progress)
    try:
        for index, record in stream.items("a list of product records"):
            if num_products is not None and index >= num_products:
                break
            records += 1
            if not isinstance(record, dict):
                raise DataError(path, f"expected an object, got {type(record).__name__}", index)
            asin = record.get("asin")
            if not isinstance(asin, str):
                raise DataError(path, "required string field is missing or not a string", index, "asin")
            if asin == "nan" or len(asin) > 10:
                skipped += 1
                continue
            if asin in seen:
                duplicates += 1
                continue
            seen.add(asin)

            title = record_text(record, "name", path, index, default=None)
            _check_title(title, path, index)
            description = record_text(record, "full_description", path, index)
            bullets = record_bullets(record, path, index)
            numbers, tag = parse_pricing(record.get("pricing"), path, index)
            options = record_options(record, path, index)
            images = record.get("images") or []
            if not isinstance(images, list):
                raise DataError(path, "expected a list of URLs", index, "images")
            reviews, rating = record_reviews(record, path, index)
            category = record_text(record, "category", path, index)
            query = record_text(record, "query", path, index)
            pcat = record_text(record, "product_category", path, index)

            entry = attributes.get(asin)
            if isinstance(entry, DataError):
                raise entry
            attrs, instruction, ins_attrs = entry if entry is not None else (None, None, ())
            entries = human.get(asin, ())
            if isinstance(entries, DataError):
                raise entries

            asins.append(asin)
            w["asin"].append(asin)
            w["title"].append(title)
            w["description"].append(description)
            w["price_tag"].append(tag)
            pricing.append(numbers[0])
            pricing.append(numbers[1] if len(numbers) > 1 else np.nan)
            w["main_image"].append(images[0] if images and isinstance(images[0], str) else "")
            w["rating"].append(rating)
            w["title_lower"].append(title.lower())
            w["bullets_lower"].append(" ".join(bullets).lower())
            w["description_lower"].append(description.lower())

            for b in bullets:
                w["bullet_text"].append(b)
            bullets_rows.append(range(n_bullets, n_bullets + len(bullets)))
            n_bullets += len(bullets)
            for t, s, b in reviews:
                w["review_title"].append(t)
                w["review_score"].append(s)
                w["review_body"].append(b)
            review_rows.append(range(n_reviews, n_reviews + len(reviews)))
            n_reviews += len(reviews)

            group_rows.append(range(n_groups, n_groups + len(options)))
            n_groups += len(options)
            for name, group in options.items():
                w["group_name"].append(name)
                group_name_ids.append(option_names.add(name))
                start = len(value_ids)
                for v in group:
                    w["value_text"].append(v)
                    value_ids.append(values.add(v))
                    value_groups.append(len(group_name_ids) - 1)
                group_values.append(range(start, len(value_ids)))

            category_ids.append(categories.add(category))
            query_ids.append(queries.add(query.lower().strip()))
            pcat_ids.append(pcats.add(pcat))

            attr_rows.append([attr_names.add(a) for a in (attrs if attrs is not None else (DUMMY_ATTR,))])
            w["instruction"].append(instruction or "")
            has_instruction.append(instruction is not None)
            instr_attr_rows.append([attr_names.add(a) for a in ins_attrs])

            human_rows.append(range(n_human, n_human + len(entries)))
            n_human += len(entries)
            for text, h_attrs, h_opts in entries:
                w["human_text"].append(text)
                human_attr_rows.append([attr_names.add(a) for a in h_attrs])
                human_opt_rows.append([human_opt_names.add(o) for o in h_opts])
        else:
            stream.end()
    except BaseException:
        _abandon(writers)
        raise
    finally:
        stream.close()
        bar.close()
    del attributes, human, seen
    try:
        if not asins:
            raise DataError(path, "no usable product records")
        for writer in writers.values():
            writer.close()
        seconds["read_products"] = time.perf_counter() - started

        started = time.perf_counter()
        parts = Interner()
        part_rows = RaggedWriter()
        for pcat in pcats.strings:
            part_rows.append(sorted({parts.add(x.strip()) for x in pcat.split(CATEGORY_SEPARATOR)}))

        fuzz = FuzzTableBuilder()
        attribute_fz = np.asarray(fuzz.add_all(attr_names.strings), dtype=np.int32)
        distinct_value_fz = np.asarray(fuzz.add_all(normalize_color(v) for v in values.strings), dtype=np.int32)
        value_fz = distinct_value_fz[np.frombuffer(value_ids, dtype=np.int32)] if len(value_ids) else np.zeros(0, np.int32)

        vocabularies = {
            "category_names": categories, "query_names": queries, "product_category_names": pcats,
            "attribute_names": attr_names, "human_option_text": human_opt_names, "part_names": parts,
            "option_names": option_names, "value_names": values,
        }  # fmt: skip
        assert set(vocabularies) | set(_STREAMED) == set(STRING_FIELDS)
        for name, interner in vocabularies.items():
            StringColumn.build(interner.strings).save(folder, name)
        ragged = {
            "bullets": bullets_rows, "reviews": review_rows, "option_groups": group_rows, "group_values": group_values,
            "attributes": attr_rows, "instruction_attributes": instr_attr_rows, "human": human_rows,
            "human_attributes": human_attr_rows, "human_options": human_opt_rows, "category_parts": part_rows,
        }  # fmt: skip
        for name, rows in ragged.items():
            rows.save(folder, name)
        asin_bytes = np.array([a.encode("utf-8", "surrogatepass") for a in asins])
        order = np.argsort(asin_bytes, kind="stable")
        attribute_rows = attr_rows.build()
        arrays = {
            "pricing": np.frombuffer(pricing, dtype=np.float64).reshape(-1, 2),
            "has_instruction": np.frombuffer(bytes(has_instruction), dtype=np.uint8).astype(bool),
            "category": np.frombuffer(category_ids, dtype=np.int32),
            "query": np.frombuffer(query_ids, dtype=np.int32),
            "product_category": np.frombuffer(pcat_ids, dtype=np.int32),
            "value_fz": value_fz,
            "value_name_id": np.frombuffer(value_ids, dtype=np.int32),
            "value_group": np.frombuffer(value_groups, dtype=np.int32),
            "group_name_id": np.frombuffer(group_name_ids, dtype=np.int32),
            "attribute_fz": attribute_fz,
            "product_attribute_fz": attribute_fz[np.asarray(attribute_rows.values)] if len(attribute_rows.values)
            else np.zeros(0, np.int32),
            "asin_sorted": asin_bytes[order],
            "asin_order": order.astype(np.int32),
        }
        for name, values_array in arrays.items():
            save_array(folder, name, values_array)
        fuzz.build().save(folder, "fuzz")
        seconds["write"] = time.perf_counter() - started
        counts = {"products": len(asins), "skipped": skipped, "duplicates": duplicates, "records": records}
        return {"counts": counts, "seconds": {k: round(v, 3) for k, v in seconds.items()}}
    except BaseException:
        _abandon(writers)
        raise
