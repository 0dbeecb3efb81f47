"""Runs you can share: ``webshop-gym report RUN [RUN ...] --bundle DIR`` writes the viewer's pages as static files.

The bundle is the run viewer itself, saved: the app of ``serve --runs`` is built over the runs
(:func:`webshop_gym.server.create_app` with ``RUNS``), every page of them is fetched from it
with Flask's test client (each run page, every goal's page, every episode's diagnosis and stepper
at every step, the env's pages the viewer re-creates by replaying the logged actions, long model
answers, the exports, the arrow-keys script; with several runs, the list of runs and the
comparison of each run with the first, goal by goal and side by side), and each page's links are
rewritten to relative links between the files (a link to a page that is not in the bundle, such
as a sort order or a filter, becomes plain text; forms are dropped).  No second renderer: the
pages are the viewer's templates and replay.  The stylesheets the server inlines in every page
are written once (``runs.css``, ``shop.css``) and linked, so the bundle's size grows with the
episodes' steps, not with the CSS.  Shards of one evaluation are read as one run, as ``report``
reads them (:func:`webshop_gym.reporting.loading.read_runs`).

Layout of ``DIR`` for one run::

    index.html                the run page (all episodes; index-2.html, ... past 1,000; index-goals-2.html, ...:
                              a sampled run's later goal pages; index-flipping.html, ...: its goal filters)
    runs.css, shop.css        the viewer's and the env's stylesheets (inlined by the server, linked here)
    steps.js                  the episode page's arrow-keys script
    episodes.csv, .jsonl      the exports
    goals/<g>/play-<k>.html   goal g's page at its k-th play
    episodes/<i>/step-<k>.html    episode i before action k + 1 (step-0: its diagnosis, first page)
    episodes/<i>/page-<k>.html    the env's page after k actions, as the stepper frames it
    episodes/<i>/...              the env's done page, whole model answers and long prompt messages (.txt)

For several runs, ``index.html`` is the list of runs with their comparisons, each run's files are
under ``runs/<name>/`` (laid out as above) and the comparison of run ``b`` with the first run
``a`` under ``compare/<a>/vs/<b>/`` (``index.html``, its filters, and ``goals/<g>/play-<k>.html``
side by side).  The pages hold no machine path and no server address (``RUNS_SHARED``) unless
``keep_paths``.  ``--force`` writes into a non-empty ``DIR``: a link inside it (a file or a
folder of the bundle's names) is replaced, never followed.

Open ``index.html`` from the file system or put the folder on any static host: nothing is loaded
from anywhere else.
"""

from __future__ import annotations

import html
import json
import os
import posixpath
import re
import shutil
import stat
import sys
import tempfile
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlencode, urljoin, urlsplit

from webshop_gym.server import create_app
from webshop_gym.server.runs import bp as runs_bp
from webshop_gym.server.viewer import viewer_css

from webshop_gym.analysis.taxonomy import SOLVED, TAGS
from webshop_gym.error import Error
from webshop_gym.render.html import stylesheet

__all__ = ["BundleError", "write_bundle"]

#: Episodes per page of the bundle's run pages and goals per page of its comparisons (the viewer's most).
PER = 1000
SUFFIX = ".jsonl"
#: A sampled run's goal filters the bundle keeps (the run page's ``goals``).
GOAL_FILTERS = ("flipping", "always", "never")
SHOWS = ("differ", "a", "b")
#: A page's link to a file of the bundle's folder that no viewer URL serves (the report beside it): made relative.
BUNDLE_FILE = "bundle-file:"

_ATTRIBUTE = re.compile(r'\b(href|src)="([^"]*)"')
_FORM = re.compile(r"<form\b[^>]*>(.*?)</form>", flags=re.S | re.I)
_CONTROLS = re.compile(r"<(select|button|textarea)\b.*?</\1>|<input\b[^>]*>", flags=re.S | re.I)
_REFRESH = re.compile(r'<meta http-equiv="refresh"[^>]*>', flags=re.I)


class BundleError(Error):
    """The bundle cannot be written (the folder is in use, a page of the run fails)."""


def _check_folder(folder: Path, force: bool) -> None:
    if folder.exists() and not folder.is_dir():
        raise BundleError(f"--bundle {folder} is a file, not a folder")
    if folder.is_dir() and any(folder.iterdir()) and not force:
        raise BundleError(f"--bundle {folder} is not empty: choose a new folder, or pass --force to write into it")


def _number(query: dict, key: str, default: int = 1) -> int | None:
    value = query.get(key, str(default))
    return int(value) if value.isdigit() else None


class _Site:
    """The viewer URLs a bundle holds: for each, its file and the one URL it is fetched from (``None``: not held).

    Args:
        names: the runs' names in the viewer (the first is the baseline of comparisons).
        prefix: the run viewer's URL prefix (``/runs``).
    """

    def __init__(self, names: Sequence[str], prefix: str):
        self.names = list(names)
        self.prefix = prefix
        self.static = f"{prefix}/static/"
        self.single = len(self.names) == 1

    def folder(self, name: str) -> str:
        """The folder of run ``name``'s files in the bundle (``""``: the bundle's root, for one run)."""
        return "" if self.single else f"runs/{name}/"

    def start(self) -> str:
        """The URL of the bundle's ``index.html``."""
        if self.single:
            return f"{self.prefix}/{quote(self.names[0])}?per={PER}"
        return f"{self.prefix}/?{urlencode({'baseline': self.names[0]})}"

    def place(self, url: str) -> tuple[str, str] | None:
        """``(file, URL to fetch)`` of a viewer URL the bundle holds, else ``None``."""
        parts = urlsplit(url)
        if parts.scheme or parts.netloc:
            return None
        path, query = unquote(parts.path), {k: v[-1] for k, v in parse_qs(parts.query).items()}
        if path.startswith(self.static):
            rest = path[len(self.static):]
            return (rest, path) if re.fullmatch(r"[A-Za-z0-9_.-]+", rest) and not query else None
        if path in (self.prefix, self.prefix + "/"):
            if self.single or query.get("baseline", self.names[0]) != self.names[0] or set(query) - {"baseline"}:
                return None  # the list of runs (its "Runs" links too) is the bundle's index
            return "index.html", self.start()
        if not path.startswith(self.prefix + "/"):
            return None
        rest = path[len(self.prefix) + 1:]
        for name in self.names:  # the longest name first would matter only for names sharing a prefix and "/"
            if rest == name:
                return self._run_page(name, query)
            if rest.startswith(name + "/"):
                found = self._in_run(name, rest[len(name) + 1:], query)
                if found is not None:
                    return found
        return None

    def _run_page(self, name: str, query: dict) -> tuple[str, str] | None:
        if set(query) - {"page", "per", "gpage", "goals"} or query.get("per", str(PER)) != str(PER):
            return None
        page, gpage, goals = _number(query, "page"), _number(query, "gpage"), query.get("goals", "")
        if page is None or gpage is None or (goals and goals not in GOAL_FILTERS):
            return None
        if gpage > 1 or goals:  # a goal page or filter shows the episodes' first page (one file each)
            page = 1
        file = "index" + (f"-{page}" if page > 1 else "") + (f"-{goals}" if goals else "") + (
            f"-goals-{gpage}" if gpage > 1 else "") + ".html"
        args = {"per": PER, "page": page if page > 1 else None, "goals": goals or None,
                "gpage": gpage if gpage > 1 else None}
        url = f"{self.prefix}/{quote(name)}?" + urlencode({k: v for k, v in args.items() if v is not None})
        return self.folder(name) + file, url

    def _in_run(self, name: str, rest: str, query: dict) -> tuple[str, str] | None:
        base, here = f"{self.prefix}/{quote(name)}", self.folder(name)
        if rest in ("episodes.csv", "episodes.jsonl"):
            return (here + rest, f"{base}/{rest}") if not query else None
        m = re.fullmatch(r"(\d+)", rest)
        if m and set(query) <= {"step"}:
            step = _number(query, "step", 0)
            return None if step is None else (f"{here}episodes/{int(m[1])}/step-{step}.html",
                                              f"{base}/{int(m[1])}?step={step}")
        m = re.fullmatch(r"(\d+)/page/(\d+)", rest)
        if m and set(query) <= {"mark"}:
            kind = "page" if query.get("mark") == "1" else "raw" if not query else None
            return None if kind is None else (f"{here}episodes/{int(m[1])}/{kind}-{int(m[2])}.html",
                                              f"{base}/{int(m[1])}/page/{int(m[2])}" + ("?mark=1" if query else ""))
        m = re.fullmatch(r"(\d+)/prompt/(\d+)", rest)  # a served model's long prompt message (not the whole JSON)
        if m and set(query) == {"message"} and query["message"].isdigit():
            return (f"{here}episodes/{int(m[1])}/prompt-{int(m[2])}-message-{int(query['message'])}.txt",
                    f"{base}/{int(m[1])}/prompt/{int(m[2])}?message={int(query['message'])}")
        m = re.fullmatch(r"(\d+)/answer/(\d+)", rest)
        if m and set(query) <= {"part"} and query.get("part", "response") in ("response", "reasoning"):
            part = query.get("part", "response")
            return (f"{here}episodes/{int(m[1])}/{part}-{int(m[2])}.txt",
                    f"{base}/{int(m[1])}/answer/{int(m[2])}?part={part}")
        m = re.fullmatch(r"goal/(\d+)", rest)
        if m and set(query) <= {"play"}:
            play = _number(query, "play", 0)
            return None if play is None else (f"{here}goals/{int(m[1])}/play-{play}.html",
                                              f"{base}/goal/{int(m[1])}" + (f"?play={play}" if play else ""))
        m = re.fullmatch(r"vs/(.+?)(?:/(\d+))?", rest)
        if m and not self.single and m[1] in self.names and name == self.names[0] != m[1]:
            folder = f"compare/{name}/vs/{m[1]}/"
            if m[2] is None:
                return self._comparison(folder, f"{base}/vs/{quote(m[1])}", query)
            play = _number(query, "play", 0)
            if set(query) <= {"play"} and play is not None:  # each run's same play side by side
                return (f"{folder}goals/{int(m[2])}/play-{play}.html",
                        f"{base}/vs/{quote(m[1])}/{int(m[2])}" + (f"?play={play}" if play else ""))
        return None

    def _comparison(self, folder: str, base: str, query: dict) -> tuple[str, str] | None:
        if set(query) - {"show", "tag_a", "tag_b", "page", "per"} or query.get("per", str(PER)) != str(PER):
            return None
        show, page = query.get("show", "all"), _number(query, "page")
        tags = [*TAGS, SOLVED]
        tag_a, tag_b = query.get("tag_a", ""), query.get("tag_b", "")
        if page is None or show not in ("all", *SHOWS) or (tag_a or tag_b) and (show != "all" or tag_a not in tags
                                                                                  or tag_b not in tags):
            return None  # a tag cell's goals are kept for all goals only (the transition table links those)
        file = "index" + (f"-{show}" if show != "all" else "") + (
            f"-tags-{tags.index(tag_a)}-{tags.index(tag_b)}" if tag_a else "") + (f"-{page}" if page > 1 else "")
        args = {"show": show if show != "all" else None, "tag_a": tag_a or None, "tag_b": tag_b or None,
                "per": PER, "page": page if page > 1 else None}
        return f"{folder}{file}.html", f"{base}?" + urlencode({k: v for k, v in args.items() if v is not None})


def _relink(text: str, url: str, own: str, site: _Site, css: list[tuple[str, str]], queue: deque, seen: set) -> str:
    """``text`` (a page fetched from ``url``, saved as ``own``) with relative links to the bundle's files."""
    here = posixpath.dirname(own)

    def attribute(match: re.Match) -> str:
        name, value = match[1], html.unescape(match[2])
        if value.startswith("#") or value.startswith("data:"):
            return match[0]
        if value.startswith(BUNDLE_FILE):  # a file beside the pages (the report): relative to this page
            relative = posixpath.relpath(value[len(BUNDLE_FILE):], here or ".")
            return f'{name}="{html.escape(quote(relative), quote=True)}"'

        target = urljoin(url, value)
        found = site.place(target)
        if found is None:
            return ""  # a page the bundle does not hold: the link becomes text
        file, fetch = found
        if file not in seen:
            seen.add(file)
            queue.append((fetch, file))
        fragment = urlsplit(value).fragment
        relative = quote(posixpath.relpath(file, here or ".")) + (f"#{fragment}" if fragment else "")
        return f'{name}="{html.escape(relative, quote=True)}"'

    # No server behind the forms: their controls go, what they showed (counts, export links) stays; the form
    # that compares two runs goes whole (the bundle's list of runs links their comparisons).
    text = _FORM.sub(lambda m: "" if 'class="compare' in m[0][: m[0].index(">")] else
                     f'<div class="filters">{_CONTROLS.sub("", m[1]).strip()}</div>' if
                     _CONTROLS.sub("", m[1]).strip() else "", _REFRESH.sub("", text))
    text = _ATTRIBUTE.sub(attribute, text)
    for sheet, file in css:  # the stylesheets inlined in every page, written once and linked
        if f"<style>{sheet}</style>" in text:
            link = posixpath.relpath(file, here or ".")
            text = text.replace(f"<style>{sheet}</style>", f'<link rel="stylesheet" href="{link}">', 1)
        elif f"<style>{sheet}" in text:  # the env's page marked by the viewer: its rules follow
            link = posixpath.relpath(file, here or ".")
            text = text.replace(f"<style>{sheet}", f'<link rel="stylesheet" href="{link}"><style>', 1)
    return text


def _write(root: Path, file: str, data: bytes) -> None:
    """Write ``data`` to ``root / file`` in the staging folder (created here; a link planted meanwhile fails it)."""
    path = root.joinpath(*file.split("/"))
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    with os.fdopen(os.open(path, flags, 0o644), "wb") as handle:
        handle.write(data)


def _staged(staging: Path) -> tuple[list[str], list[str]]:
    """The staging folder's folders (parents first) and files, as paths relative to it."""
    folders, files = [], []
    for top, dirs, names in os.walk(staging):
        rel = os.path.relpath(top, staging)
        dirs.sort()
        folders += [d if rel == "." else f"{rel}/{d}" for d in dirs]
        files += [n if rel == "." else f"{rel}/{n}" for n in sorted(names)]
    return folders, files


def _install(staging: Path, out: Path) -> None:
    """Move the staged bundle into ``out``, never through a link.

    A new folder is the staging folder renamed.  Into an existing one (``--force``) each file is
    renamed over its namesake: a symbolic or hard link of that name is replaced, never written
    through, and a link where the bundle needs a folder is replaced by one.  What is in the way
    (a folder where a file goes, a socket where a folder goes) is found before anything moves.
    """
    if not os.path.lexists(out):
        os.rename(staging, out)
        return
    folders, files = _staged(staging)
    for rel in folders:
        try:
            mode = os.lstat(out / rel).st_mode
        except FileNotFoundError:
            continue
        if not (stat.S_ISDIR(mode) or stat.S_ISLNK(mode) or stat.S_ISREG(mode)):
            raise BundleError(f"{out / rel} is in the way of the bundle's folder {rel} (not a file or a link)")
    for rel in files:
        target = out / rel
        if os.path.lexists(target) and stat.S_ISDIR(os.lstat(target).st_mode):
            raise BundleError(f"{target} is a folder where the bundle writes a file: remove it, or choose another DIR")
    for rel in folders:
        target = out / rel
        try:
            mode = os.lstat(target).st_mode
        except FileNotFoundError:
            target.mkdir()
            continue
        if not stat.S_ISDIR(mode):
            target.unlink()  # a link (followed nowhere) or a file where the bundle needs a folder
            target.mkdir()
    for rel in files:
        os.replace(staging / rel, out / rel)


def _names(labels: Sequence[str]) -> list[str]:
    """The runs' names in the bundle: their report labels as file names (slashes as ``-``), each once."""
    out: list[str] = []
    for label in labels:
        name = re.sub(r"[/\\\x00]", "-", label)
        if name.strip(".") == "":
            name = "run"
        base, k = name, 2
        while name in out:
            name, k = f"{base}-{k}", k + 1
        out.append(name)
    return out


def _runs(paths: Sequence[Path], keep_paths: bool) -> tuple[list[tuple[str, Path]], list]:
    """The runs to bundle: ``(label, file)`` each, shards of one evaluation merged as ``report`` merges them."""
    if not any(_is_shard(p) for p in paths):
        from webshop_gym.reporting.loading import labels_of

        return list(zip(labels_of(list(paths), keep_paths), paths)), []
    from webshop_gym.reporting.loading import read_runs

    runs, _ = read_runs(list(paths), keep_paths)
    return [(label, run.path) for label, run in runs], [run for _, run in runs]  # the runs keep merged files alive


def _is_shard(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8") as handle:
            first = json.loads(handle.readline() or "{}")
    except (OSError, ValueError):
        return False
    return isinstance(first, dict) and isinstance(first.get("shard"), list)


def _zipped(given: list, out: Path, force: bool, log, keep_paths: bool, report: str | None, started: float) -> dict:
    """``--bundle x.zip``: the bundle's folder ``x/`` written to a temporary place, then zipped into ``out`` whole."""
    import zipfile

    if out.exists() and (out.is_dir() or not force):
        raise BundleError(f"--bundle {out} {'is a folder' if out.is_dir() else 'exists: pass --force to replace it'}")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{out.stem}.", dir=out.parent) as tmp:
        inner = Path(tmp) / out.stem
        summary = write_bundle(given, inner, log=False, keep_paths=keep_paths, report=report)
        partial = Path(tmp) / "bundle.zip"
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(inner.rglob("*")):
                if path.is_file():
                    archive.write(path, path.relative_to(tmp).as_posix())
        os.replace(partial, out)
    summary["seconds"] = time.perf_counter() - started
    summary["bytes_zipped"] = out.stat().st_size
    if log is not False:
        print(f"webshop-gym report: wrote the bundle {out} ({summary['files']:,} files, {summary['bytes'] / 1e6:.1f} MB "
              f"in a {summary['bytes_zipped'] / 1e6:.1f} MB zip, {summary['seconds']:.1f} s); unzip it and open "
              f"{out.stem}/index.html", file=log or sys.stderr)
    return summary


def _render(names: list[str], labelled: list, given: list, staging: Path, keep_paths: bool,
            report: str | None = None) -> tuple:
    """Fetch every page of the runs' viewer into ``staging``: ``(files, bytes, episodes, site)``."""
    with tempfile.TemporaryDirectory(prefix="webshop-gym-bundle-") as tmp:
        for name, (_, path) in zip(names, labelled):
            (Path(tmp) / f"{name}{SUFFIX}").symlink_to(Path(path).resolve())
        app = create_app({"TESTING": True, "RUNS": tmp, "MAX_SESSIONS": 1, "RUNS_SHARED": not keep_paths,
                          "RUNS_INDEX_INLINE_BYTES": 1 << 62,  # index within the request: no 202 page
                          "RUNS_BUNDLE": {"report": report}})  # no server behind the pages: no "new game"
        try:
            client = app.test_client()
            site = _Site(names, runs_bp.url_prefix.rstrip("/"))
            css = [(viewer_css(), "runs.css"), (stylesheet(), "shop.css")]
            queue: deque = deque([(site.start(), "index.html")])
            seen = {"index.html"}
            files = size = 0
            while queue:
                url, file = queue.popleft()
                response = client.get(url)
                try:
                    if response.status_code != 200:  # the error page's one line
                        found = re.search(r"<h2>.*?</h2>\s*<p>(.*?)</p>", response.get_data(as_text=True), re.S)
                        reason = html.unescape(re.sub(r"<[^>]+>|\s+", " ", found[1]).strip()) if found else ""
                        for name, source in zip(names, given):  # not our symlinks
                            reason = reason.replace(str(Path(tmp) / f"{name}{SUFFIX}"), str(source))
                        raise BundleError(f"{', '.join(map(str, given))}: the viewer's page {url} failed "
                                          f"({response.status_code}): {reason or response.status}")
                    data = response.get_data()
                    if response.mimetype == "text/html":
                        data = _relink(data.decode("utf-8"), url, file, site, css, queue, seen).encode("utf-8")
                finally:
                    response.close()
                _write(staging, file, data)
                files += 1
                size += len(data)
            for sheet, file in css:
                _write(staging, file, sheet.encode("utf-8"))
                files += 1
                size += len(sheet.encode("utf-8"))
            library = app.extensions["webshop_gym_runs"]
            episodes = sum(library.load(name).episodes for name in names)
        finally:
            app.extensions["webshop_gym"].close()
            app.extensions["webshop_gym_runs"].close()
    return files, size, episodes, site


def _missing_ancestor(path: Path) -> Path | None:
    """The outermost of ``path`` and its parents that does not exist yet (``None``: all do)."""
    missing = None
    for folder in (path, *path.parents):
        if os.path.lexists(folder):
            break
        missing = folder
    return missing


def write_bundle(runs: str | Path | Sequence[str | Path], folder: str | Path, force: bool = False, log=None,
                 keep_paths: bool = False, report: str | None = None) -> dict:
    """Write the runs' viewer pages as a self-contained static folder ``folder``.

    Args:
        runs: a run file (``eval --out``), or several (the first is the baseline of comparisons;
            shards of one evaluation are one run).
        folder: the bundle's folder: created; an existing non-empty one only with ``force``
            (its files of the same names are replaced, links among them replaced, others left).
        force: write into a non-empty folder.
        log: where the summary line goes (default: stderr; ``False``: nowhere).
        keep_paths: keep machine paths and server addresses on the pages (for your own use).
        report: the report written with the bundle, as a path relative to the bundle's folder
            (``report.html``, ``../report.md``): the list of runs and each run page link to it.
            A ``folder`` ending in ``.zip`` writes the bundle as a zip file of one folder named
            after it (``x.zip`` holds ``x/index.html``, ...; ``report`` relative to ``x/`` as if
            unzipped beside the zip file).

    Returns:
        ``{"files", "bytes", "seconds", "episodes", "folders"}``: ``folders`` gives, per run label,
        the folder of its files in the bundle (URL-quoted, ``""`` or ending in ``/``).

    Raises:
        BundleError: the folder is not empty (without ``force``), or a page of the runs fails.
    """
    started = time.perf_counter()
    given = [runs] if isinstance(runs, (str, os.PathLike)) else list(runs)
    sources, out = [Path(r).resolve() for r in given], Path(folder)
    if not sources:
        raise BundleError("--bundle needs a run file")
    for source, name in zip(sources, given):
        if not source.is_file():
            raise BundleError(f"{name} is not a run file")
    if out.suffix.lower() == ".zip":
        return _zipped(given, out, force, log, keep_paths, report, started)
    _check_folder(out, force)
    labelled, keep_alive = _runs(sources, keep_paths)
    names = _names([label for label, _ in labelled])
    if len(names) == 1 and len(sources) == 1:  # one run: named after its file, as the viewer names it
        single = sources[0].name
        names = [single[: -len(SUFFIX)] if single.endswith(SUFFIX) and len(single) > len(SUFFIX) else single]
        if names[0].strip(".") == "" or "/" in names[0]:
            names = ["run"]
    made = _missing_ancestor(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
    try:
        files, size, episodes, site = _render(names, labelled, given, staging, keep_paths, report)
        _install(staging, out)
    except BaseException:
        shutil.rmtree(made or staging, ignore_errors=True)  # a bundle that fails leaves nothing behind
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    del keep_alive
    seconds = time.perf_counter() - started
    summary = {"files": files, "bytes": size, "seconds": seconds, "episodes": episodes,
               "folders": {label: quote(site.folder(name)) for (label, _), name in zip(labelled, names)}}
    if log is not False:
        print(f"webshop-gym report: wrote the bundle {out}{'' if str(out).endswith('/') else '/'} "
              f"({len(names)} run{'' if len(names) == 1 else 's'}, {episodes:,} episodes, {files:,} files, "
              f"{size / 1e6:.1f} MB, {seconds:.1f} s); open {out / 'index.html'}", file=log or sys.stderr)
    return summary
