"""Runs as the viewer lists them (issue 42, items 7 and 8; issue 46, item 7).

* a run whose writer is gone says "stopped", one being written "running", and every listing of a
  run gives how many of its planned episodes are done;
* a file holding only its run line is a run (0 done), not an unreadable file;
* an errored episode has no reward: blank, with its error, in the pages and the exports;
* a goal no purchase can solve shows the options the agent could click.
"""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from tests.runs.conftest import NUM_GOALS
from webshop_gym.cli.app import main
from webshop_gym.runs.index import CSV_COLUMNS, RunIndex
from webshop_gym.runs.log import TrajectoryWriter

ROOT = Path(__file__).resolve().parents[2]


def soup_of(response, status: int = 200) -> BeautifulSoup:
    assert response.status_code == status, response.get_data(as_text=True)[:800]
    return BeautifulSoup(response.get_data(as_text=True), "html.parser")


def _listing(client) -> dict[str, dict[str, str]]:
    """The run list as a user reads it: per run name, its cells by header."""
    soup = soup_of(client.get("/runs/"))
    heads = [th.text.strip() for th in soup.select("#runs thead th")]
    rows = {}
    for tr in soup.select("#runs tbody tr"):
        cells = [td.text.strip() for td in tr.find_all("td")]
        rows[tr.find("td").find(string=True, recursive=True).strip()] = dict(zip(heads, cells))
    return rows


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


# -- item 7: stopped runs, done / planned, a header-only file -----------------------------------------------


def test_a_run_file_holding_only_its_run_line_is_listed_as_a_run(make_viewer, runs_dir, tmp_path):
    (tmp_path / "head.jsonl").write_text(_lines(runs_dir / "rule.jsonl")[0], encoding="utf-8")
    client = make_viewer(tmp_path)
    soup = soup_of(client.get("/runs/"))
    assert "cannot be read" not in soup.text
    row = _listing(client)["head"]
    assert row["done / planned"] == f"0 / {NUM_GOALS}"
    assert "stopped" in row["run"]  # no writer holds the file: it will never grow
    page = soup_of(client.get("/runs/head"))
    assert page.select_one("#progress b").text == f"0 / {NUM_GOALS}"


def test_every_listing_of_a_run_says_done_of_planned(make_viewer, runs_dir, tmp_path):
    lines = _lines(runs_dir / "rule.jsonl")
    starts = [i for i, x in enumerate(lines) if '"type": "episode"' in x]
    (tmp_path / "cut.jsonl").write_text("".join(lines[: starts[10]]), encoding="utf-8")  # 10 episodes, no summary
    (tmp_path / "rule.jsonl").write_text("".join(lines), encoding="utf-8")
    client = make_viewer(tmp_path)
    rows = _listing(client)
    assert rows["rule"]["done / planned"] == f"{NUM_GOALS} / {NUM_GOALS}" and "stopped" not in rows["rule"]["run"]
    assert rows["cut"]["done / planned"] == f"10 / {NUM_GOALS}" and "stopped" in rows["cut"]["run"]
    assert soup_of(client.get("/runs/cut")).select_one("#progress b").text == f"10 / {NUM_GOALS}"
    compare = soup_of(client.get("/runs/rule/vs/cut"))
    cells = [td.text for td in compare.select("#done-planned td")][1:]
    assert cells == [f"{NUM_GOALS} / {NUM_GOALS}", f"10 / {NUM_GOALS} stopped"]


def test_a_run_being_written_is_running_and_stopped_once_its_writer_is_gone(make_viewer, runs_dir, tmp_path):
    lines = _lines(runs_dir / "rule.jsonl")
    starts = [i for i, x in enumerate(lines) if '"type": "episode"' in x]
    writer = TrajectoryWriter(tmp_path / "live.jsonl", append=False)  # what eval --out writes with
    try:
        for line in lines[: starts[3]]:
            writer.write_line(line.rstrip("\n"))
        client = make_viewer(tmp_path)
        assert "running" in _listing(client)["live"]["run"]
        soup = soup_of(client.get("/runs/live"))
        assert soup.select_one("#live").text.startswith(f"Still running: 3 of {NUM_GOALS} episodes done")
        assert soup.select_one('meta[http-equiv="refresh"]') is not None
    finally:
        writer.close()
    row = _listing(client)["live"]
    assert "stopped" in row["run"] and "running" not in row["run"] and row["done / planned"] == f"3 / {NUM_GOALS}"
    soup = soup_of(client.get("/runs/live"))
    assert soup.select_one("#live") is None and soup.select_one('meta[http-equiv="refresh"]') is None
    assert soup.select_one("#stopped").text.startswith(f"Stopped: 3 of {NUM_GOALS} episodes done")


def test_an_eval_killed_mid_run_is_stopped(make_viewer, tmp_path):
    """A real ``eval`` process writing the run, then killed (SIGKILL: no cleanup at all)."""
    folder = tmp_path / "runs"
    folder.mkdir()
    out = folder / "killed.jsonl"
    script = textwrap.dedent(f"""
        import time
        from webshop_gym.evaluation.local import evaluate
        from webshop_gym.agents.policies import RandomPolicy

        class Slow(RandomPolicy):
            def act(self, obs, info):
                time.sleep(0.05)
                return super().act(obs, info)

        evaluate(lambda: Slow(), num_goals=200, num_envs=2, out={str(out)!r})
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    try:
        client = make_viewer(folder)
        for _ in range(600):  # until the first episodes are in the file
            if out.is_file() and out.read_text(encoding="utf-8").count('"type": "episode"') >= 2:
                break
            assert process.poll() is None, process.stderr.read().decode()
            time.sleep(0.1)
        assert "running" in _listing(client)["killed"]["run"]
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(30)
        process.stderr.close()
    row = _listing(client)["killed"]
    done = int(row["done / planned"].split(" / ")[0])
    assert "stopped" in row["run"] and row["done / planned"] == f"{done} / 200" and done < 200
    assert soup_of(client.get("/runs/killed")).select_one("#stopped") is not None


# -- item 8: an errored episode has no reward ----------------------------------------------------------------


@pytest.fixture(scope="module")
def errored_run(tmp_path_factory, default_shop):
    """A served model's run of 4 goals x 2 samples whose calls on goal 2 always fail (2 errored episodes)."""
    pytest.importorskip("openai", reason="pip install 'webshop-gym[openai]'")
    from tests.openai_server import ChatServer

    folder = tmp_path_factory.mktemp("errored")
    with ChatServer(fail_when=default_shop.goals.instruction[2]) as server:
        assert main(["eval", "--policy", "openai:scripted", "--base-url", server.url, "--num-goals", "4",
                     "--samples", "2", "--concurrency", "2", "--max-retries", "0", "--timeout", "5", "--quiet",
                     "--out", str(folder / "served.jsonl")]) == 0
    index = RunIndex(folder / "served.jsonl")
    index.refresh()
    errored = [i for i in range(index.episodes) if index.table().errored[i]]
    assert len(errored) == 2
    return folder, index, errored


def test_an_errored_episode_shows_no_reward_but_its_error(make_viewer, errored_run):
    folder, index, errored = errored_run
    client = make_viewer(folder)
    error = index.episode(errored[0]).log.record["error"]
    assert error
    soup = soup_of(client.get(f"/runs/served/{errored[0]}"))
    badge = soup.select_one("h1 .tag").text
    assert badge == "errored" and "reward" not in soup.select_one("h1").text
    assert error in soup.select_one("#episode-error").text
    heads = [th.text.strip(" ▲▼") for th in soup_of(client.get("/runs/served")).select("#episodes thead th")]
    for tr in soup_of(client.get("/runs/served")).select("#episodes tbody tr"):
        cells = dict(zip(heads, tr.find_all("td")))
        position = int(cells["#"].text)
        if position in errored:
            assert cells["reward"].text.strip() == "" and cells["success"].text.strip() == "errored"
        else:
            assert cells["reward"].text.strip() == f"{index.table().reward[position]:.3f}"
    goal = int(index.table().goal[errored[0]])
    plays = soup_of(client.get(f"/runs/served/goal/{goal}")).select("#plays-a tbody tr")
    assert [tr.select("td")[3].text for tr in plays] == ["", ""]  # both samples errored: no reward
    assert "reward" not in soup_of(client.get(f"/runs/served/goal/{goal}")).select_one("#side-1 h3").text


def test_exports_give_an_errored_episode_no_reward_and_every_episode_its_item_and_sample(make_viewer, errored_run,
                                                                                          tmp_path):
    folder, index, errored = errored_run
    client = make_viewer(folder)
    for text in (client.get("/runs/served/episodes.csv").get_data(as_text=True),
                 (main(["report", str(folder / "served.jsonl"), "--no-plots", "--csv", str(tmp_path / "r.csv"),
                        "--out", str(tmp_path / "r.md")]), (tmp_path / "r.csv").read_text(encoding="utf-8"))[1]):
        rows = list(csv.DictReader(io.StringIO(text)))
        assert len(rows) == index.episodes
        for i, row in enumerate(rows):
            fields = index.protocol_fields(i)
            assert (row["protocol.item"], row["protocol.sample"]) == (str(fields["item"]), str(fields["sample"]))
            if i in errored:
                assert row["reward"] == "" and row["success"] == "" and row["errored"] == "true" and row["error"]
            else:
                assert float(row["reward"]) == index.table().reward[i] and row["success"] in ("true", "false")
    records = [json.loads(x) for x in client.get("/runs/served/episodes.jsonl").get_data(as_text=True).splitlines()]
    assert [r["reward"] is None for r in records] == [i in errored for i in range(index.episodes)]
    assert "protocol.item" in CSV_COLUMNS


# -- issue 46, item 7: a goal no purchase can solve shows what could be clicked -------------------------------


def test_an_unreachable_goal_shows_the_options_the_agent_could_click(make_viewer, real_dir, golden_dir, real_shop,
                                                                      tmp_path):
    assert main(["eval", "--policy", "rule", "--shop", str(real_dir), "--goals", str(golden_dir / "goals.json"),
                 "--num-goals", "30", "--quiet", "--out", str(tmp_path / "rule.jsonl")]) == 0
    index = RunIndex(tmp_path / "rule.jsonl")
    index.refresh()
    table = index.table()
    position = next(i for i in range(len(table)) if table.tag_name(i) == "goal unreachable")
    episode = index.episode(position)
    target = episode.log.record["target"]["asin"]
    offered = real_shop.catalog.options_of(real_shop.catalog.row_of(target))
    assert offered
    client = make_viewer(tmp_path)
    soup = soup_of(client.get(f"/runs/rule/{position}"))
    assert soup.select_one("#failure-tag").text == "goal unreachable"
    shown = soup.select_one("#offered-options")
    assert shown is not None, "the options the target offers are not shown"
    for name, values in offered.items():
        row = shown.select_one(f'[data-option="{name}"]')
        assert row is not None, name
        assert [v.text for v in row.select(".value")] == list(values)
    # the asked option it lacks is named against them
    asked = episode.log.record["target"]["options"]
    assert any(str(v) in soup.select_one("#unreachable-goal").text for v in
               (asked.values() if isinstance(asked, dict) else asked))
