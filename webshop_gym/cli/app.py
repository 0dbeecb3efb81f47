"""The ``webshop-gym`` command.

Subcommands::

    webshop-gym demo                      play one scripted episode on the default shop
    webshop-gym data synth|info|compile|index|verify|goals|download ...
    webshop-gym serve --shop DIR          play the shop in a browser (needs webshop-gym[server])
    webshop-gym replay LOG                replay a trajectory log and check its rewards
    webshop-gym eval --policy rule ...    Score and SR of a policy over a split
    webshop-gym sft-data --policy oracle ... SFT-ready demonstrations (old name: demos)
    webshop-gym report RUN [RUN ...]      Score/SR with intervals, comparisons, failure tags, plots
    webshop-gym openenv                   serve WebShop as an OpenEnv environment (webshop-gym[openenv])
    webshop-gym protocols [show NAME]     evaluation protocols of published numbers (docs/protocols.md)

Every subcommand has ``--help``.  Feature modules contribute their subcommands through
``add_arguments(parser)`` / ``run(args)`` pairs and import heavy dependencies only when run.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shlex
import signal
import sys
import textwrap
import threading

from webshop_gym.cli import argtypes as types
from webshop_gym.error import Interrupted
from webshop_gym.utils import first_run

__all__ = ["DEBUG_ENV", "Terminated", "add_shop_arguments", "error_message", "main"]

DEBUG_ENV = "WEBSHOP_GYM_DEBUG"
SYNTH_BYTES_PER_PRODUCT = 2_200
"""JSON bytes ``data synth`` writes per product (2,120 measured at 100,000 products), for the disk check."""

_FEATURES = {
    # name: (module, help)
    "serve": ("webshop_gym.server.cli", "play the shop in a browser (Flask; pip install 'webshop-gym[server]')"),
    "eval": ("webshop_gym.cli.eval", "evaluate a policy over a split: Score, SR, steps, breakdown"),
    "sft-data": ("webshop_gym.cli.sft_data", "write SFT-ready demonstration transcripts"),
    "report": ("webshop_gym.cli.report", "evaluation report of runs (eval --out): Score and SR with CIs, paired comparison, plots"),
    "openenv": ("webshop_gym.cli.openenv", "serve WebShop as an OpenEnv environment (pip install 'webshop-gym[openenv]')"),
    "protocols": ("webshop_gym.cli.protocols", "list the evaluation protocols of published WebShop numbers, or show one's card"),
}


def add_shop_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--shop``, ``--goals``, ``--human-goals`` and ``--price-seed`` (as ``load_shop`` takes them)."""
    parser.add_argument("--shop", metavar="DIR", type=types.existing_dir,
                        help="shop directory in the reference format (default: the embedded shop)")
    parser.add_argument("--goals", metavar="FILE", type=types.existing_file,
                        help="frozen goal set (ours, or a reference goals.json with prices.json beside it)")
    parser.add_argument("--human-goals", action="store_true", help="human instructions instead of synthetic goals")
    parser.add_argument("--price-seed", type=types.seed, default=0, metavar="SEED",
                        help="seed of product prices and price caps (default 0 = the reference's seed-0 run)")


def _load(args):
    from webshop_gym.shop import load_shop

    path = getattr(args, "shop", None) or getattr(args, "dir", None)
    return load_shop(path, goals=args.goals, human_goals=args.human_goals, seed=args.price_seed)


# -- demo ------------------------------------------------------------------------------------


def _demo(args) -> int:
    from webshop_gym.agents.policies.rule import RulePolicy
    from webshop_gym.envs.env import WebShopEnv

    shop = _load(args)
    env = WebShopEnv(shop=shop, observation_mode=args.observation_mode, max_steps=args.max_steps)
    policy = RulePolicy()
    goal = args.goal if args.goal is not None else None
    obs, info = env.reset(seed=args.seed, options=None if goal is None else {"goal_index": goal})
    width = 100
    print(f"shop: {shop}")
    print(f"goal {info['goal_index']}: {info['instruction']}\n")
    print("observation:\n" + textwrap.indent(textwrap.shorten(obs, 600, placeholder=" ...") if args.observation_mode == "text" else obs, "  "))
    total = 0.0
    done = False
    while not done:
        action = policy.act(obs, info)
        obs, reward, terminated, truncated, info = env.step(action)
        done = terminated or truncated
        total = reward
        print(f"\naction: {action}")
        shown = textwrap.shorten(obs, 600, placeholder=" ...") if args.observation_mode == "text" else obs
        print("observation:\n" + textwrap.indent(textwrap.fill(shown, width) if args.observation_mode == "text" else shown, "  "))
    print(f"\nreward: {total}")
    if "reward_info" in info:
        print("breakdown: " + json.dumps(info["reward_info"]))
    return 0


# -- data ------------------------------------------------------------------------------------


def _data_synth(args) -> int:
    import shutil
    from pathlib import Path

    from webshop_gym.data.synth import generate_shop

    need = args.products * SYNTH_BYTES_PER_PRODUCT
    where = Path(args.out) if Path(args.out).is_dir() else Path(args.out).parent
    free = shutil.disk_usage(where).free
    if need > free:
        raise OSError(f"--products {args.products:,} needs about {need / 1e9:,.1f} GB in {where}, "
                      f"but only {free / 1e9:,.1f} GB are free")
    summary = generate_shop(args.out, args.products, seed=args.seed, progress=not args.quiet)
    print(json.dumps(summary, indent=1))
    return 0


def _shop_cache(args):
    """The compiled-catalog folder of ``args.dir`` (or of the embedded shop) in the cache (may not exist)."""
    from webshop_gym.data.catalog import catalog_key, check_num_products, find_shop_files
    from webshop_gym.utils.paths import cache_dir

    files = find_shop_files(args.dir or _default_dir())
    return cache_dir(create=False) / "catalogs" / catalog_key(files, check_num_products(args.num_products))


def _cache_roots() -> list:
    """Every folder of the cache that holds built folders: the compiled catalogs and external postings."""
    from webshop_gym.utils.paths import cache_dir

    return [cache_dir(create=False) / "catalogs", cache_dir(create=False) / "external-postings"]


def _build_search(engine, lucene: bool = False) -> None:
    """The bm25 backend's postings, stem table and ranges (no Java); with ``lucene`` also Pyserini's index."""
    if lucene and engine.index_arg is None:  # the pyserini backend reads it (a damaged one is rebuilt here)
        from webshop_gym.search import build_index

        build_index(engine.catalog, engine.index_path, progress=True)
    engine.prepare(build=True)


def _data_compile(args) -> int:
    from webshop_gym.search import INDEX_VERSION
    from webshop_gym.shop import load_shop
    from webshop_gym.utils.integrity import remove_damaged
    from webshop_gym.utils.memo import remove_damaged_memos
    from webshop_gym.utils.paths import remove_interrupted_builds

    path = args.dir or _default_dir()
    # Pyserini's index is built where asked, or where the cache held one (a damaged one is rebuilt)
    lucene = args.lucene or (_shop_cache(args) / f"index-v{INDEX_VERSION}").exists()
    # the repair that `data verify` advises: damaged folders and dead builds' leftovers go first
    for root in _cache_roots():
        for tmp in remove_interrupted_builds(root):
            print(f"removed {tmp} (left by an interrupted build)")
    for root in (_shop_cache(args), _cache_roots()[1]):
        for folder, problem in remove_damaged(root):
            print(f"removed {folder} (damaged: {problem})")
    for memo, problem in remove_damaged_memos(_memos([_shop_cache(args)])):
        print(f"removed {memo} (damaged: {problem})")
    sets = [dict(human_goals=human, seed=seed) for human in ([False, True] if args.human_goals else [False])
            for seed in (args.price_seed or [0])]
    sets += [dict(goals=goals) for goals in args.goals or []]
    shop = None
    for kwargs in sets:  # goals, prices, reward tables and the fingerprint's digest of each goal set
        shop = load_shop(path, num_products=args.num_products, progress=True, **kwargs)
        shop.goals.digest()
    shop.catalog.ensure_nouns(progress=True, complete=True)  # every title, so no process ever waits for spaCy
    if not args.no_index:
        _build_search(shop.engine, lucene=lucene)
    names = ", ".join(f"{'human' if k.get('human_goals') else 'synthetic'} goals (price seed {k['seed']})"
                      if "seed" in k else f"goals of {k['goals']}" for k in sets)
    print(f"compiled {len(shop.catalog)} products into {shop.catalog.folder}: catalog, title nouns, {names}"
          + ("" if args.no_index else ", search postings" + (" and Lucene index" if lucene else "")))
    return 0


def _memos(roots: list) -> list:
    """The memo files that ``data verify`` and ``data compile`` check: under ``roots``, and the cache-wide ones."""
    from webshop_gym.utils.memo import find_memos
    from webshop_gym.utils.paths import cache_dir

    top = [p for p in find_memos(cache_dir(create=False)) if p.parent == cache_dir(create=False)]
    return [*top, *(memo for root in roots for memo in find_memos(root))]


def _data_verify(args) -> int:
    from webshop_gym.utils.integrity import verify_tree
    from webshop_gym.utils.memo import memo_damage
    from webshop_gym.utils.paths import interrupted_builds

    roots = _cache_roots() if args.all else [_shop_cache(args)]
    results = [found for root in roots for found in verify_tree(root)]
    leftovers = [found for root in roots for found in interrupted_builds(root)]
    if not results and not leftovers:
        raise FileNotFoundError(f"nothing compiled in {roots[0]}: run `webshop-gym data compile` first")
    memos = [(memo, memo_damage(memo)) for memo in _memos(roots)]
    shipped = _shipped_results()
    results = [*results, *shipped]
    for folder, problem in [*results, *memos]:
        print(f"ok       {folder}" if problem is None else f"DAMAGED  {folder}: {problem}")
    for tmp, running in leftovers:
        print(f"BUILDING {tmp}: a build in progress" if running else f"STALE    {tmp}: left by an interrupted build")
    damaged = [folder for folder, problem in [*results, *memos] if problem is not None]
    stale = [tmp for tmp, running in leftovers if not running]
    memo_count = f" and {len(memos)} memo{'' if len(memos) == 1 else 's'}" if memos else ""
    summary = f"{len(results)} folders{memo_count} checked, {len(damaged)} damaged"
    if stale:
        summary += f", {len(stale)} left by interrupted builds"
    if any(problem is not None for _, problem in shipped):
        from webshop_gym.search.shipped import REINSTALL

        summary += (" (the package's own files are damaged: reinstall webshop-gym, "
                    f"`{REINSTALL}`)")
    if [folder for folder in damaged if folder not in {f for f, _ in shipped}] or stale:
        command = "webshop-gym data compile" + ("" if args.all or args.dir is None else f" {shlex.quote(args.dir)}")
        if not args.all and args.num_products:
            command += f" --num-products {args.num_products}"
        summary += (f" (to repair, run `{command}`" + (" for each shop" if args.all else "")
                    + " where the cache is writable: it removes them and rebuilds what it compiles, and a run "
                      "rebuilds any other folder it needs)")
    print(summary)
    return 1 if damaged else 0


def _shipped_results() -> list:
    """The package's shipped data folders, checked against the digests pinned in its code: ``(folder, problem)``."""
    from webshop_gym.protocols.idlists import id_list_damage, id_lists_folder
    from webshop_gym.search.shipped import shipped_damage, shipped_folder

    found = []
    for folder, damage in ((shipped_folder(), shipped_damage()), (id_lists_folder(), id_list_damage())):
        problem = None
        if damage:
            problem = "; ".join(f"{path.name} {what}" for path, what in damage[:3])
            problem += f" (and {len(damage) - 3} more)" if len(damage) > 3 else ""
            problem += " (shipped with the package)"
        found.append((folder, problem))
    return found


def _data_index(args) -> int:
    from webshop_gym.data.catalog import load_catalog
    from webshop_gym.search import BM25Search

    catalog = load_catalog(args.dir or _default_dir(), num_products=args.num_products)
    engine = BM25Search(catalog)
    _build_search(engine, lucene=args.lucene)
    ranges = f", ranges by product type: {engine.ranges_path}" if engine.ranges() is not None else ""
    lucene = f"; Lucene index: {engine.index_path}" if args.lucene else ""
    print(f"index of {len(catalog)} products: {engine.postings_path}{ranges}{lucene}")
    return 0


def _default_dir() -> str:
    from webshop_gym.utils.paths import default_shop_dir

    return str(default_shop_dir())


def _data_info(args) -> int:
    from collections import Counter

    from webshop_gym.data.catalog import load_catalog
    from webshop_gym.data.goals import SPLITS, build_goals

    catalog = load_catalog(args.dir or _default_dir())
    counts = catalog.meta["counts"]
    categories = Counter(catalog.category_names[c] for c in catalog.category)
    option_names = Counter(catalog.group_name[g] for g in range(len(catalog.group_name)))
    lines = [
        f"shop: {args.dir or _default_dir()}",
        f"products: {counts['products']} (records {counts['records']}, skipped {counts['skipped']}, duplicate asins {counts['duplicates']})",
        "categories: " + ", ".join(f"{k} {v}" for k, v in sorted(categories.items())),
        f"product types (queries): {len(catalog.query_names)}",
        f"products with options: {sum(1 for r in range(len(catalog)) if catalog.option_groups.length(r))}",
        "option names: " + ", ".join(f"{k} {v}" for k, v in option_names.most_common(12)),
        f"distinct attributes: {len(catalog.attribute_names)}",
    ]
    for human in (False, True):
        goals = build_goals(catalog, human_goals=human, seed=0)
        splits = ", ".join(f"{name} {len(goals.split_range(name))}" for name in SPLITS)
        lines.append(f"{'human' if human else 'synthetic'} goals: {len(goals)} ({splits})")
    shop = _load(args)
    fingerprint = shop.fingerprint()
    lines.append("fingerprint (--human-goals/--goals/--price-seed select the goal set):")
    lines.extend(f"  {key}: {json.dumps(value) if isinstance(value, dict) else value}" for key, value in fingerprint.items())
    print("\n".join(lines))
    return 0


def _data_download(args) -> int:
    from webshop_gym.data.download import download_release

    out = args.out or f"webshop-{args.release}"
    report = download_release(args.release, out, args.mirror, progress=not args.quiet, retries=args.retries,
                              timeout=args.timeout)
    if report.already:
        print(f"{report.folder} already holds the verified {report.release} release ({len(report.files)} files)")
    else:
        print(f"downloaded the {report.release} release into {report.folder}: {len(report.files)} files, "
              f"{report.bytes:,} bytes from {report.source}, each verified (next: webshop-gym data compile "
              f"{shlex.quote(str(report.folder))})")
    return 0


def _data_goals(args) -> int:
    from webshop_gym.shop import load_shop

    shop = load_shop(args.dir or None, human_goals=args.human_goals, seed=args.price_seed)
    shop.goals.save(args.out, shop.catalog)
    print(f"wrote {len(shop.goals)} {shop.goals.kind} goals to {args.out}")
    return 0


# -- replay ----------------------------------------------------------------------------------


def _replay(args) -> int:
    from webshop_gym.cli.replay import replay_command

    return replay_command(args)


# -- parser ------------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (``webshop-gym CMD: error: ...``), without the usage block."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("webshop-gym")
    except PackageNotFoundError:  # pragma: no cover - a source tree without an install
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of ``webshop-gym``."""
    parser = _Parser(
        prog="webshop-gym",
        description="The WebShop benchmark as a Gymnasium environment: play, evaluate, serve, prepare data.",
        epilog="Errors are reported in one line (exit status 2 for bad input); --debug shows the traceback.",
    )
    parser.add_argument("--debug", action="store_true",
                        help=f"show the full traceback of an error (also: ${DEBUG_ENV}=1)")
    parser.add_argument("--version", action="version", version=f"webshop-gym {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    demo = sub.add_parser("demo", help="play one scripted episode on the default shop and print it",
                          description="Play one episode with the rule policy and print the instruction, every action, observation and the reward.")
    add_shop_arguments(demo)
    demo.add_argument("--goal", type=types.at_most(types.non_negative_int, types.MAX_COUNT), metavar="INDEX",
                      help=f"goal index (default: one drawn with --seed; at most {types.MAX_COUNT:,})")
    demo.add_argument("--seed", type=types.seed, default=0, metavar="SEED", help="episode seed (default 0)")
    demo.add_argument("--max-steps", type=types.at_most(types.positive_int, types.MAX_STEPS), default=15, metavar="N",
                      help=f"step cap (default 15; at most {types.MAX_STEPS:,})")
    demo.add_argument("--observation-mode", default="text", choices=["text", "text_rich", "html", "url"])
    demo.set_defaults(func=_demo)

    data = sub.add_parser("data", help="generate, inspect, compile and index shops",
                          description="Work with shop data in the reference's three-file JSON format.")
    data_sub = data.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    synth = data_sub.add_parser("synth", help="generate a synthetic shop",
                                description="Write items_shuffle.json, items_ins_v2.json and items_human_ins.json. "
                                            "The embedded default shop is `--products 1000 --seed 0 --out data`.")
    synth.add_argument("--products", type=types.at_most(types.positive_int, types.MAX_PRODUCTS), required=True,
                       metavar="N", help=f"number of products (at most {types.MAX_PRODUCTS:,}, about "
                                         f"{SYNTH_BYTES_PER_PRODUCT:,} bytes of JSON each; the free disk space is "
                                         "checked first)")
    synth.add_argument("--seed", type=types.seed, default=0, metavar="SEED", help="generator seed (default 0)")
    synth.add_argument("--out", required=True, metavar="DIR", type=types.output_dir,
                       help="output directory (missing folders are created below the working directory)")
    synth.add_argument("--quiet", action="store_true", help="no progress bar")
    synth.set_defaults(func=_data_synth)
    for name, func, text in (
        ("info", _data_info, "print a summary: products, categories, option names, goals per split, fingerprint"),
        ("compile", _data_compile, "compile (and cache) everything a run needs: catalog, title nouns, goals, "
                                   "prices, reward tables, search postings (then the cache works read-only)"),
        ("index", _data_index, "build (and cache) the search postings without Java (grouped by product type too "
                               "for shops of at least 20,000 products)"),
        ("verify", _data_verify, "check the checksums of every compiled cache folder of a shop (exit status 1 "
                                 "when one is damaged)"),
    ):
        cmd = data_sub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        cmd.add_argument("dir", nargs="?", metavar="DIR", type=types.existing_dir,
                         help="shop directory (default: the embedded shop)")
        if name != "info":
            cmd.add_argument("--num-products", type=types.at_most(types.positive_int, types.MAX_COUNT), metavar="N",
                             help=f"keep only the first N product records (at most {types.MAX_COUNT:,})")
        if name == "compile":
            cmd.add_argument("--human-goals", action="store_true", help="also the human goal set")
            cmd.add_argument("--price-seed", type=types.seed, action="append", metavar="SEED",
                             help="prices and caps of this seed (repeat for several; default 0)")
            cmd.add_argument("--goals", metavar="FILE", type=types.existing_file, action="append",
                             help="also a frozen goal set (repeatable)")
            cmd.add_argument("--no-index", action="store_true", help="skip the search postings")
        if name in ("compile", "index"):
            cmd.add_argument("--lucene", action="store_true",
                             help="also build Pyserini's Lucene index (for the pyserini backend, the oracle; needs "
                                  "Pyserini and the [lucene] extra); compile rebuilds one the cache already holds")
        if name == "verify":
            cmd.add_argument("--all", action="store_true", help="every compiled folder in the cache, of every shop")
        if name == "info":
            cmd.add_argument("--goals", metavar="FILE", type=types.existing_file, help="frozen goal set to fingerprint")
            cmd.add_argument("--human-goals", action="store_true", help="fingerprint the human goal set")
            cmd.add_argument("--price-seed", type=types.seed, default=0, metavar="SEED",
                             help="seed of prices and caps (default 0)")
        cmd.set_defaults(func=func)
    download = data_sub.add_parser(
        "download", help="fetch the reference's published shop files (small: 1,000 products; full: the whole "
                         "release), resumable and verified",
        description="Fetch the reference's published files (the Google-Drive files its setup.sh names, or the same "
                    "names under --mirror URL) into a new shop folder.  An interrupted download resumes when the "
                    "same command is run again; every file is checked against the published file's SHA-256; the "
                    "folder appears only when every file is verified.  Errors are one line, exit status 2.")
    download.add_argument("release", choices=["small", "full"],
                          help="small: items_shuffle_1000.json, items_ins_v2_1000.json, items_human_ins.json "
                               "(9.8 MB); full: items_shuffle.json, items_ins_v2.json, items_human_ins.json (5.7 GB)")
    download.add_argument("--out", metavar="DIR", type=types.new_dir,
                          help="the shop folder to create (default: webshop-small or webshop-full); it must not "
                               "exist, be empty, or hold this release already")
    download.add_argument("--mirror", metavar="URL", type=types.http_url,
                          help="a base http(s) URL serving the same file names (an offline site's copy) "
                               "instead of Google Drive")
    download.add_argument("--retries", type=types.at_most(types.non_negative_int, types.MAX_RETRIES), default=3,
                          metavar="N", help=f"reconnections (each resuming the file) after a lost connection (default 3; at most {types.MAX_RETRIES})")
    download.add_argument("--timeout", type=types.timeout, default=60.0, metavar="SECONDS",
                          help="seconds to wait for the server between bytes (default 60)")
    download.add_argument("--quiet", action="store_true", help="no progress bar")
    download.set_defaults(func=_data_download)
    goals = data_sub.add_parser("goals", help="export a frozen goal set (goals, texts, caps and prices) to JSON",
                                description="Freeze a shop's goal set so that every run uses the same goals and prices.")
    goals.add_argument("dir", nargs="?", metavar="DIR", type=types.existing_dir,
                       help="shop directory (default: the embedded shop)")
    goals.add_argument("--out", required=True, metavar="FILE", type=types.output_file,
                       help="output JSON file (missing folders are created below the working directory)")
    goals.add_argument("--human-goals", action="store_true", help="human instructions instead of synthetic goals")
    goals.add_argument("--price-seed", type=types.seed, default=0, metavar="SEED",
                       help="seed of prices and caps (default 0)")
    goals.set_defaults(func=_data_goals)

    replay = sub.add_parser("replay", help="replay a trajectory log in WebShopEnv and check its rewards",
                            description="Replay every episode of a JSONL trajectory log (written by the env's "
                                        "recorder or the play server) and print logged vs replayed rewards. "
                                        "Exit status 1 on any mismatch.")
    replay.add_argument("log", metavar="LOG", type=types.existing_file, help="the JSONL log")
    replay.add_argument("--shop", metavar="DIR", type=types.existing_dir,
                        help="shop directory, if it moved since the log was written")
    replay.set_defaults(func=_replay)

    for name, (module, text) in _FEATURES.items():
        cmd = sub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".",
                             aliases=_ALIASES.get(name, []))
        try:
            feature = importlib.import_module(module)
        except ImportError as exc:
            cmd.set_defaults(func=lambda args, exc=exc, name=name: _missing(name, exc))
            continue
        feature.add_arguments(cmd)
        cmd.set_defaults(func=feature.run)
    return parser


_ALIASES = {"sft-data": ["demos"]}
"""Old command names that keep working (scripts use them)."""


def _missing(name: str, exc: Exception) -> int:
    print(f"webshop-gym {name}: error: not available: {exc}", file=sys.stderr)
    return 2


def _one_line(text: str) -> str:
    lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
    return lines[0] if len(lines) == 1 else " / ".join(lines[:3]) + (" ..." if len(lines) > 3 else "")


def error_message(exc: BaseException) -> tuple[int, str]:
    """Return (exit status, one-line message) for an exception that ended a command.

    The package's own errors and the operating system's (a missing, unreadable or unwritable
    file) are the user's to fix: status 2 and their message.  Anything else is a bug of ours:
    status 1, the exception's type and message, and how to see the traceback.
    """
    from webshop_gym.error import Error

    if isinstance(exc, (Error, OSError)):
        return 2, _one_line(str(exc) or type(exc).__name__)
    return 1, (f"internal error: {type(exc).__name__}: {_one_line(str(exc))} "
               f"(rerun with --debug for the traceback, and please report it)")


def main(argv: list[str] | None = None) -> int:
    """Run the command line.

    Bad arguments are rejected by the parser (one line, exit status 2).  While a command runs,
    the package's errors and file-system errors become one line ``webshop-gym CMD: error: ...``
    with exit status 2, Ctrl-C exits with 130, SIGTERM with 143 and SIGHUP with 129 (each after the
    command cleaned up its partial output), and only ``--debug`` shows a traceback.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    debug = args.debug or os.environ.get(DEBUG_ENV, "") not in ("", "0")
    name = " ".join(x for x in (args.command, getattr(args, "data_command", None)) if x)
    previous = _catch_termination()
    if hasattr(args, "shop") and not getattr(args, "quiet", False):  # a command that plays a shop: its kernels
        first_run.announce()
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt as exc:
        if debug:
            raise
        signum = getattr(exc, "signum", None)
        terminated = signum is not None and signum != signal.SIGINT
        print(f"webshop-gym {name}: {'terminated' if terminated else 'interrupted'}", file=sys.stderr)
        return 128 + signum if terminated else 130
    except BrokenPipeError:  # `webshop-gym ... | head`: the reader left; not an error
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps Python's exit flush quiet
        except OSError:
            pass
        return 0
    except Exception as exc:
        if debug:
            raise
        status, message = error_message(exc)
        print(f"webshop-gym {name}: error: {message}", file=sys.stderr)
        return status
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


class Terminated(Interrupted):
    """SIGTERM or SIGHUP arrived: raised like Ctrl-C, so every command cleans up on the way out.

    Attributes:
        signum: the signal's number (the exit status is 128 + signum: 143 for SIGTERM).
    """


def _on_termination(signum, frame):
    raise Terminated(signum)


def _catch_termination() -> dict:
    """Turn SIGTERM and SIGHUP into :class:`Terminated` while a command runs; return the handlers to restore."""
    previous: dict = {}
    if threading.current_thread() is not threading.main_thread():
        return previous
    for name in ("SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is None:  # pragma: no cover - Windows has no SIGHUP
            continue
        try:
            previous[signum] = signal.signal(signum, _on_termination)
        except (ValueError, OSError):  # pragma: no cover - no signals here
            pass
    return previous


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


