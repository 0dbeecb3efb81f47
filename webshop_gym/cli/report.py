"""``webshop-gym report``: an evaluation report of runs, built by :func:`webshop_gym.reporting.report.build_report`."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from webshop_gym.reporting.report import (
    RESAMPLES,
    build_report,
    to_html,
    to_latex,
    to_markdown,
    write_episodes,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``webshop-gym report``."""
    from webshop_gym.cli import argtypes as types

    parser.add_argument("runs", nargs="+", metavar="RUN", type=types.existing_file,
                        help="run files written by `webshop-gym eval --out` (the first is the baseline of comparisons)")
    parser.add_argument("--out", metavar="FILE", type=types.output_file,
                        help="write the report here (default: Markdown tables on stdout, no plots); Markdown "
                             "plots go to FILE's stem + '_files/'")
    parser.add_argument("--format", choices=["html", "md", "latex"],
                        help="html (self-contained), md, or latex (the published-table rows, grouped by protocol, as "
                             "a booktabs tabular; no plots) (default: from --out's suffix, .md -> md, .tex -> latex, "
                             "else html; without --out md; html without --out only into a redirected stdout)")
    parser.add_argument("--allow-incomplete", action="store_true",
                        help="with --format latex: print the rows of runs that did not score their whole plan (cut "
                             "short, a shard missing, episodes errored), each marked with a footnote saying why; "
                             "without it such runs are refused (a published row must be the protocol's whole plan). "
                             "Markdown and HTML always show them, marked, with scored / planned")
    parser.add_argument("--bootstrap", type=_resamples, default=RESAMPLES, metavar="N",
                        help=f"bootstrap resamples of each paired difference's interval (default {RESAMPLES:,})")
    parser.add_argument("--seed", type=types.seed, default=0, metavar="SEED", help="seed of the bootstrap (default 0)")
    parser.add_argument("--title", default=None, metavar="TEXT", help="the report's title")
    parser.add_argument("--no-plots", action="store_true", help="tables only (no matplotlib needed)")
    parser.add_argument("--merged", metavar="FILE", type=types.output_file,
                        help="also write the shard files given (eval --shard i/n, all n of one evaluation) as one "
                             "run file, for replay and serve --runs")
    parser.add_argument("--price-input", metavar="USD", type=types.price,
                        help="price per million prompt tokens: served models' runs show their cost")
    parser.add_argument("--price-output", metavar="USD", type=types.price,
                        help="price per million completion tokens")
    parser.add_argument("--viewer-url", default=None, metavar="URL",
                        help="link failure examples to this `webshop-gym serve --runs` (e.g. http://127.0.0.1:3000; "
                             "default: no links, or with --bundle relative links into the bundle: a report to share "
                             "holds no server address unless you give one)")
    parser.add_argument("--csv", metavar="FILE", type=types.output_file,
                        help="also write every run's episodes as CSV (eval --json --episodes' fields, then the "
                             "viewer's columns; a first column names the run)")
    parser.add_argument("--jsonl", metavar="FILE", type=types.output_file,
                        help="also write every run's episodes as JSON lines (idem)")
    parser.add_argument("--bundle", metavar="DIR", type=_bundle_target,
                        help="write the runs as a static folder to share: the viewer's pages of each run, every "
                             "episode's diagnosis and pages, every goal, and with several runs the list of runs and "
                             "each run's comparison with the first; relative links, no server or network needed "
                             "(open DIR/index.html); DIR must be new or empty (see --force); DIR.zip writes the folder as "
                             "one zip file. Nothing goes to stdout unless --out is given too (then the report and the "
                             "pages link to each other, and its examples into the pages)")
    parser.add_argument("--force", action="store_true",
                        help="with --bundle: write into a non-empty DIR (files of the same names are replaced; a "
                             "link inside DIR is replaced, never followed)")
    parser.add_argument("--keep-paths", action="store_true",
                        help="keep machine paths and server addresses (the run line's files and folders, the model "
                             "server's URL) in the report, its exports and the bundle: for your own use. By default "
                             "what you share shows a path by its last part and an address as '(server address)'")


def _resamples(text: str) -> int:
    from webshop_gym.cli import argtypes as types

    value = types.positive_int(text)
    if value > 1_000_000:
        raise argparse.ArgumentTypeError(f"must be at most 1,000,000, got {text!r}")
    return value


def _bundle(args: argparse.Namespace) -> dict:
    """``--bundle DIR``: the runs' viewer pages as a static folder (:mod:`webshop_gym.server.bundle`)."""
    from webshop_gym.error import DependencyNotInstalled

    try:  # Flask (the server extra) is loaded for --bundle only
        from webshop_gym.server.bundle import write_bundle
    except ImportError as exc:
        raise DependencyNotInstalled(f"--bundle renders the run viewer's pages and needs Flask ({exc}); install it "
                                     "with: pip install 'webshop-gym[server]'") from exc
    report = None
    if args.out:  # the report beside the pages: the list of runs and each run page link to it
        report = Path(os.path.relpath(Path(args.out).resolve(), _bundle_root(args.bundle).resolve())).as_posix()
    return write_bundle(args.runs, args.bundle, force=args.force, keep_paths=args.keep_paths, report=report)


def _bundle_root(bundle: str) -> Path:
    """The bundle's folder: ``DIR``, or for ``--bundle x.zip`` the folder ``x`` it holds, as if unzipped in place."""
    path = Path(bundle)
    return path.with_suffix("") if path.suffix.lower() == ".zip" else path


def _bundle_target(text: str) -> str:
    """``--bundle``'s value: a folder (:func:`~webshop_gym.cli.argtypes.output_dir`), or a ``.zip`` file to write."""
    from webshop_gym.cli import argtypes as types

    if not text.lower().endswith(".zip"):
        return types.output_dir(text)
    path = Path(text).expanduser()
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder, expected a .zip file or a folder without .zip")
    types.output_dir(str(path.parent) if str(path.parent) else ".")  # the folder it goes into: writable
    return str(path)


def run(args: argparse.Namespace) -> int:
    """Run ``webshop-gym report``."""
    if args.force and not args.bundle:
        from webshop_gym.error import Error

        raise Error("--force goes with --bundle DIR (it lets the bundle write into a non-empty folder)")
    if args.bundle and not (args.out or args.csv or args.jsonl or args.merged):
        _bundle(args)
        return 0
    if args.format is not None:
        fmt = args.format
    elif args.out:
        suffix = Path(args.out).suffix.lower()
        fmt = "md" if suffix in (".md", ".markdown") else "latex" if suffix == ".tex" else "html"
    else:  # the terminal gets readable tables, never a page of HTML with images inlined
        fmt = "md"
    if fmt == "html" and not args.out and sys.stdout.isatty():
        from webshop_gym.error import Error

        raise Error("an HTML report goes to a file: pass --out FILE.html (or redirect stdout)")
    if args.merged:
        from webshop_gym.error import Error

        if Path(args.merged).resolve() in {Path(r).resolve() for r in args.runs}:
            raise Error(f"--merged {args.merged} is one of the runs read: choose another file")
    if args.allow_incomplete and fmt != "latex":
        from webshop_gym.error import Error

        raise Error("--allow-incomplete goes with --format latex (Markdown and HTML reports always show incomplete "
                    "runs, marked, with scored / planned)")
    report = build_report(args.runs, resamples=args.bootstrap, seed=args.seed, title=args.title,
                          price_input=args.price_input, price_output=args.price_output, viewer=args.viewer_url or None,
                          keep_paths=args.keep_paths)
    text = to_latex(report, allow_incomplete=args.allow_incomplete) if fmt == "latex" else None  # refused: nothing written
    if args.bundle:  # after every refusal: a refused report writes no bundle either
        bundled = _bundle(args)
        if not args.viewer_url:  # the report's examples link into the bundle, relatively
            where = Path(os.path.relpath(_bundle_root(args.bundle).resolve(),
                                         Path(args.out or ".").resolve().parent)).as_posix()
            report.bundle = {label: ("" if where == "." else where + "/") + folder
                             for label, folder in bundled["folders"].items()}
            report.bundle_index = ("" if where == "." else where + "/") + "index.html"
    if args.merged:
        from webshop_gym.runs.shards import merge_shards

        merge_shards(args.runs, args.merged)
        print(f"webshop-gym report: wrote the merged run {args.merged}", file=sys.stderr)
    if args.csv or args.jsonl:
        write_episodes(report, csv_path=args.csv, jsonl_path=args.jsonl, keep_paths=args.keep_paths)
    plots: dict[str, bytes] | None = None
    if not args.no_plots and fmt != "latex" and (fmt == "html" or args.out):
        from webshop_gym.reporting.plots import draw_all

        plots = draw_all(report.rows)
    written: list[str] = []
    if fmt == "html":
        text = to_html(report, plots)
    elif fmt == "latex":
        pass  # made above, before anything was written
    else:
        images: dict[str, str] = {}
        if plots:
            out = Path(args.out)
            folder = out.with_name(out.stem + "_files")
            if folder.exists() and not folder.is_dir():
                from webshop_gym.error import Error

                raise Error(f"{folder} is a file; the Markdown report's plots go to that folder")
            folder.mkdir(exist_ok=True)
            for name, png in plots.items():
                (folder / f"{name}.png").write_bytes(png)
                images[name] = f"{folder.name}/{name}.png"
            written.append(f"{len(plots)} plots in {folder}{os.sep}")
        text = to_markdown(report, images)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        extra = f" and {written[0]}" if written else ""
        print(f"webshop-gym report: wrote {args.out}{extra} ({len(report.rows)} run(s), {fmt})", file=sys.stderr)
    else:
        sys.stdout.write(text)
        if fmt == "md" and not args.no_plots:
            print("webshop-gym report: Markdown on stdout has no plots (pass --out FILE.md to write them)",
                  file=sys.stderr)
    return 0
