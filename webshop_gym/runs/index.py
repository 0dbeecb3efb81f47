"""A run file indexed once: where each episode's lines are, and a compact summary of each episode.

The viewer of ``webshop-gym serve --runs`` must stay fast and small whatever the size of a run
(a 50,000-episode run is a third of a gigabyte).  :class:`RunIndex` reads a run file (any
trajectory log of :mod:`webshop_gym.runs.log`) once, line by line, checking each line as
:func:`~webshop_gym.runs.log.read_log` does, and keeps per episode only its byte span in the
file and a few numbers (goal, reward, steps, invalid actions, purchase, failure cause and tag,
reward parts, category, instruction); observations and model outputs are never kept.  When the
file changes, :meth:`RunIndex.refresh` reads only what was appended (a run being written), or
everything again when the file was replaced or cut.  :meth:`RunIndex.episode` reads one
episode back from disk; :meth:`RunIndex.table` gives the columns the run page sorts and filters
(numpy arrays) with the run's figures, computed as ``eval`` computes them.

A last line without its newline is a write in progress (or cut off by a crash): it is read
once it is complete.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from webshop_gym.analysis.diagnosis import facts_of_steps, option_misses
from webshop_gym.analysis.figures import (
    SampleFigures,
    paired_positions,
    pairing_key,
    sample_figures,
    summarize,
)
from webshop_gym.analysis.taxonomy import (
    CAUSES,
    FAMILY,
    SOLVED,
    TAGS,
    EpisodeFacts,
    failure_causes,
    failure_tag,
)
from webshop_gym.runs.log import (
    _EPISODE_FIELDS,
    _STEP_FIELDS,
    Episode,
    LogError,
    _check,
    check_run_record,
    decode_record,
)
from webshop_gym.runs.run import RunEpisode, _episode
from webshop_gym.runs.sharing import shareable_text
from webshop_gym.utils import surrogates

__all__ = ["CSV_COLUMNS", "EXPORT_COLUMNS", "IndexTable", "RunIndex", "csv_row", "csv_value", "export_record", "seed_groups",
           "setting_key"]

#: Seconds between two progress reports of a long indexing.
PROGRESS_EVERY = 2.0
NAN = float("nan")


class _Columns:
    """Per-episode lists filled while reading (one entry per episode, in file order)."""

    def __init__(self):
        self.ids: dict[str, int] = {}
        self.start: list[int] = []
        self.end: list[int] = []
        self.line: list[int] = []
        self.goal: list[int] = []
        self.instruction: list[str] = []
        self.category: list[str] = []
        self.target: list[str] = []
        self.steps: list[int] = []
        self.invalid: list[int] = []
        self.last: list[tuple] = []  # (reward, terminated, truncated)
        self.info: list[dict | None] = []  # the last step's reward parts (compact) if it has any
        self.bought: list[str] = []
        self.searched: list[bool] = []
        self.seen: list[int | None] = []
        self.opened: list[bool] = []
        self.errored: list[bool] = []
        self.ended: list[bool] = []  # ended before the engine did (AgentBench's end, RAGEN's turns): no terminal step
        self.reachable: list[bool | None] = []
        self.record_extra: list[dict | None] = []  # reachable / reason / errored for exports
        self.accounting: list[dict | None] = []  # a served model's errored / tokens / requests / retries
        self.protocol: list[dict | None] = []  # a protocol's episode fields (item, sample, draw, price seed)


_INFO_KEYS = ("r_type", "r_att", "r_option", "r_price")


@dataclass
class IndexTable:
    """A run's episodes as columns (position ``i`` = the ``i``-th episode of the file).

    Attributes:
        goal, reward, steps, invalid: numpy arrays.
        success, purchased, truncated, errored: boolean arrays (an errored episode: a served
            model's calls failed; it is left out of the figures).
        tag: index into :data:`~webshop_gym.analysis.taxonomy.TAGS` (-1: solved).
        cause: index of the first reward part short in :data:`~webshop_gym.analysis.taxonomy.CAUSES` (-1: none).
        causes: bit ``c`` set when reward part ``c`` fell short.
        category: index into ``categories``.
        reachable: int8 per episode: 1 the goal can score 1.0, 0 it cannot, -1 the run does not say.
        instructions, instructions_lower: lists of str.
        figures: :func:`~webshop_gym.analysis.figures.summarize` of the episodes.
        samples: a run that played each goal several times (``eval --samples K``), goal by goal
            (:func:`~webshop_gym.analysis.figures.sample_figures`; positions index this table);
            ``None`` for a run of one play per goal.
        pairing: each episode's pairing key (:func:`~webshop_gym.analysis.figures.pairing_key`:
            ``(goal, price seed, sample)``).
    """

    goal: np.ndarray
    reward: np.ndarray
    steps: np.ndarray
    invalid: np.ndarray
    success: np.ndarray
    purchased: np.ndarray
    truncated: np.ndarray
    errored: np.ndarray
    tag: np.ndarray
    cause: np.ndarray
    causes: np.ndarray
    category: np.ndarray
    categories: list[str]
    reachable: np.ndarray
    instructions: list[str]
    instructions_lower: list[str]
    figures: dict
    samples: SampleFigures | None = None
    pairing: list = field(default_factory=list)
    ended: np.ndarray | None = None  # ended before the engine did (AgentBench's end, RAGEN's turns): scored, reward 0

    @property
    def unscored(self) -> np.ndarray:
        """Per episode, whether it stays out of Score and SR: errored, or without a terminal record (cut; resumed)."""
        finished = self.purchased | self.truncated
        if self.ended is not None:
            finished = finished | self.ended
        return self.errored | ~finished

    def __len__(self) -> int:
        return len(self.goal)

    def tag_name(self, i: int) -> str:
        """Episode ``i``'s failure tag (``"solved"`` for a success)."""
        t = int(self.tag[i])
        return SOLVED if t < 0 else TAGS[t]

    def family(self, i: int) -> str:
        """Episode ``i``'s tag family (``""`` for a success)."""
        t = int(self.tag[i])
        return "" if t < 0 else FAMILY[TAGS[t]]

    def cause_names(self, i: int) -> list[str]:
        """Episode ``i``'s reward parts short (first first)."""
        mask = int(self.causes[i])
        main = int(self.cause[i])
        names = [CAUSES[main]] if main >= 0 else []
        return names + [c for j, c in enumerate(CAUSES) if mask >> j & 1 and j != main]

    def examples(self, positions, most: int = 5) -> list[int]:
        """Up to ``most`` of ``positions`` (in order), one per goal first: a sampled run's examples show distinct goals.

        Positions of goals already shown come after, only when there are fewer distinct goals than ``most``.

        Example:
            >>> t = IndexTable(*[np.array([3, 3, 3, 4, 5])] * 12, categories=[], reachable=np.zeros(5), instructions=[],
            ...                instructions_lower=[], figures={})
            >>> t.examples([0, 1, 2, 3, 4], 3), t.examples([0, 1, 2], 2)
            ([0, 3, 4], [0, 1])
        """
        first, again, seen = [], [], set()
        for p in positions:
            goal = int(self.goal[p])
            (again if goal in seen else first).append(int(p))
            seen.add(goal)
            if len(first) >= most:
                break
        return (first + again)[:most]

    def by_goal(self) -> dict[int, int]:
        """Position by goal index (the last one when a goal repeats); a comparison pairs by :meth:`by_pairing`."""
        return {int(g): i for i, g in enumerate(self.goal.tolist())}

    def by_pairing(self) -> dict:
        """Position by pairing key, errored episodes left out (what a comparison pairs, as ``report`` does)."""
        return paired_positions(self.pairing, self.errored.tolist())

    def nbytes(self) -> int:
        """Bytes held, roughly (arrays plus the instruction strings)."""
        arrays = sum(a.nbytes for a in (self.goal, self.reward, self.steps, self.invalid, self.success, self.purchased,
                                         self.truncated, self.errored, self.tag, self.cause, self.causes, self.category,
                                         self.reachable))
        samples = self.samples.nbytes() if self.samples is not None else 0
        keys = 8 * len(self.pairing) + sum(120 if isinstance(k, tuple) else 32 for k in self.pairing)
        return arrays + samples + keys + sum(2 * (len(s) + 50) for s in self.instructions)


class RunIndex:
    """The index of one run file (see the module docstring).

    Args:
        path: the run file.

    Attributes:
        header: the ``run`` line (``{}`` without one); ``summary``: the ``summary`` line or ``None``.
        size, mtime_ns: the file's size and modification time when last read.
        seconds: time the last refresh took.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._lock = threading.RLock()  # a refresh and the readers of the columns take turns
        self._reset()

    def _reset(self) -> None:
        self.header: dict = {}
        self.summary: dict | None = None
        self.first_shop: dict | None = None  # the first episode's shop record
        self.size = -1
        self.mtime_ns = -1
        self.consumed = 0  # bytes of complete lines read
        self.lines = 0
        self._head = b""  # the first bytes, to notice a replaced file
        self._cols = _Columns()
        self._table: IndexTable | None = None
        self.seconds = 0.0

    # -- reading ------------------------------------------------------------------------------------

    def stale(self) -> bool:
        """Whether the file changed since it was read (size or modification time)."""
        stat = self.path.stat()
        return (stat.st_size, stat.st_mtime_ns) != (self.size, self.mtime_ns)

    def refresh(self, progress: Callable[[int, int, int], None] | None = None) -> bool:
        """Read what changed since the last call; return whether anything did.

        Args:
            progress: called now and then with (bytes read, file size, episodes so far).

        Raises:
            LogError: a line is malformed (the message names the file and the line).
            OSError: the file cannot be read.
        """
        with self._lock:
            return self._refresh(progress)

    def _refresh(self, progress) -> bool:
        stat = self.path.stat()
        if (stat.st_size, stat.st_mtime_ns) == (self.size, self.mtime_ns):
            return False
        started = time.perf_counter()
        with open(self.path, "rb") as handle:
            head = handle.read(4096)
            grown = self.size >= 0 and stat.st_size >= self.consumed and head[: len(self._head)] == self._head
            if not grown:
                self._reset()
            self._head = head if len(head) >= len(self._head) else self._head
            handle.seek(self.consumed)
            try:
                self._read(handle, stat.st_size, progress)
            except BaseException:
                self._reset()  # a half-read index is never used
                raise
        self.size, self.mtime_ns = stat.st_size, stat.st_mtime_ns
        self._table = None
        self.seconds = time.perf_counter() - started
        return True

    def _read(self, handle, total: int, progress) -> None:
        cols = self._cols
        path = self.path
        offset = self.consumed
        number = self.lines
        last_report = time.perf_counter()
        for raw in handle:
            if not raw.endswith(b"\n"):
                break  # a write in progress: read once complete
            number += 1
            start = offset
            offset += len(raw)
            if progress is not None and not number % 2048 and time.perf_counter() - last_report >= PROGRESS_EVERY:
                last_report = time.perf_counter()
                progress(offset, total, len(cols.start))
            text = raw.strip()
            if not text:
                self.consumed, self.lines = offset, number
                continue
            record = decode_record(path, number, text)
            kind = record["type"]
            if kind == "step":
                self._step(record, number, start, offset)
            elif kind == "episode":
                self._episode(record, number, start, offset)
            elif kind == "run":
                if self.header or cols.start:
                    raise LogError(path, number, "a run record must be the first line")
                check_run_record(path, number, record)
                self.header = record
            elif kind == "summary":
                self.summary = record
            self.consumed, self.lines = offset, number
        if progress is not None:
            progress(self.consumed, total, len(cols.start))

    def _episode(self, record: dict, number: int, start: int, end: int) -> None:
        path, cols = self.path, self._cols
        _check(path, number, record, _EPISODE_FIELDS)
        if record["goal_index"] < 0:
            raise LogError(path, number, f"goal_index must be >= 0, got {record['goal_index']}")
        shop = record.get("shop", self.header.get("shop") if self.header else None)
        if not isinstance(shop, dict):
            raise LogError(path, number, "episode record has no 'shop' (and no run record gives one)")
        if self.first_shop is None:
            self.first_shop = shop
        eid = record["episode"]
        if eid in cols.ids:
            raise LogError(path, number, f"episode {eid!r} starts twice")
        cols.ids[eid] = len(cols.start)
        target = record.get("target") if isinstance(record.get("target"), dict) else {}
        cols.start.append(start)
        cols.end.append(end)
        cols.line.append(number)
        cols.goal.append(int(record["goal_index"]))
        cols.instruction.append(str(record.get("instruction", "")))
        cols.category.append(str(record.get("category") or "unknown"))
        cols.target.append(str(target.get("asin") or ""))
        cols.steps.append(0)
        cols.invalid.append(0)
        cols.last.append((0.0, False, False))
        cols.info.append(None)
        cols.bought.append("")
        cols.searched.append(False)
        cols.seen.append(None)
        cols.opened.append(False)
        cols.errored.append(bool(record.get("errored")))
        cols.ended.append(bool(record.get("ended")))
        cols.reachable.append(bool(record["reachable"]) if "reachable" in record else None)
        extra = {k: record[k] for k in ("reachable", "reason", "errored") if k in record}
        cols.record_extra.append(extra or None)
        accounting = {k: record[k] for k in ("errored", "tokens", "requests", "retries") if k in record}
        cols.accounting.append(accounting or None)
        cols.protocol.append(record["protocol"] if isinstance(record.get("protocol"), dict) else None)

    def _step(self, record: dict, number: int, start: int, end: int) -> None:
        path, cols = self.path, self._cols
        _check(path, number, record, _STEP_FIELDS)
        i = cols.ids.get(record["episode"])
        if i is None:
            raise LogError(path, number, f"step of an episode that has not started: {record['episode']!r}")
        if record["step"] != cols.steps[i] + 1:
            raise LogError(path, number, f"step {record['step']} of episode {record['episode']!r}; "
                                         f"expected step {cols.steps[i] + 1}")
        cols.steps[i] += 1
        cols.end[i] = end
        invalid = bool(record["invalid_action"])
        cols.invalid[i] += invalid
        terminated = bool(record["terminated"])
        cols.last[i] = (float(record["reward"]), terminated, bool(record["truncated"]))
        info = record.get("reward_info")
        cols.info[i] = {k: info[k] for k in _INFO_KEYS if k in info} if info else None
        cols.bought[i] = str(record.get("purchased_asin") or "") if terminated else ""
        if record.get("errored"):
            cols.errored[i] = True
            cols.accounting[i] = {**(cols.accounting[i] or {}), "errored": True}
        action = record.get("action")
        if not invalid and isinstance(action, str):
            if action.startswith("search[") and action.endswith("]"):
                cols.searched[i] = True
            target = cols.target[i]
            if target and action.startswith("click[") and action[6:-1].strip().lower() == target.lower():
                cols.opened[i] = True
        if record.get("page") == "results":
            obs = record.get("observation")
            target = cols.target[i]
            if isinstance(obs, str) and target:
                if cols.seen[i] is None:
                    cols.seen[i] = 0
                if not cols.seen[i] and (target.upper() in obs or target.lower() in obs):
                    cols.seen[i] = int(record["step"])

    # -- what the pages read --------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._cols.start)

    @property
    def episodes(self) -> int:
        """Episodes indexed."""
        return len(self._cols.start)

    def table(self) -> IndexTable:
        """The episodes as columns, with the figures (computed once per change of the file)."""
        with self._lock:
            if self._table is None:
                self._table = self._build_table()
            return self._table

    def _build_table(self) -> IndexTable:

        cols = self._cols
        n = len(cols.start)
        reward = np.zeros(n)
        success = np.zeros(n, bool)
        purchased = np.zeros(n, bool)
        truncated = np.zeros(n, bool)
        tag = np.full(n, -1, np.int16)
        cause = np.full(n, -1, np.int8)
        causes = np.zeros(n, np.int16)
        tag_ids = {t: j for j, t in enumerate(TAGS)}
        cause_ids = {c: j for j, c in enumerate(CAUSES)}
        category_ids: dict[str, int] = {}
        category = np.zeros(n, np.int32)
        records = []
        for i in range(n):
            r, term, trunc = cols.last[i]
            steps, invalid = cols.steps[i], cols.invalid[i]
            got = r if term else 0.0
            reward[i] = got
            purchased[i] = term
            truncated[i] = trunc
            success[i] = term and got == 1.0
            info = cols.info[i] if term else None
            found = [] if cols.errored[i] else failure_causes(term, trunc, steps, invalid, info, got)
            if found:
                cause[i] = cause_ids[found[0]]
                for c in found:
                    causes[i] |= 1 << cause_ids[c]
            name = failure_tag(EpisodeFacts(term, trunc, steps, invalid, got, cols.searched[i], cols.target[i],
                                            cols.bought[i], cols.seen[i], cols.opened[i], info or {},
                                            cols.errored[i], cols.reachable[i]))
            tag[i] = -1 if name == SOLVED else tag_ids[name]
            category[i] = category_ids.setdefault(cols.category[i], len(category_ids))
            rec = {"reward": got, "steps": steps, "invalid_actions": invalid, "purchased": term, "truncated": trunc}
            rec.update(cols.accounting[i] or {})  # a served model's episode: errored, tokens, requests, retries
            if not (term or trunc or cols.errored[i] or cols.ended[i]):
                rec["unfinished"] = True  # no terminal record (the file was cut): --resume replays it, not scored
            if term and info:
                rec["reward_info"] = {k: v for k, v in info.items() if not (isinstance(v, float) and math.isnan(v))}
            if cols.reachable[i] is not None:
                rec["reachable"] = cols.reachable[i]
            if cols.protocol[i] is not None:
                rec["protocol"] = cols.protocol[i]
            records.append(rec)
        protocol = (self.header or {}).get("protocol")
        run_price_seed = ((self.header or {}).get("fingerprint") or {}).get("price_seed")
        figures = summarize(records, protocol=protocol)
        samples = sample_figures(protocol, records)
        del records
        return IndexTable(
            goal=np.asarray(cols.goal, np.int64), reward=reward, steps=np.asarray(cols.steps, np.int64),
            invalid=np.asarray(cols.invalid, np.int64), success=success, purchased=purchased, truncated=truncated,
            errored=np.asarray(cols.errored, bool),
            tag=tag, cause=cause, causes=causes, category=category, categories=list(category_ids),
            reachable=np.array([-1 if r is None else int(r) for r in cols.reachable], np.int8),
            instructions=list(cols.instruction), instructions_lower=[s.lower() for s in cols.instruction],
            figures=figures, samples=samples, ended=np.asarray(cols.ended, bool),
            pairing=[pairing_key(g, p, run_price_seed) for g, p in zip(cols.goal, cols.protocol, strict=True)])

    def tag_counts(self) -> Counter:
        """Episodes per failure tag (``solved`` included)."""
        t = self.table()
        return Counter(t.tag_name(i) for i in range(len(t)))

    def protocol_fields(self, position: int) -> dict:
        """Episode ``position``'s protocol fields as indexed (item, sample, price seed...; ``{}`` without)."""
        with self._lock:
            return dict(self._cols.protocol[position] or {})

    def span(self, position: int) -> tuple[int, int]:
        """Byte span [start, end) of an episode's lines (other episodes' lines may interleave)."""
        with self._lock:
            return self._cols.start[position], self._cols.end[position]

    def episode(self, position: int) -> RunEpisode:
        """Read episode ``position`` (0-based, file order) from disk.

        Raises:
            IndexError: there is no such episode.
            LogError: the file changed under the index (refresh and try again).
        """
        cols = self._cols
        with self._lock:
            if not 0 <= position < len(cols.start):
                raise IndexError(position)
            start, end, first_line = cols.start[position], cols.end[position], cols.line[position]
        with open(self.path, "rb") as handle:
            handle.seek(start)
            data = handle.read(end - start)
        lines = data.split(b"\n")
        head = surrogates.loads(lines[0])
        eid = head.get("episode")
        if head.get("type") != "episode" or cols.ids.get(eid) != position:
            raise LogError(self.path, first_line, "the file changed since it was indexed")
        shop = head.get("shop", self.header.get("shop") if self.header else None)
        ep = Episode(eid, int(head["goal_index"]), shop, head.get("instruction", ""), record=head, line=first_line)
        number = first_line
        for raw in lines[1:]:
            number += 1
            if not raw.strip() or b'"step"' not in raw:
                continue
            record = surrogates.loads(raw)
            if record.get("type") != "step" or record.get("episode") != eid:
                continue
            ep.actions.append(record.get("action"))
            ep.steps.append(record)
            ep.step_lines.append(number)
        return _episode(position, ep)

    def export_record(self, position: int, episode: RunEpisode | None = None, keep_paths: bool = False) -> dict:
        """Episode ``position`` as ``eval --json --episodes`` reports it, plus the viewer's columns."""
        return export_record(episode or self.episode(position), self.table(), keep_paths)

    def iter_export(self, keep_paths: bool = False) -> Iterator[dict]:
        """Every episode's :meth:`export_record`, reading the file once, in order (memory: one episode)."""
        for i in range(len(self._cols.start)):
            yield self.export_record(i, keep_paths=keep_paths)


#: Columns of the per-episode export beyond ``eval --json --episodes``'s records: the viewer's, then the diagnosis.
EXPORT_COLUMNS = ("position", "instruction", "category", "tag", "causes", "family", "target_asin", "first_seen_step",
                  "opened_step", "queries", "attributes_matched", "missed_options")


def export_record(episode: RunEpisode, table: IndexTable | None = None, keep_paths: bool = False) -> dict:
    """An episode as ``eval --json --episodes`` reports it, then the viewer's columns (:data:`EXPORT_COLUMNS`).

    The diagnosis columns come from the log alone (:func:`~webshop_gym.analysis.diagnosis.facts_of_steps`):
    ``family`` (the tag's), ``target_asin``, ``first_seen_step`` (the first step whose results
    page showed the target; 0 never, empty when observations were not logged), ``opened_step``
    (0: never), ``queries`` (per search: ``step``, ``query``, ``pages_seen``, ``seen``: the
    target on those pages), ``attributes_matched`` (of the asked ones, from ``r_att``),
    ``missed_options`` (the asked options the purchase missed, ``name: value``).  The target's
    rank in the engine's results needs the shop: the episode page gives it.  An errored episode
    (a served model's calls failed) has no ``reward`` and no ``success`` (``None``): its ``error`` says why,
    with server addresses and machine paths cut (:mod:`webshop_gym.runs.sharing`) unless ``keep_paths``.
    """
    out = episode.record()
    record = episode.log.record
    if "errored" in record:
        out["errored"] = record["errored"]
    if episode.errored:  # the model's calls failed: no reward and no outcome, only the error
        out["reward"] = out["success"] = None
    if isinstance(out.get("error"), str) and not keep_paths:
        out["error"] = shareable_text(out["error"])
    out["position"] = episode.position
    out["instruction"] = episode.instruction
    out["category"] = episode.category
    tag = table.tag_name(episode.position) if table is not None else ""
    out["tag"] = tag
    out["causes"] = list(episode.causes)
    out["family"] = FAMILY.get(tag, "")
    target = record.get("target") if isinstance(record.get("target"), dict) else {}
    facts = facts_of_steps(episode.log.steps, record) if episode.log.steps else None
    out["target_asin"] = str(target.get("asin") or "")
    out["first_seen_step"] = None if facts is None else facts["seen_step"]
    out["opened_step"] = None if facts is None else facts["opened_step"]
    out["queries"] = [] if facts is None else [
        {"step": step, "query": query, "pages_seen": facts["pages"].get(step, ([], False))[0],
         "seen": facts["pages"].get(step, ([], False))[1]} for step, query, valid in facts["queries"] if valid]
    info = episode.reward_info or {}
    asked = target.get("attributes") or []
    out["attributes_matched"] = (round(float(info["r_att"]) * len(asked)) if asked and info.get("r_att") is not None
                                 else None)
    out["missed_options"] = ([o["asked"] for o in option_misses(episode.last.get("purchased_options") or {},
                                                                target.get("options")) if not o["matched"]]
                             if episode.purchased else [])
    return out


#: The CSV's columns: eval's episode record flattened (reward_info.*, tokens.*, protocol.* one column each: a
#: protocol's planned episode, its item, sample, price seed and policy seed), then the viewer's.
CSV_COLUMNS = ("goal_index", "reward", "success", "steps", "invalid_actions", "purchased", "truncated",
               "purchased_asin", "purchased_options", "purchased_price", "reward_info.r_type", "reward_info.r_att",
               "reward_info.w_att", "reward_info.query_match", "reward_info.category_match", "reward_info.title_score",
               "reward_info.r_option", "reward_info.w_option", "reward_info.r_price", "reward_info.w_price",
               "reachable", "reason", "errored", "error", "tokens.prompt", "tokens.completion", "requests", "retries",
               "latency_s", "protocol.item", "protocol.sample", "protocol.price_seed", "protocol.policy_seed",
               *EXPORT_COLUMNS)


def csv_value(value) -> str:
    """How the CSV writes a value: ``true``/``false``, ``repr`` of numbers (exact), JSON of objects, ``""`` for none."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, sort_keys=False)
    return str(value)


def csv_row(record: dict) -> list[str]:
    """One episode's CSV cells (:data:`CSV_COLUMNS`)."""
    info = record.get("reward_info") or {}
    cells = []
    for column in CSV_COLUMNS:
        if column.startswith("reward_info."):
            cells.append(csv_value(info.get(column[len("reward_info."):])))
        elif column.startswith(("tokens.", "protocol.")):  # a dict's field (None: no such dict)
            part, key = column.split(".", 1)
            found = record.get(part)
            cells.append(csv_value(found.get(key) if isinstance(found, dict) else None))
        elif column == "causes":
            cells.append("; ".join(record.get("causes") or []))
        else:
            cells.append(csv_value(record.get(column)))
    return cells


def setting_key(header: dict) -> tuple:
    """What makes two runs the same setting but for the seed: policy, prompt, split, goal set, cap, decoding."""
    fp = header.get("fingerprint") or {}
    return (str(header.get("policy") or "?"), str(header.get("prompt") or "-"), str(header.get("split") or "?"),
            str(fp.get("goal_set") or "-"), str(header.get("max_steps")),
            json.dumps(header.get("policy_settings"), sort_keys=True))


def seed_groups(runs: list[tuple[str, dict, dict]]) -> list[dict]:
    """Settings run with several seeds: mean and sample standard deviation of Score and SR over the seeds.

    Args:
        runs: ``(name, header, figures)`` per run.

    Returns:
        Per setting with at least two distinct seeds: ``policy``, ``prompt``, ``split``,
        ``goal_set``, ``seeds``, ``runs``, ``score`` and ``sr`` as (mean, sd).
    """
    import statistics

    groups: dict[tuple, list] = {}
    for name, header, figures in runs:
        groups.setdefault(setting_key(header), []).append((name, header, figures))
    out = []
    for key, members in groups.items():
        seeds = sorted({str(h.get("seed")) for _, h, _ in members})
        if len(members) < 2 or len(seeds) < 2:
            continue
        stats = {}
        for part in ("score", "sr"):
            values = [f[part] for _, _, f in members if f.get(part) is not None]
            stats[part] = (statistics.mean(values), statistics.stdev(values) if len(values) > 1 else 0.0)
        out.append({"policy": key[0], "prompt": key[1], "split": key[2], "goal_set": key[3], "seeds": seeds,
                    "runs": [name for name, _, _ in members], **stats})
    return out
