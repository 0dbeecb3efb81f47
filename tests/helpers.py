"""Helpers for tests: small hand-made shops in the reference format, and Ctrl-C in child processes."""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import shutil
import signal
from pathlib import Path

import pytest

SUITE_DISK_PEAK = 1_000_000_000
"""Bytes the test suite writes at its peak, rounded up (measured 2026-12-02 with the README's
command: 0.78 GB, 0.65 GB of it the 100,000-product test's shop and cache, which it deletes)."""


def disk_shortfall(paths, need: int = SUITE_DISK_PEAK) -> str | None:
    """A one-line warning when a folder the tests write to has less than ``need`` bytes free.

    ``paths`` that do not exist yet are judged by their nearest existing parent.  ``None`` when
    every disk has room.  (A full disk fails tests in scattered places, the worst of them inside
    pytest itself; the line says why before that happens.)
    """
    for path in paths:
        path = Path(path).absolute()
        while not path.exists() and path != path.parent:
            path = path.parent
        free = shutil.disk_usage(path).free
        if free < need:
            return (f"only {free / 1e6:,.0f} MB free on the disk of {path}; the test suite writes about "
                    f"{need / 1e9:.1f} GB at its peak: expect 'No space left on device' failures")
    return None


def product(asin: str, **fields) -> dict:
    """A minimal valid product record."""
    record = {
        "asin": asin,
        "name": f"Product {asin}",
        "full_description": f"Description of {asin}.",
        "small_description": [f"Bullet one of {asin}", "Bullet two"],
        "pricing": "$10.00",
        "customization_options": "",
        "images": [f"https://img.invalid/{asin}.jpg"],
        "category": "grocery",
        "query": "Snack Bars ",
        "product_category": "Grocery & Gourmet Food › Snacks › Bars",
    }
    record.update(fields)
    return record


def write_shop(folder: Path, products: list, attributes: dict | None = None, human: dict | None = None) -> Path:
    """Write the three reference files into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "items_shuffle.json").write_text(json.dumps(products), encoding="utf-8")
    if attributes is not None:
        (folder / "items_ins_v2.json").write_text(json.dumps(attributes), encoding="utf-8")
    if human is not None:
        (folder / "items_human_ins.json").write_text(json.dumps(human), encoding="utf-8")
    return folder


def require_extra(module: str, extra: str, what: str | None = None, distributions: tuple[str, ...] = ()):
    """Import ``module``, or skip (a module-level skip when called at import) naming the extra to install.

    ``pytest.importorskip`` skips only on ``ModuleNotFoundError`` (pytest >= 8.2); a missing extra may
    raise any ``ImportError``: our integration modules raise
    :class:`~webshop_gym.error.DependencyNotInstalled`, a half-installed package its own.  With
    ``distributions`` (the extra's PyPI names), any error of the import skips when one of them is
    not installed, and is raised when all are (then it is a real bug, not a missing extra).
    """
    missing = []
    for name in distributions:
        try:
            importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
    try:
        return importlib.import_module(module)
    except Exception as exc:
        if distributions and not missing:
            raise
        if not distributions and not isinstance(exc, ImportError):
            raise
        named = ", ".join(missing) + " not installed" if missing else f"{what or module} is not usable here"
        pytest.skip(f"{named} ({type(exc).__name__}: {exc}): pip install 'webshop-gym[{extra}]'",
                    allow_module_level=True)


def load_example(name: str):
    """The module ``examples/NAME.py`` (the examples are scripts, not a package)."""
    import importlib.util
    import sys

    path = Path(__file__).resolve().parent.parent / "examples" / f"{name}.py"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def default_sigint() -> None:
    """``preexec_fn`` for a child that must see Ctrl-C as a terminal delivers it.

    A shell starts background jobs with SIGINT ignored and children inherit that, so a child's
    Python would not turn SIGINT into KeyboardInterrupt; this restores the default first.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def ignore_sigint() -> None:
    """``preexec_fn`` for a child started as a shell starts a background job: SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def wait_until(predicate, timeout: float = 10.0) -> bool:
    """Poll ``predicate`` every 50 ms until it is true or ``timeout`` seconds passed; return its last value."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


class ServedApp:
    """An ASGI app served by ``webshop_gym.integrations.openenv.app.Listener`` on a free port, in a thread."""

    def __init__(self, app):
        import threading

        from webshop_gym.integrations.openenv.app import Listener

        self.app = app
        self.listener = Listener(app, "127.0.0.1", 0)
        self.thread = threading.Thread(target=self.listener.run, daemon=True)
        self.thread.start()
        wait_until(lambda: self.listener.server.started)
        self.url = f"http://127.0.0.1:{self.listener.port}"

    def stop(self) -> None:
        """Stop the server and wait for its thread."""
        self.listener.stop()
        self.thread.join(10)


class CoinPolicy:
    """Per episode, the oracle with probability ``p`` (a coin drawn from the episode's seed), else the random policy.

    Sampled runs whose samples of one goal differ (some solved, some not), reproducibly.
    """

    name = "coin"

    def __init__(self, shop, p: float = 0.5):
        from webshop_gym.agents.policies import OraclePolicy, RandomPolicy

        self.oracle, self.random, self.p = OraclePolicy(shop), RandomPolicy(), p
        self.playing = self.random

    def seed_episode(self, seed):
        import numpy as np

        self.random.seed_episode(seed)
        self.playing = self.oracle if np.random.default_rng(seed).random() < self.p else self.random

    def reset(self, info):
        self.oracle.reset(info)
        self.random.reset(info)

    def act(self, obs, info):
        return self.playing.act(obs, info)


def run_lines(path) -> list[dict]:
    """A run file's episode and step lines, without a served model's accounting (tokens, latency):
    what a local and a served run of the same scripted replies must write alike."""
    from webshop_gym.runs.run import EPISODE_ACCOUNTING, STEP_ACCOUNTING

    out = []
    for line in Path(path).read_text().splitlines():
        record = json.loads(line)
        if record["type"] not in ("episode", "step"):
            continue
        for key in (*EPISODE_ACCOUNTING, *STEP_ACCOUNTING):
            record.pop(key, None)
        for silent in record.get("turns_without_action", ()):
            for key in STEP_ACCOUNTING:
                silent.pop(key, None)
        out.append(record)
    return out


def run_episodes(path) -> dict[str, tuple[dict, list[dict]]]:
    """A run file's episodes: each one's episode line and its step lines (:func:`run_lines`)."""
    found: dict[str, tuple[dict, list[dict]]] = {}
    for record in run_lines(path):
        if record["type"] == "episode":
            found[record["episode"]] = (record, [])
        else:
            found[record["episode"]][1].append(record)
    return found


def readers_score_every_episode(tmp_path, expected: list[tuple[bool, float, int]]) -> None:
    """``replay`` of ``local.jsonl`` passes, and the run reader and index score every episode of
    ``local.jsonl`` and ``served.jsonl`` (none taken for a cut run): ``expected`` is each
    episode's (scored, reward, steps)."""
    from webshop_gym.cli.app import main
    from webshop_gym.runs.index import RunIndex
    from webshop_gym.runs.run import load_run

    assert main(["replay", str(Path(tmp_path) / "local.jsonl")]) == 0
    for name in ("local.jsonl", "served.jsonl"):
        run = load_run(Path(tmp_path) / name)
        assert [(e.scored, e.reward, e.steps) for e in run.episodes] == expected
        index = RunIndex(Path(tmp_path) / name)
        index.refresh()
        table = index.table()
        assert not table.unscored.any() and table.figures["episodes"] == len(expected), table.figures


def scripted_view(messages: list[dict]) -> tuple[str, int, list[str]]:
    """What a scripted chat model reads of its messages: the instruction's query (before its price
    clause), the replies so far and the admissible actions of the last page."""
    import re

    first = next(str(m["content"]) for m in messages if m["role"] == "user")
    found = re.search(r"Instruction: (.*)", first)
    query = found.group(1).split(", and price lower than")[0] if found else "product"
    last = str(messages[-1]["content"])
    admissible = last.split("Admissible actions:\n", 1)[1].splitlines() if "Admissible actions:\n" in last else []
    return query, sum(m["role"] == "assistant" for m in messages), admissible
