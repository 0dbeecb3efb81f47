"""The small ones of issue 56, as a person meets them: the bundle and its report, the run page, an episode's sample.

* the bundle's index links to the report written with it and the report back; no dead "new game";
  ``--bundle x.zip`` writes one zip file;
* a sampled run's page has an in-page menu to its failure tags (above a long goal list), names the
  shop by its folder and data-file digests (not its path), and its examples are distinct goals, in
  the report too; an episode page says which sample it is.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from urllib.parse import unquote

import pytest
from bs4 import BeautifulSoup

from tests.helpers import CoinPolicy
from webshop_gym.cli.app import main
from webshop_gym.evaluation.local import evaluate
from webshop_gym.reporting.report import build_report, failure_tags
from webshop_gym.runs.index import RunIndex

K, GOALS = 3, 8


Coin = CoinPolicy


@pytest.fixture(scope="module")
def runs(tmp_path_factory, default_shop) -> Path:
    folder = tmp_path_factory.mktemp("small-ones")
    for name, p in (("first", 0.5), ("second", 0.2)):
        evaluate(lambda p=p: Coin(default_shop, p), shop=default_shop, num_goals=GOALS, samples=K, num_envs=4,
                 out=folder / f"{name}.jsonl", keep_episodes=False)
    return folder


def _soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def test_the_bundle_and_its_report_link_to_each_other(runs, tmp_path, capsys):
    share = tmp_path / "share"
    share.mkdir()
    assert main(["report", str(runs / "first.jsonl"), str(runs / "second.jsonl"), "--bundle", str(share),
                 "--out", str(share / "report.html"), "--no-plots"]) == 0
    capsys.readouterr()
    for page in (share / "index.html", share / "runs" / "first" / "index.html"):
        link = _soup(page).select_one("#report-link a")
        assert link is not None, page
        assert (page.parent / unquote(link["href"])).resolve() == (share / "report.html").resolve()
        assert "new game" not in page.read_text(encoding="utf-8")  # no server behind a bundle: no dead item
    back = _soup(share / "report.html").select_one("#bundle-link a")
    assert back["href"] == "index.html" and (share / back["href"]).is_file()


def test_a_zip_bundle_is_one_file_holding_one_folder(runs, tmp_path, capsys):
    out = tmp_path / "qwen.zip"
    assert main(["report", str(runs / "first.jsonl"), "--bundle", str(out), "--out", str(tmp_path / "report.md"),
                 "--no-plots"]) == 0
    err = capsys.readouterr().err
    assert "unzip it and open qwen/index.html" in err
    with zipfile.ZipFile(out) as archive:
        names = archive.namelist()
        page = BeautifulSoup(archive.read("qwen/index.html").decode("utf-8"), "html.parser")
    assert names and all(n.startswith("qwen/") for n in names) and "qwen/runs.css" in names
    assert page.select_one("#report-link a")["href"] == "../report.md"  # unzipped beside the report
    assert "[qwen/index.html](<qwen/index.html>)" in (tmp_path / "report.md").read_text(encoding="utf-8")
    # an existing zip is replaced only with --force
    assert main(["report", str(runs / "first.jsonl"), "--bundle", str(out)]) == 2
    assert "exists: pass --force" in capsys.readouterr().err
    assert main(["report", str(runs / "first.jsonl"), "--bundle", str(out), "--force"]) == 0


def test_the_run_page_menu_shop_and_examples(runs, make_viewer, default_shop):
    client = make_viewer(runs)
    soup = BeautifulSoup(client.get("/runs/first").get_data(as_text=True), "html.parser")
    menu = soup.select_one("#on-this-page")
    assert [a["href"] for a in menu.select("a")] == ["#samples-heading", "#tags-heading", "#episodes-heading"]
    assert soup.select_one("#tags-heading") is not None and soup.select_one("#episodes-heading") is not None
    shop = soup.select_one("#shop").get_text(" ", strip=True)
    assert str(default_shop.path) not in shop and "data files" in shop
    assert Path(str(default_shop.path)).name in shop
    # each tag's examples: distinct goals first (not K samples of one goal), from the run file's own tags
    index = RunIndex(runs / "first.jsonl")
    index.refresh()
    t = index.table()
    tagged: dict[str, list[int]] = {}
    for i in range(len(t)):
        tagged.setdefault(t.tag_name(i), []).append(i)

    def check(tag: str, shown: list[int]) -> None:
        goals = [int(t.goal[p]) for p in shown]
        distinct = len({int(t.goal[p]) for p in tagged[tag]})
        assert len(set(goals)) == min(len(shown), distinct) and set(shown) <= set(tagged[tag]), (tag, shown)
        assert len(shown) == min(5, len(tagged[tag]))

    rows = soup.select("#tags tr.tag-row")
    assert rows
    for row in rows:
        check(row.find("td").get_text(strip=True), [int(a.text.lstrip("#")) for a in row.select("a.example")])
    for found in failure_tags(build_report([runs / "first.jsonl"], resamples=100)):
        check(found["tag"], found["examples"])


def test_an_episode_page_names_its_sample(runs, make_viewer):
    client = make_viewer(runs)
    for position in range(0, GOALS * K, 5):
        soup = BeautifulSoup(client.get(f"/runs/first/{position}").get_data(as_text=True), "html.parser")
        sample = soup.select_one("#sample").get_text(" ", strip=True)
        assert sample.startswith(f"· sample {position % K} of {K}"), sample  # --samples K plays each goal K times in a row
