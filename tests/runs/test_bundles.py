"""Bundles to share (issue 42, item 9; issue 46, items 4 and 6).

* a bundle of several runs holds their comparison, links only to its own files, lists every
  goal of a sampled run, and a report written with it links into it;
* ``--force`` replaces links inside the folder and never writes through them;
* machine paths and server addresses stay out of bundles, reports and exports unless asked.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from bs4 import BeautifulSoup

from tests.runs.conftest import NUM_GOALS
from webshop_gym.cli.app import main
from webshop_gym.reporting.report import build_report, tables
from webshop_gym.runs.index import RunIndex


def _soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def _links(text: str) -> list[str]:
    return [html.unescape(x) for x in re.findall(r'\b(?:href|src)="([^"]*)"', text)]


def _check_links(folder: Path) -> int:
    """Every link of every page of ``folder`` is relative and names a file of it; the number of pages."""
    pages = sorted(folder.rglob("*.html"))
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for link in _links(text):
            if link.startswith(("#", "data:")):
                continue
            parts = urlsplit(link)
            assert not parts.scheme and not parts.netloc and not link.startswith("/"), (page, link)
            target = (page.parent / unquote(parts.path)).resolve()
            assert target.is_file(), (page, link)
            assert folder.resolve() in target.parents, (page, link)
    return len(pages)


def _bundle(capsys, *args: str) -> None:
    assert main(["report", *args]) == 0
    capsys.readouterr()


# -- issue 42, item 9: several runs, their comparison, every goal --------------------------------------------


def test_a_bundle_of_several_runs_holds_their_comparison(runs_dir, tmp_path, capsys):
    out = tmp_path / "bundle"
    _bundle(capsys, *(str(runs_dir / f"{n}.jsonl") for n in ("rule", "random", "oracle")), "--bundle", str(out))
    assert _check_links(out) > 3 * NUM_GOALS
    index = _soup(out / "index.html")
    listed = [a.text for a in index.select("#runs a.run-link")]
    assert sorted(listed) == ["oracle", "random", "rule"]
    compared = {a.text.strip(): a["href"] for a in index.select("#comparisons a")}
    assert set(compared) == {"random vs rule", "oracle vs rule"}  # every run against the first, as the report pairs them
    report = build_report([runs_dir / f"{n}.jsonl" for n in ("rule", "random", "oracle")])
    header, rows = tables(report)["paired"]
    for name, href in compared.items():
        page = _soup(out / unquote(href))
        heads = [th.text for th in page.select("#paired thead th")]
        cells = dict(zip(heads, (td.text for td in page.select("#paired tbody td")), strict=True))
        expected = dict(zip(header, next(r for r in rows if r[0] == name), strict=True))
        for column in heads:
            assert cells[column] == expected[column], (name, column)
        goals = page.select("#goals tbody tr")
        assert len(goals) == NUM_GOALS
        for tr in goals:  # side by side, for every goal
            side = tr.select("a")[-1]["href"]
            assert (out / Path(unquote(href)).parent / unquote(side)).is_file()
    for name in ("rule", "random", "oracle"):  # each run whole
        run_page = _soup(out / "runs" / name / "index.html")
        assert len(run_page.select("#episodes tbody tr")) == NUM_GOALS
    text = "".join(p.read_text(encoding="utf-8", errors="replace") for p in out.rglob("*") if p.is_file())
    assert "127.0.0.1" not in text and "localhost" not in text and "http://" not in text


def test_a_sampled_runs_bundle_lists_every_goal(tmp_path, capsys, monkeypatch):
    import webshop_gym.server.run_pages as viewer

    monkeypatch.setattr(viewer, "GOALS_PER_PAGE", 5)  # 12 goals: three goal pages
    run = tmp_path / "sampled.jsonl"
    assert main(["eval", "--policy", "random", "--num-goals", "12", "--samples", "2", "--quiet", "--out", str(run)]) == 0
    out = tmp_path / "bundle"
    _bundle(capsys, str(run), "--bundle", str(out))
    _check_links(out)
    page, goals, pages = out / "index.html", [], 0
    while True:
        soup = _soup(page)
        goals += [int(tr["data-goal"]) for tr in soup.select("#sample-goals tbody tr.sample-goal")]
        pages += 1
        following = soup.select_one("#next-goal-page")
        if following is None:
            break
        assert following.get("href"), "a dead 'next goals' link"
        page = page.parent / unquote(urlsplit(following["href"]).path)
    assert pages == 3 and goals == list(range(12))
    for tr in _soup(out / "index.html").select("#sample-goals tbody tr.sample-goal"):
        link = tr.select_one("a.goal-link")
        assert link.get("href") and (out / unquote(link["href"])).is_file()  # every goal's page is in the bundle


def test_a_report_written_with_its_bundle_links_into_it(runs_dir, tmp_path, capsys):
    out = tmp_path / "share"
    out.mkdir()  # --out's folder must exist when the command starts
    report = out / "report.html"
    _bundle(capsys, str(runs_dir / "rule.jsonl"), str(runs_dir / "random.jsonl"), "--bundle", str(out),
            "--out", str(report), "--no-plots")
    text = report.read_text(encoding="utf-8")
    assert "127.0.0.1" not in text and "http://" not in text
    examples = _soup(report).select("a.example")
    assert examples
    index = {n: RunIndex(runs_dir / f"{n}.jsonl") for n in ("rule", "random")}
    for ix in index.values():
        ix.refresh()
    for a in examples:
        target = report.parent / unquote(a["href"])
        assert target.is_file(), a["href"]
        run, position = re.search(r"runs/([^/]+)/episodes/(\d+)/step-0\.html$", a["href"]).groups()
        tag = a.find_parent("tr").find_all("td")[1].text
        assert index[run].table().tag_name(int(position)) == tag
    plain = tmp_path / "plain.html"  # no bundle, no --viewer-url: no server address, no links
    _bundle(capsys, str(runs_dir / "rule.jsonl"), "--out", str(plain), "--no-plots")
    assert "127.0.0.1" not in plain.read_text(encoding="utf-8") and not _soup(plain).select("a.example")


# -- issue 46, item 4: --force never writes through a link ---------------------------------------------------


def test_force_replaces_links_inside_the_folder_and_never_follows_them(runs_dir, tmp_path, capsys):
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    secret, other = outside / "secret.txt", outside / "dir" / "keep.txt"
    secret.write_text("mine", encoding="utf-8")
    other.write_text("mine too", encoding="utf-8")
    out = tmp_path / "bundle"
    out.mkdir()
    (out / "index.html").symlink_to(secret)  # a file of the bundle's name, linked outside
    (out / "runs.css").symlink_to(outside / "nothing-yet.css")  # a dangling link
    (out / "episodes").symlink_to(outside / "dir", target_is_directory=True)  # a folder of the bundle, linked outside
    before = {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}
    _bundle(capsys, str(runs_dir / "rule.jsonl"), "--bundle", str(out), "--force")
    assert {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()} == before
    assert not (outside / "nothing-yet.css").exists() and sorted(p.name for p in (outside / "dir").iterdir()) == ["keep.txt"]
    for name in ("index.html", "runs.css", "episodes"):
        assert not (out / name).is_symlink(), name
    assert (out / "episodes").is_dir() and (out / "episodes" / "0" / "step-0.html").is_file()
    assert "<html" in (out / "index.html").read_text(encoding="utf-8")
    _check_links(out)


def test_force_never_writes_through_a_hard_link(runs_dir, tmp_path, capsys):
    outside = tmp_path / "outside.js"
    outside.write_text("mine", encoding="utf-8")
    out = tmp_path / "bundle"
    out.mkdir()
    os.link(outside, out / "steps.js")  # the bundle's script, a second name of a file outside
    _bundle(capsys, str(runs_dir / "rule.jsonl"), "--bundle", str(out), "--force")
    assert outside.read_text(encoding="utf-8") == "mine"
    assert os.stat(out / "steps.js").st_nlink == 1 and "mine" not in (out / "steps.js").read_text(encoding="utf-8")


@pytest.mark.parametrize("existing", [False, True], ids=["new-folder", "force-into-a-used-one"])
def test_a_bundle_that_fails_midway_leaves_nothing_behind(runs_dir, tmp_path, capsys, monkeypatch, existing):
    import webshop_gym.server.bundle as bundle

    write, calls = bundle._write, []

    def failing(root, file, data):
        calls.append(file)
        if len(calls) == 12:  # after eleven pages were written
            raise bundle.BundleError("the disk is full (a test's failure)")
        write(root, file, data)

    monkeypatch.setattr(bundle, "_write", failing)
    out = tmp_path / "bundle"
    if existing:
        out.mkdir(parents=True)
        (out / "index.html").write_text("the old page", encoding="utf-8")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert main(["report", str(runs_dir / "rule.jsonl"), "--bundle", str(out)] + (["--force"] if existing else [])) == 2
    assert "the disk is full (a test's failure)" in capsys.readouterr().err
    assert len(calls) == 12
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # no folder, no partial file
    if existing:
        assert (out / "index.html").read_text(encoding="utf-8") == "the old page"
        return
    # the API creates missing parent folders too: a failure removes them with the rest
    calls.clear()
    with pytest.raises(bundle.BundleError, match="the disk is full"):
        bundle.write_bundle(runs_dir / "rule.jsonl", tmp_path / "new" / "deeper" / "bundle", log=False)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_a_run_file_with_lone_surrogates_from_any_writer_reads_back(runs_dir, tmp_path, make_viewer, capsys):
    """Surrogates a local policy's action held (written escaped) or an older version let through: cleaned on read."""
    lines = (runs_dir / "rule.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    broken = [line.replace('"action": "search[', '"action": "search[\\ud800 ', 1)
              .replace('"instruction": "', '"instruction": "\\udfff ', 1) for line in lines]
    assert broken != lines
    run = tmp_path / "run.jsonl"
    run.write_text("".join(broken), encoding="utf-8")
    client = make_viewer(tmp_path)
    for url in ("/runs/run", "/runs/run/0", "/runs/run/0?step=1", "/runs/run/episodes.csv", "/runs/run/goal/0"):
        response = client.get(url)
        assert response.status_code == 200, url
    page = client.get("/runs/run/0?step=1").get_data(as_text=True)
    assert "search[\ufffd " in page
    assert main(["report", str(run), "--no-plots", "--out", str(tmp_path / "r.html"), "--csv", str(tmp_path / "e.csv"),
                 "--jsonl", str(tmp_path / "e.jsonl")]) == 0
    assert "\ufffd " in (tmp_path / "e.csv").read_text(encoding="utf-8")
    assert main(["report", str(run), "--bundle", str(tmp_path / "bundle")]) == 0
    capsys.readouterr()


def test_an_export_that_fails_midway_leaves_the_old_file(runs_dir, tmp_path, capsys, monkeypatch):
    import webshop_gym.reporting.report as report

    rows = report.csv_row

    def failing(record):
        if record.get("position", record.get("episode_position")) is not None and failing.calls == 3:
            raise OSError(28, "No space left on device")
        failing.calls += 1
        return rows(record)

    failing.calls = 0
    monkeypatch.setattr(report, "csv_row", failing)
    old = tmp_path / "e.csv"
    old.write_text("the old export\n", encoding="utf-8")
    with pytest.raises(OSError):
        report.write_episodes(report.build_report([runs_dir / "rule.jsonl"]), csv_path=str(old))
    assert old.read_text(encoding="utf-8") == "the old export\n" and sorted(p.name for p in tmp_path.iterdir()) == ["e.csv"]


# -- issue 46, item 6: no machine path, no server address, unless asked --------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory, default_shop):
    pytest.importorskip("openai", reason="pip install 'webshop-gym[openai]'")
    from tests.openai_server import ChatServer

    folder = tmp_path_factory.mktemp("private-runs")
    with ChatServer() as server:
        for name in ("a", "b"):
            (folder / name).mkdir()
            assert main(["eval", "--policy", "openai:scripted", "--base-url", server.url, "--num-goals", "4",
                         "--concurrency", "2", "--quiet", "--out", str(folder / name / "qwen.jsonl")]) == 0
        address = urlsplit(server.url).netloc
    return folder, address


def _private(folder: Path, address: str, default_shop) -> list[str]:
    header = json.loads((folder / "a" / "qwen.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert address in json.dumps(header) and str(folder) in json.dumps(header)  # the run file itself keeps them
    host = address.split(":")[0]
    return [address, f"{host}:", str(folder.resolve()), str(folder), header["shop"]["path"],
            str(Path(header["shop"]["path"]).parent), os.getcwd()]


def test_shared_output_holds_no_machine_path_or_server_address(served, tmp_path, capsys, default_shop):
    folder, address = served
    private = _private(folder, address, default_shop)
    runs = [str(folder / "a" / "qwen.jsonl"), str(folder / "b" / "qwen.jsonl")]
    out = tmp_path / "share"
    for fmt in ("html", "md", "latex"):
        _bundle(capsys, *runs, "--format", fmt, "--out", str(tmp_path / f"report.{fmt}"), "--no-plots")
    _bundle(capsys, *runs, "--bundle", str(out), "--csv", str(tmp_path / "e.csv"), "--jsonl", str(tmp_path / "e.jsonl"))
    files = [p for p in out.rglob("*") if p.is_file()] + [tmp_path / f"report.{f}" for f in ("html", "md", "latex")] \
        + [tmp_path / "e.csv", tmp_path / "e.jsonl"]
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        unescaped = html.unescape(text).replace("\\/", "/")
        for secret in private:
            assert secret not in text and secret not in unescaped, (path, secret)
    report = build_report(runs, resamples=100)
    assert [r.label for r in report.rows] == ["a/qwen", "b/qwen"]  # names that clash: their folders, not paths
    page = _soup(out / "runs" / "a-qwen" / "index.html")
    assert "qwen.jsonl" in page.select_one("details pre").text  # the run line is there, its paths cut to names


def test_the_user_asks_for_paths_with_keep_paths(served, tmp_path, capsys, default_shop):
    folder, address = served
    out = tmp_path / "mine"
    _bundle(capsys, str(folder / "a" / "qwen.jsonl"), "--bundle", str(out), "--keep-paths")
    run_line = _soup(out / "index.html").select_one("details pre").text
    assert address in run_line and str(folder / "a" / "qwen.jsonl") in run_line
    header = json.loads((folder / "a" / "qwen.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert header["shop"]["path"] in run_line  # the run line as recorded; the settings name the shop (issue 56)
    shop = _soup(out / "index.html").select_one("#shop").text
    assert header["shop"]["path"] not in shop and Path(header["shop"]["path"]).name in shop and "data files" in shop
    assert main(["report", str(folder / "a" / "qwen.jsonl"), "--keep-paths", "--format", "md"]) == 0
    capsys.readouterr()
    shutil.rmtree(out)


@pytest.mark.parametrize("text, shared", [
    ("/home/me/shops/webshop-1k", "webshop-1k"), ("http://10.0.0.5:8000/v1", "(server address)"),
    ("hf:/models/qwen7b", "hf:qwen7b"), ("C:\\Users\\me\\run.jsonl", "run.jsonl"), ("~/runs/a.jsonl", "a.jsonl"),
    ("cannot load /a/b/c (missing)", "cannot load c (missing)"), ("runs/qwen.jsonl", "runs/qwen.jsonl"),
    ("status 500: internal error", "status 500: internal error"), ("3/4 inch, and/or", "3/4 inch, and/or")])
def test_what_is_shared_cuts_paths_and_addresses_and_nothing_else(text, shared):
    from webshop_gym.runs.sharing import shareable, shareable_text

    assert shareable_text(text) == shared
    assert shareable({"a": [text, 3, None]}) == {"a": [shared, 3, None]}
