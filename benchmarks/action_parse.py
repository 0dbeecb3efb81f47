"""Adversarial actions: every parser of an action string, at the action bound, against a 50 ms budget.

An action reaches the package as text from a model or a client, up to
:data:`~webshop_gym.core.actions.MAX_ACTION_LENGTH` (100,000) characters.  Regular expressions that
backtrack can take quadratic time on such text (issue 46: a 100,000-character action took a 24 s
step, and an answer of ``<`` and white space over 15 s to parse at 10,000 characters).  This
benchmark times each entry point on shapes built to provoke that: nested and unbalanced brackets,
long runs of one character, long white space, tag soups, many actions, fences.

Entry points:

* ``core``: :func:`webshop_gym.core.actions.parse_action`, the env's own split (every front end);
* ``tokens``: :func:`webshop_gym.search.analysis.tokens`, the search analyser's tokenizer;
* ``parse:<format>``: :func:`webshop_gym.agents.parse_detailed` of a model answer in each prompt
  format (what ``eval`` and the TRL/OpenEnv helpers run on a model's text), and ``closest``
  (``closest=True``: the closest admissible action);
* ``step``: one :class:`webshop_gym.WebShopEnv` step of the shape as it is and as ``search[shape]``
  on the start page, and as ``click[shape]`` on a results page (the engine's whole step: parse,
  search, render; the slowest of the three), each cold: the search cache and the analyser's memo
  of words emptied first, so that every word is one the process has never seen.

Each case runs in a worker process; a case over ``--cap-s`` is stopped and reported as over the
cap (so old code with a quadratic path still finishes).  Figures: the median of ``--repeats``
calls, milliseconds.  ``--check`` exits 1 when any entry point is over the budget.

    python benchmarks/action_parse.py                 # n = 100,000: the table, results/action_parse.json
    python benchmarks/action_parse.py --length 10000  # smaller: for old code
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import save, table  # noqa: E402

BUDGET_MS = 50.0
PARSERS = ("core", "tokens", "parse:think-answer", "parse:verl-agent", "parse:react", "parse:plain", "closest")
ENTRIES = (*PARSERS, "step")
ADMISSIBLE = ["search[<your query>]", "click[back to search]", "click[next >]", "click[b0abc12345]",
              "click[buy now]", "click[large]"]


def shapes(n: int) -> dict[str, str]:
    """Adversarial texts of ``n`` characters (about: repeated units are cut to ``n``)."""
    def fill(unit: str, head: str = "", tail: str = "") -> str:
        body = n - len(head) - len(tail)
        return head + (unit * (body // len(unit) + 1))[:body] + tail

    return {
        "[ run": fill("["), "] run": fill("]"), "nested [[..]]": "[" * (n // 2) + "]" * (n - n // 2),
        "[] pairs": fill("[]"), "][ pairs": fill("]["), "search[ + [ run": fill("[", "search[", "]"),
        "click[ + ] run": fill("]", "click["), "[ run + newline": fill("[", tail="\n]"),
        "_ run": fill("_"), "search[ + _ run": fill("_", "search[", "]"), "a_ run": fill("a_"),
        "space run": fill(" ", "a", "b"), "search + space run": fill(" ", "search"), "newline run": fill("\n"),
        "< + space run": fill(" ", "<", "x"), "</ + space run": fill(" ", "</", "x"), "< space pairs": fill("< "),
        "```+ space run": fill(" ", "```", "x"), "``` run": fill("`"), "a run": fill("a"),
        "</answer> run": fill("</answer>"), "<answer> run": fill("<answer>"), "<answer></think> soup": fill("<answer></think>"),
        "action: lines": fill("Action: \n"), "search[a] run": fill("search[a] "), "click[ run": fill("click["),
        "mixed brackets": fill("[a]b[[c]]]["), "query words": fill("gluten free snack bars 12 pack red "),
        "numbered words": " ".join(f"w{i}" for i in range(n // 7))[:n], "think-answer padding": fill(" ", "<think>", "</think><answer>click[buy now]</answer>"),
        "accented words": " ".join(f"caf\u00e9{i}" for i in range(n // 10))[:n],
    }


def _runner(entry: str, n: int, shop: str | None):
    if entry == "core":
        from webshop_gym.core.actions import parse_action
        return parse_action
    if entry == "tokens":
        from webshop_gym.search.analysis import tokens
        return tokens
    if entry.startswith("parse:") or entry == "closest":
        from webshop_gym.agents import parse_detailed
        fmt = entry.split(":", 1)[1] if entry != "closest" else "plain"
        return lambda text: parse_detailed(text, ADMISSIBLE, fmt, closest=entry == "closest")
    from webshop_gym import WebShopEnv, load_shop
    from webshop_gym.core.actions import MAX_ACTION_LENGTH
    from webshop_gym.search import analysis

    loaded = load_shop(shop) if shop else load_shop()
    env = WebShopEnv(shop=loaded)
    env.reset(seed=0, options={"goal_index": 0})

    def step(text: str):
        # the shape as it is and as a search on the start page (the one with a search bar), and as
        # a click on a results page; each from a fresh reset, so every call does the same work
        for action, results in ((text, False), (f"search[{text[: MAX_ACTION_LENGTH - 8]}]", False),
                                (f"click[{text[: MAX_ACTION_LENGTH - 7]}]", True)):
            env.reset(seed=0, options={"goal_index": 0})
            if results:
                env.step("search[shoes]")
            loaded.engine.cache.clear()  # cold: a repeated query would be answered from the cache,
            analysis._MEMO.clear()  # and the words of a repeated text would be remembered
            t0 = time.perf_counter()
            env.step(action)
            step.spent = max(step.spent, time.perf_counter() - t0)
    step.spent = 0.0
    return step


def _worker(entry: str, n: int, repeats: int, shop: str | None, names: list[str], out) -> None:
    run = _runner(entry, n, shop)
    texts = shapes(n)
    run(texts["a run"][:1000])  # warm: imports and JIT
    if entry == "step":
        run("caf\u00e9 " + "x" * 300)  # and the JVM: non-ASCII text and long tokens are analysed there
    for name in names:
        times = []
        for _ in range(repeats):
            if entry == "step":
                run.spent = 0.0
                run(texts[name])
                times.append(run.spent)
            else:
                t0 = time.perf_counter()
                run(texts[name])
                times.append(time.perf_counter() - t0)
        out.send((name, 1000 * statistics.median(times)))
    out.send(None)


def measure(entry: str, n: int, repeats: int, cap_s: float, shop: str | None) -> dict[str, float | None]:
    """``{shape: median ms}`` of one entry point; ``None`` for a case stopped at ``cap_s``."""
    names = list(shapes(n))
    found: dict[str, float | None] = {}
    ctx = mp.get_context("spawn")
    while len(found) < len(names):
        left = [s for s in names if s not in found]
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_worker, args=(entry, n, repeats, shop, left, send), daemon=True)
        proc.start()
        send.close()
        limit = cap_s * repeats + (120 if not found else 0)  # the first case also pays the start-up
        while True:
            if not recv.poll(limit):
                proc.kill()
                proc.join()
                found[left[0]] = None
                break
            item = recv.recv()
            if item is None:
                proc.join()
                break
            found[item[0]] = item[1]
            left.pop(0)
            limit = cap_s * repeats
        recv.close()
    return found


def main(argv: list[str] | None = None) -> int:
    from webshop_gym.core.actions import MAX_ACTION_LENGTH

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--length", type=int, default=MAX_ACTION_LENGTH, help="characters per action (default the bound)")
    parser.add_argument("--repeats", type=int, default=3, help="calls per case; the median is reported (default 3)")
    parser.add_argument("--cap-s", type=float, default=10.0, help="stop a case after this many seconds (default 10)")
    parser.add_argument("--entries", nargs="+", default=list(ENTRIES), choices=ENTRIES, help="entry points to time")
    parser.add_argument("--shop", default=None, help="shop folder for the step entry (default the embedded shop)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a case is over the 50 ms budget")
    parser.add_argument("--out", default=None, help="JSON path (default benchmarks/results/action_parse.json)")
    args = parser.parse_args(argv)

    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
    results = {entry: measure(entry, args.length, args.repeats, args.cap_s, args.shop) for entry in args.entries}
    rows = []
    for name in shapes(args.length):
        row = {"shape": name}
        for entry in args.entries:
            ms = results[entry][name]
            row[entry] = f"> {args.cap_s * 1000:,.0f}" if ms is None else ms
        rows.append(row)
    worst = {e: (None if any(v is None for v in results[e].values()) else max(results[e].values())) for e in args.entries}
    rows.append({"shape": "worst", **{e: (f"> {args.cap_s * 1000:,.0f}" if w is None else w) for e, w in worst.items()}})
    print(f"Adversarial actions of {args.length:,} characters: median ms of {args.repeats} calls "
          f"(load average {' '.join(load)}; budget {BUDGET_MS:.0f} ms; step: the slowest of its three, cold)")
    print(table(rows, ["shape", *args.entries]))
    over = [e for e in args.entries if worst[e] is None or worst[e] > BUDGET_MS]
    print("over the budget: " + (", ".join(over) if over else "none"))
    payload = {"length": args.length, "repeats": args.repeats, "cap_s": args.cap_s, "budget_ms": BUDGET_MS,
               "load_average": load, "median_ms": results, "worst_ms": worst, "over_budget": over}
    path = save("action_parse", payload, Path(args.out) if args.out else None)
    print(f"wrote {path}")
    return 1 if args.check and over else 0


if __name__ == "__main__":
    sys.exit(main())
