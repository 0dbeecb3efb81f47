"""A run you can share: ``webshop-gym report RUN.jsonl --bundle DIR`` writes the viewer's pages as static files.

The bundle is the run viewer itself, saved: the app of ``serve --runs`` is built over the run
(:func:`webshop_gym.server.create_app` with ``RUNS``), every page of the run is fetched from it
with Flask's test client (the run page, every episode's diagnosis and stepper at every step, the
env's pages the viewer re-creates by replaying the logged actions, long model answers, the
exports, the arrow-keys script), and each page's links are rewritten to relative links between
the files (a link to a page that is not in the bundle, such as a sort order or a filter, becomes
plain text; forms are dropped).  No second renderer: the pages are the viewer's templates and
replay.  The stylesheets the server inlines in every page are written once (``runs.css``,
``shop.css``) and linked, so the bundle's size grows with the episodes' steps, not with the CSS.

Layout of ``DIR``::

    index.html                the run page (all episodes; index-2.html, ... past 1,000)
    runs.css, shop.css        the viewer's and the env's stylesheets (inlined by the server, linked here)
    steps.js                  the episode page's arrow-keys script
    episodes.csv, .jsonl      the exports
    episodes/<i>/step-<k>.html    episode i before action k + 1 (step-0: its diagnosis, first page)
    episodes/<i>/page-<k>.html    the env's page after k actions, as the stepper frames it
    episodes/<i>/...              the env's done page, whole model answers and long prompt messages (.txt)

Open ``index.html`` from the file system or put the folder on any static host: nothing is loaded
from anywhere else.
"""

from __future__ import annotations

import html
import posixpath
import re
import sys
import tempfile
import time
from collections import deque
from pathlib import Path
from urllib.parse import parse_qs, unquote, urljoin, urlsplit

from webshop_gym.server import create_app
from webshop_gym.server.runs import bp as runs_bp
from webshop_gym.server.runs import viewer_css

from webshop_gym.error import Error
from webshop_gym.render.html import stylesheet

__all__ = ["BundleError", "write_bundle"]

#: Episodes per page of the bundle's run page (the viewer's most).
PER = 1000
SUFFIX = ".jsonl"

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


class _Site:
    """The URLs of one run's viewer pages and the bundle's file for each (``None``: not in the bundle)."""

    def __init__(self, name: str, prefix: str):
        self.name = name
        self.run = f"{prefix}/{name}"
        self.static = f"{prefix}/static/"

    def file_for(self, url: str) -> str | None:
        parts = urlsplit(url)
        if parts.scheme or parts.netloc:
            return None
        path, query = unquote(parts.path), {k: v[-1] for k, v in parse_qs(parts.query).items()}
        if path.startswith(self.static):
            rest = path[len(self.static):]
            return rest if re.fullmatch(r"[A-Za-z0-9_.-]+", rest) and not query else None
        if path == self.run:
            if set(query) <= {"page", "per"} and query.get("per", str(PER)) == str(PER):
                page = query.get("page", "1")
                return "index.html" if page == "1" else f"index-{page}.html" if page.isdigit() else None
            return None
        if not path.startswith(self.run + "/"):
            return None
        rest = path[len(self.run) + 1:]
        if rest in ("episodes.csv", "episodes.jsonl"):
            return rest if not query else None
        m = re.fullmatch(r"(\d+)", rest)
        if m and set(query) <= {"step"}:
            step = query.get("step", "0")
            return f"episodes/{int(m[1])}/step-{int(step)}.html" if step.isdigit() else None
        m = re.fullmatch(r"(\d+)/page/(\d+)", rest)
        if m and set(query) <= {"mark"}:
            kind = "page" if query.get("mark") == "1" else "raw" if not query else None
            return f"episodes/{int(m[1])}/{kind}-{int(m[2])}.html" if kind else None
        m = re.fullmatch(r"(\d+)/prompt/(\d+)", rest)  # a served model's long prompt message (not the whole JSON)
        if m and set(query) == {"message"} and query["message"].isdigit():
            return f"episodes/{int(m[1])}/prompt-{int(m[2])}-message-{int(query['message'])}.txt"
        m = re.fullmatch(r"(\d+)/answer/(\d+)", rest)
        if m and set(query) <= {"part"} and query.get("part", "response") in ("response", "reasoning"):
            return f"episodes/{int(m[1])}/{query.get('part', 'response')}-{int(m[2])}.txt"
        return None


def _relink(text: str, url: str, own: str, site: _Site, css: list[tuple[str, str]], queue: deque, seen: set) -> str:
    """``text`` (a page fetched from ``url``, saved as ``own``) with relative links to the bundle's files."""
    here = posixpath.dirname(own)

    def attribute(match: re.Match) -> str:
        name, value = match[1], html.unescape(match[2])
        if value.startswith("#") or value.startswith("data:"):
            return match[0]
        target = urljoin(url, value)
        file = site.file_for(target)
        if file is None:
            return ""  # a page the bundle does not hold: the link becomes text
        if file not in seen:
            seen.add(file)
            queue.append((target, file))
        fragment = urlsplit(value).fragment
        relative = posixpath.relpath(file, here or ".") + (f"#{fragment}" if fragment else "")
        return f'{name}="{html.escape(relative, quote=True)}"'

    # No server behind the forms: their controls go, what they showed (counts, export links) stays.
    text = _FORM.sub(lambda m: f'<div class="filters">{_CONTROLS.sub("", m[1]).strip()}</div>' if
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


def write_bundle(run: str | Path, folder: str | Path, force: bool = False, log=None) -> dict:
    """Write ``run``'s viewer pages as a self-contained static folder ``folder``.

    Args:
        run: a run file (``eval --out``).
        folder: the bundle's folder: created; an existing non-empty one only with ``force``
            (its files of the same names are replaced, others left).
        force: write into a non-empty folder.
        log: where the summary line goes (default: stderr; ``False``: nowhere).

    Returns:
        ``{"files", "bytes", "seconds", "episodes"}``.

    Raises:
        BundleError: the folder is not empty (without ``force``), or a page of the run fails.
    """
    started = time.perf_counter()
    source, out = Path(run).resolve(), Path(folder)
    if not source.is_file():
        raise BundleError(f"{run} is not a run file")
    _check_folder(out, force)
    name = source.name[: -len(SUFFIX)] if source.name.endswith(SUFFIX) and len(source.name) > len(SUFFIX) else source.name
    if name.strip(".") == "" or "/" in name:
        name = "run"
    with tempfile.TemporaryDirectory(prefix="webshop-gym-bundle-") as tmp:
        (Path(tmp) / f"{name}{SUFFIX}").symlink_to(source)
        app = create_app({"TESTING": True, "RUNS": tmp, "MAX_SESSIONS": 1,
                          "RUNS_INDEX_INLINE_BYTES": 1 << 62})  # index within the request: no 202 page
        try:
            client = app.test_client()
            site = _Site(name, runs_bp.url_prefix.rstrip("/"))
            css = [(viewer_css(), "runs.css"), (stylesheet(), "shop.css")]
            first = f"{site.run}?per={PER}"
            queue: deque = deque([(first, "index.html")])
            seen = {"index.html"}
            files = size = 0
            while queue:
                url, file = queue.popleft()
                response = client.get(url)
                try:
                    if response.status_code != 200:  # the error page's one line
                        found = re.search(r"<h2>.*?</h2>\s*<p>(.*?)</p>", response.get_data(as_text=True), re.S)
                        reason = html.unescape(re.sub(r"<[^>]+>|\s+", " ", found[1]).strip()) if found else ""
                        reason = reason.replace(str(Path(tmp) / f"{name}{SUFFIX}"), str(run))  # not our symlink
                        raise BundleError(f"{run}: the viewer's page {url} failed ({response.status_code}): "
                                          f"{reason or response.status}")
                    data = response.get_data()
                    if response.mimetype == "text/html":
                        data = _relink(data.decode("utf-8"), url, file, site, css, queue, seen).encode("utf-8")
                finally:
                    response.close()
                if file == "index.html":  # the episode pages of the run page's other pages
                    episodes = app.extensions["webshop_gym_runs"].load(name).episodes
                    for page in range(2, -(-episodes // PER) + 1):
                        target = f"{site.run}?per={PER}&page={page}"
                        if site.file_for(target) not in seen:
                            seen.add(site.file_for(target))
                            queue.append((target, site.file_for(target)))
                path = out / file
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
                files += 1
                size += len(data)
            for sheet, file in css:
                (out / file).write_text(sheet, encoding="utf-8")
                files += 1
                size += len(sheet.encode("utf-8"))
            episodes = app.extensions["webshop_gym_runs"].load(name).episodes
        finally:
            app.extensions["webshop_gym"].close()
            app.extensions["webshop_gym_runs"].close()
    seconds = time.perf_counter() - started
    summary = {"files": files, "bytes": size, "seconds": seconds, "episodes": episodes}
    if log is not False:
        print(f"webshop-gym report: wrote the bundle {out}{'' if str(out).endswith('/') else '/'} "
              f"({episodes:,} episodes, {files:,} files, {size / 1e6:.1f} MB, {seconds:.1f} s); "
              f"open {out / 'index.html'}", file=log or sys.stderr)
    return summary

