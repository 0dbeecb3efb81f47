"""The viewer's diagnosis, paging of a 50,000-episode run, exports and comparisons (Flask test client).

The diagnosis tests read the ``scripted_runs`` fixture (``tests/runs/conftest.py``): a run whose
episodes fail in known ways.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil

from bs4 import BeautifulSoup
from webshop_gym.server import create_app

from tests.runs.conftest import first_with_tag, write_run
from webshop_gym.runs.index import CSV_COLUMNS, EXPORT_COLUMNS, RunIndex, csv_value


def soup_of(response) -> BeautifulSoup:
    assert response.status_code == 200, response.get_data(as_text=True)[:800]
    return BeautifulSoup(response.get_data(as_text=True), "html.parser")


def test_wrong_product_diagnosis(make_viewer, scripted_runs, default_shop):
    client = make_viewer(scripted_runs)
    position = first_with_tag(scripted_runs, "scripted", "opened but wrong product bought")
    index = RunIndex(scripted_runs / "scripted.jsonl")
    index.refresh()
    episode = index.episode(position)
    soup = soup_of(client.get(f"/runs/scripted/{position}"))
    assert soup.select_one("#failure-tag").text == "opened but wrong product bought"
    bought = episode.last["purchased_asin"]
    target = episode.log.record["target"]
    assert soup.select_one("#bought-title").text == default_shop.catalog.title[default_shop.catalog.row_of(bought)]
    assert soup.select_one("#target-title").text == target["title"] != soup.select_one("#bought-title").text
    assert "another product" in soup.select_one("#bought-product").text
    seen = soup.select_one("#seen").text
    assert "first appeared on a results page after step 1" in seen and "opened at step 2" in seen
    ranks = [td.text.strip() for td in soup.select("#searches td.rank")]
    assert len(ranks) == 1 and re.fullmatch(r"#(\d+), page (\d+) \(of 50 results\)", ranks[0])
    rank, page_no = map(int, re.fullmatch(r"#(\d+), page (\d+).*", ranks[0]).groups())
    assert page_no == (rank - 1) // 10 + 1
    assert soup.select_one("#searches td.query").text.startswith(episode.instruction[:20])


def test_wrong_option_diagnosis(make_viewer, scripted_runs):
    client = make_viewer(scripted_runs)
    position = first_with_tag(scripted_runs, "scripted", "right product, option not clicked")
    index = RunIndex(scripted_runs / "scripted.jsonl")
    index.refresh()
    target = index.episode(position).log.record["target"]
    soup = soup_of(client.get(f"/runs/scripted/{position}"))
    assert soup.select_one("#failure-tag").text == "right product, option not clicked"
    assert "the target" in soup.select_one("#bought-product").text
    missed = soup.select_one("#miss-options").text
    for name, value in target["options"].items():
        assert f"{name}: {value}" in missed
    # the scripted policy clicks no option: each asked one is offered by the target, and was not clicked
    spans = [s.text.strip() for s in soup.select("#options span")]
    assert spans == [f"{name}: {value}: ✗ (nothing chosen) · offered, not clicked"
                     for name, value in target["options"].items()]
    for name, value in target["options"].items():
        assert f"{name}: {value}: offered, not clicked" in missed
    assert "✓" in soup.select_one("#price").text or "over the cap" in soup.select_one("#miss-price").text


def test_never_retrieved_diagnosis(make_viewer, scripted_runs):
    client = make_viewer(scripted_runs)
    position = first_with_tag(scripted_runs, "scripted", "target not on the pages seen")
    soup = soup_of(client.get(f"/runs/scripted/{position}"))
    assert soup.select_one("#failure-tag").text == "target not on the pages seen"
    assert [td.text.strip() for td in soup.select("#searches td.rank")] == ["not in the top 50"]
    assert "none of the results pages" in soup.select_one("#seen").text
    assert "never opened" in soup.select_one("#seen").text
    # the outcome shows the breakdown with the named misses, not the env's bare done page
    index = RunIndex(scripted_runs / "scripted.jsonl")
    index.refresh()
    n = index.episode(position).steps
    end = soup_of(client.get(f"/runs/scripted/{position}?step={n}"))
    assert end.select_one(".score-board") is not None and end.select_one("#page") is None


def test_run_page_lists_tags_with_examples(make_viewer, scripted_runs):
    client = make_viewer(scripted_runs)
    index = RunIndex(scripted_runs / "scripted.jsonl")
    index.refresh()
    soup = soup_of(client.get("/runs/scripted"))
    rows = {tr.find("td").text: tr for tr in soup.select("#tags tr.tag-row")}
    assert set(rows) == {t for t, c in index.tag_counts().items() if c and t != "solved"}
    for tag, row in rows.items():
        first = row.select_one("a.example")["href"]
        position = int(first.rsplit("/", 1)[1])
        assert index.table().tag_name(position) == tag
    filtered = soup_of(client.get("/runs/scripted?tag=target+not+on+the+pages+seen"))
    shown = [tr.select_one("td.failure-tag").text for tr in filtered.select("#episodes tbody tr")]
    assert shown and set(shown) == {"target not on the pages seen"}
    assert client.get("/runs/scripted?tag=nonsense").status_code == 400


def write_large_run(path, template, episodes: int) -> list[float]:
    """A run of ``episodes`` small episodes (one search, one purchase) with varied rewards; return the rewards."""
    header = json.loads(template.read_text(encoding="utf-8").splitlines()[0])
    rewards = []
    with open(path, "w", encoding="utf-8") as out:
        out.write(json.dumps(header) + "\n")
        for i in range(episodes):
            r = (i * 7919 % 101) / 100
            rewards.append(r)
            eid = f"e{i}"
            out.write(json.dumps({"type": "episode", "episode": eid, "goal_index": i % 500,
                                  "instruction": f"goal {i}: a thing", "category": ("a", "b", "c")[i % 3],
                                  "target": {"asin": "B000000001", "title": "t", "attributes": [], "options": {},
                                             "price_upper": 10.0}}) + "\n")
            out.write(json.dumps({"type": "step", "episode": eid, "step": 1, "action": "search[thing]",
                                  "page": "results", "reward": 0.0, "terminated": False, "truncated": False,
                                  "invalid_action": False}) + "\n")
            if i % 4:
                out.write(json.dumps({"type": "step", "episode": eid, "step": 2, "action": "click[buy now]",
                                      "page": "done", "reward": r, "terminated": True, "truncated": False,
                                      "invalid_action": False, "purchased_asin": "B000000002",
                                      "reward_info": {"r_type": 1.0, "r_att": r, "r_price": True}}) + "\n")
            else:
                rewards[-1] = 0.0
    return rewards


def test_paging_and_sorting_of_a_50000_episode_run(make_viewer, runs_dir, tmp_path):
    rewards = write_large_run(tmp_path / "big.jsonl", runs_dir / "rule.jsonl", 50_000)
    client = make_viewer(tmp_path, RUNS_INDEX_INLINE_BYTES=1 << 30)
    soup = soup_of(client.get("/runs/big"))
    assert len(soup.select("#episodes tbody tr")) == 100
    assert soup.select_one("#shown").text.startswith("50,000 of 50,000 episodes · page 1 of 500")
    expected = sorted(range(len(rewards)), key=lambda i: -rewards[i])  # stable: positions ascend among ties
    got = []
    for page in (1, 2, 250, 500):
        rows = soup_of(client.get(f"/runs/big?sort=reward&desc=1&page={page}")).select("#episodes tbody tr")
        got = [int(tr.find("td").text) for tr in rows]
        assert got == expected[(page - 1) * 100 : page * 100]
    assert client.get("/runs/big?sort=reward&desc=1&page=501").status_code == 404
    by_steps = soup_of(client.get("/runs/big?sort=steps&per=1000")).select("#episodes tbody tr")
    assert len(by_steps) == 1000 and {int(tr.find("td").text) % 4 for tr in by_steps} == {0}  # one-step episodes first
    found = soup_of(client.get("/runs/big?q=GOAL+4999:"))
    assert [int(tr.find("td").text) for tr in found.select("#episodes tbody tr")] == [4999]
    unbought = soup_of(client.get("/runs/big?tag=never+searched"))
    assert "0 of 50,000" in unbought.select_one("#shown").text
    no_purchase = soup_of(client.get("/runs/big?tag=no+purchase&page=2"))
    assert no_purchase.select_one("#shown").text.startswith("12,500 of 50,000 episodes · page 2 of 125")
    for bad in ("per=1001", "page=0", "page=x", "sort=nope", "outcome=maybe"):
        assert client.get(f"/runs/big?{bad}").status_code == 400
    episode = soup_of(client.get("/runs/big/49999"))
    assert "goal 49999" in episode.text


def test_export_equals_eval_json_episodes(make_viewer, tmp_path):
    _, result = write_run(tmp_path, "oracle", "oracle", extra=["--episodes"])
    expected = result["episodes_detail"]
    client = make_viewer(tmp_path)
    response = client.get("/runs/oracle/episodes.jsonl")
    assert response.status_code == 200 and response.mimetype == "application/x-ndjson"
    lines = [json.loads(line) for line in response.get_data(as_text=True).splitlines()]
    assert len(lines) == len(expected)
    for line, record in zip(lines, expected):
        assert {k: line[k] for k in record} == record
        assert set(line) - set(record) == set(EXPORT_COLUMNS)
    response = client.get("/runs/oracle/episodes.csv")
    assert response.status_code == 200 and "attachment" in response.headers["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.get_data(as_text=True))))
    assert list(rows[0]) == list(CSV_COLUMNS) and len(rows) == len(expected)
    for row, record in zip(rows, expected):
        for key, value in record.items():
            if key == "reward_info":
                for part, v in value.items():
                    assert row[f"reward_info.{part}"] == csv_value(v)
            else:
                assert row[key] == csv_value(value), key
    failed = client.get("/runs/oracle/episodes.jsonl?outcome=failure").get_data(as_text=True).splitlines()
    assert len(failed) == sum(not r["success"] for r in expected)
    assert client.get("/runs/oracle/episodes.xml").status_code == 404


def test_comparison_refused_across_shops_and_goal_sets(make_viewer, runs_dir, tmp_path):
    shutil.copy(runs_dir / "rule.jsonl", tmp_path / "rule.jsonl")
    write_run(tmp_path, "priced", "rule", extra=["--price-seed", "1"])  # the same catalog, another goal set
    lines = (runs_dir / "oracle.jsonl").read_text(encoding="utf-8").splitlines()
    head = json.loads(lines[0])
    head["fingerprint"] = dict(head["fingerprint"], files={"items_shuffle.json": "0" * 16}, products=999)
    (tmp_path / "elsewhere.jsonl").write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n", encoding="utf-8")
    shutil.copy(runs_dir / "oracle.jsonl", tmp_path / "oracle.jsonl")
    client = make_viewer(tmp_path)
    for other, what in (("priced", "they played different episodes (24 episodes of goals 0-23 at price seed 0 vs "
                                   "24 episodes of goals 0-23 at price seed 1)"),
                        ("elsewhere", "they played different shop (`data`: 1,000 products, 3,887 synthetic goals")):
        soup = soup_of(client.get(f"/runs/rule/vs/{other}"))
        refused = soup.select_one("#refused").text
        assert f"Not compared goal by goal: {what}" in refused and soup.select_one("#goals") is None
        assert "better on" not in soup.select_one("#summary").text
        assert len(soup.select("#summary tr")) >= 8  # the figures side by side
        assert client.get(f"/runs/rule/vs/{other}/0").status_code == 409
    same = soup_of(client.get("/runs/rule/vs/oracle"))
    assert same.select_one("#refused") is None and len(same.select("#goals tbody tr")) == 24


def test_start_page_links_to_runs(make_viewer, runs_dir, default_shop):
    client = make_viewer(runs_dir)
    link = soup_of(client.get("/")).select_one("#runs-link a")
    assert link["href"] == "/runs/"
    app = create_app({"TESTING": True, "SHOP": default_shop, "SEED": 0, "MAX_SESSIONS": 2})
    try:
        assert soup_of(app.test_client().get("/")).select_one("#runs-link") is None
    finally:
        app.extensions["webshop_gym"].close()


def test_unreachable_goals_are_shown(make_viewer, runs_dir, eval_json):
    client = make_viewer(runs_dir)
    soup = soup_of(client.get("/runs/oracle"))
    assert soup.select_one("#unreachable b").text == str(eval_json["oracle"]["unreachable"])
    assert soup.select("#unreachable small")[-1].text == f"SR on the others {eval_json['oracle']['sr_reachable']:.1f}%"


def _long_episode(shop, path, steps: int) -> list[str]:
    """Log one episode of ``steps`` actions (a search, then results pages forwards and back, no step cap)
    to ``path``; return the env's HTML page after each number of actions (0 to ``steps``)."""
    from webshop_gym import WebShopEnv
    from webshop_gym.runs.log import RecordTrajectory

    actions = ["search[shoes]"] + ["click[next >]" if k % 2 == 0 else "click[< prev]" for k in range(steps - 1)]
    env = RecordTrajectory(WebShopEnv(shop=shop, max_steps=None), path)
    env.reset(options={"goal_index": 0})
    for action in actions:
        env.step(action)
    env.close()
    plain = WebShopEnv(shop=shop, max_steps=None, observation_mode="html")
    html, _ = plain.reset(options={"goal_index": 0})
    return [html] + [plain.step(a)[0] for a in actions]


def test_long_episode_pages_from_checkpoints(make_viewer, tmp_path, default_shop):
    """A 1,200-step episode: every page asked for, in any order, is exactly the env's, and windows are cached."""
    pages = _long_episode(default_shop, tmp_path / "long.jsonl", 1200)
    client = make_viewer(tmp_path)
    library = client.application.extensions["webshop_gym_runs"]
    for k in (0, 900, 901, 1200, 300, 2, 650):
        response = client.get(f"/runs/long/0/page/{k}")
        assert response.status_code == 200 and response.get_data(as_text=True) == pages[k], k
    index = library.state(tmp_path / "long.jsonl").index
    replayed = library.replayed(index, library.episode(index, 0), 650)
    assert sorted(replayed.checkpoints) == [0, 500, 1000] and len(replayed.pages) <= 2 * 100 + 5
    soup = soup_of(client.get("/runs/long/0?step=650"))
    listed = [int(a["href"].split("=")[1]) for a in soup.select("#step-list a")]
    assert listed == list(range(600, 701)) and "… 600 earlier actions" in soup.text


def test_errored_episodes_are_tagged_and_exported(make_viewer, runs_dir, tmp_path):
    lines = (runs_dir / "rule.jsonl").read_text(encoding="utf-8").splitlines()
    out, marked = [], None
    for line in lines:
        record = json.loads(line)
        if record["type"] == "episode" and marked is None:
            record["errored"], marked = True, record["episode"]
        out.append(json.dumps(record))
    (tmp_path / "served.jsonl").write_text("\n".join(out) + "\n", encoding="utf-8")
    client = make_viewer(tmp_path)
    soup = soup_of(client.get("/runs/served?tag=errored"))
    assert [int(tr.find("td").text) for tr in soup.select("#episodes tbody tr")] == [0]
    assert soup_of(client.get("/runs/served/0")).select_one("#failure-tag").text == "errored"
    exported = [json.loads(x) for x in client.get("/runs/served/episodes.jsonl").get_data(as_text=True).splitlines()]
    assert exported[0]["errored"] is True and exported[0]["tag"] == "errored"
    assert all("errored" not in e for e in exported[1:])  # missing means false


def test_seeds_of_one_setting_aggregate(make_viewer, tmp_path):
    import statistics

    figures = [write_run(tmp_path, f"random-{seed}", "random", seed=seed)[1] for seed in (0, 1, 2)]
    client = make_viewer(tmp_path)
    soup = soup_of(client.get("/runs/"))
    rows = soup.select("#seeds tbody tr")
    assert len(rows) == 1
    cells = [td.text for td in rows[0].find_all("td")]
    assert cells[4] == "0, 1, 2" and cells[5] == "random-0, random-1, random-2"
    scores = [f["score"] for f in figures]
    assert cells[6] == f"{statistics.mean(scores):.1f} ± {statistics.stdev(scores):.1f}"
    from webshop_gym.reporting.report import build_report, tables

    report = build_report([tmp_path / f"random-{seed}.jsonl" for seed in (0, 1, 2)], resamples=200)
    header, rows = tables(report)["seeds"]
    assert len(rows) == 1 and rows[0][4] == "0, 1, 2"
    assert rows[0][6] == f"{statistics.mean(scores):.1f} ± {statistics.stdev(scores):.1f}"


def test_viewer_intervals_leave_errored_episodes_out(runs_dir, tmp_path):
    # the run page's Score/SR intervals are over the scored episodes, as eval and the report count them
    from webshop_gym.server.run_summary import stats_of

    from webshop_gym.analysis.intervals import RESAMPLES, score_interval, sr_interval
    from webshop_gym.runs.index import RunIndex

    original = RunIndex(runs_dir / "rule.jsonl")
    original.refresh()
    wins = [i for i in range(len(original.table())) if original.table().success[i]][:3]
    assert len(wins) == 3
    lines = (runs_dir / "rule.jsonl").read_text(encoding="utf-8").splitlines()
    out, position = [], -1
    for line in lines:
        record = json.loads(line)
        if record["type"] == "episode":
            position += 1
            if position in wins:
                record["errored"] = True  # successes marked errored: counting them would raise SR
        out.append(json.dumps(record))
    (tmp_path / "served.jsonl").write_text("\n".join(out) + "\n", encoding="utf-8")
    index = RunIndex(tmp_path / "served.jsonl")
    index.refresh()
    table = index.table()
    keep = [i for i in range(len(table)) if table.tag_name(i) != "errored"]
    assert len(keep) == len(table) - 3
    stats = stats_of(index)
    assert stats["sr"] == sr_interval(table.success[keep])
    assert stats["score"] == score_interval(table.reward[keep], RESAMPLES, 0)
    assert stats["sr"] != sr_interval(table.success)


def test_a_long_episode_is_replayed_and_checked_only_as_far_as_the_pages_opened(make_viewer, tmp_path, default_shop):
    """Opening step 100 of 600 replays 200 steps; a difference planted at step 500 shows once step 450+ is opened."""
    pages = _long_episode(default_shop, tmp_path / "long.jsonl", 600)
    lines = (tmp_path / "long.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    planted = next(r for r in records if r["type"] == "step" and r["step"] == 500)
    planted["page"] = "item"  # the env is on a results page there
    (tmp_path / "long.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")

    client = make_viewer(tmp_path)
    library = client.application.extensions["webshop_gym_runs"]
    index = library.state(tmp_path / "long.jsonl").index
    episode = library.episode(index, 0)
    soup = soup_of(client.get("/runs/long/0?step=100"))
    replayed = library.replayed(index, episode, 100)
    assert (replayed.made, replayed.complete, replayed.problem) == (201, False, "")
    assert "actions 1 to 200 of 600 were replayed and checked" in soup.select_one("#checked").text
    assert not soup.select(".banner-warn")
    for k in (100, 450, 60, 599, 600):  # within, beyond (goes on from step 200), behind (from a snapshot), the end
        response = client.get(f"/runs/long/0/page/{k}")
        assert response.status_code == 200 and response.get_data(as_text=True) == pages[k], k
    replayed = library.replayed(index, episode, 600)
    assert replayed.complete and replayed.made == 601 and replayed.problem.startswith("step 500: page differs")
    soup = soup_of(client.get("/runs/long/0?step=100"))
    assert not soup.select("#checked") and "step 500: page differs" in soup.select_one(".banner-warn").text
