"""The run viewer (`serve --runs DIR`, /runs): through the Flask test client."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from bs4 import BeautifulSoup
from webshop_gym.server import create_app
from webshop_gym.server.cli import config_from_args

from tests.runs.conftest import NUM_GOALS
from tests.runs.test_runs import ScriptedLLM
from webshop_gym import WebShopEnv
from webshop_gym.cli.app import build_parser
from webshop_gym.evaluation.local import evaluate
from webshop_gym.runs.log import RecordTrajectory
from webshop_gym.runs.run import load_run


@pytest.fixture
def client(make_viewer, runs_dir):
    return make_viewer(runs_dir)


def soup_of(response) -> BeautifulSoup:
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    return BeautifulSoup(response.get_data(as_text=True), "html.parser")


def test_no_viewer_without_runs(default_shop):
    app = create_app({"TESTING": True, "SHOP": default_shop, "SEED": 0, "MAX_SESSIONS": 2})
    try:
        assert app.test_client().get("/runs/").status_code == 404
    finally:
        app.extensions["webshop_gym"].close()


def test_run_list(client, eval_json):
    soup = soup_of(client.get("/runs/"))
    heads = [th.text.strip() for th in soup.select("#runs thead th")]
    rows = {r.select_one("a.run-link").text: dict(zip(heads, (td.text.strip() for td in r.find_all("td"))))
            for r in soup.select("#runs tbody tr")}
    assert set(rows) == {"rule", "random", "oracle"}
    for name, cells in rows.items():
        assert cells["policy / model"] == name and cells["split"] == "test" and cells["episodes"] == str(NUM_GOALS)
        assert cells["prompt"] == "-" and cells["seed"] == "0" and cells["shop"] == "data (1000 products)"
        assert cells["goal set"].split()[0] == eval_json[name]["fingerprint"]["goal_set"]
        assert cells["Score [95% CI]"].split()[0] == f"{eval_json[name]['score']:.1f}"
        assert cells["SR % [95% CI]"].split()[0] == f"{eval_json[name]['sr']:.1f}"
    assert "Wilson" in soup.select_one("#method").text and "bootstrap" in soup.select_one("#method").text
    response = client.get("/runs/?a=rule&b=oracle")
    assert response.status_code == 303 and response.headers["Location"].endswith("/runs/rule/vs/oracle")


def _table(soup) -> list[dict]:
    heads = [th.text.strip(" ▲▼") for th in soup.select("#episodes thead th")]
    return [dict(zip(heads, (td.text.strip() for td in tr.find_all("td")))) for tr in soup.select("#episodes tbody tr")]


def test_run_page_sorts_and_filters(client, runs_dir):
    run = load_run(runs_dir / "random.jsonl")
    rows = _table(soup_of(client.get("/runs/random")))
    assert [int(r["#"]) for r in rows] == list(range(NUM_GOALS))
    assert [float(r["reward"]) for r in rows] == [round(e.reward, 3) for e in run.episodes]
    assert [r["parts short"] for r in rows] == [", ".join(e.causes) for e in run.episodes]
    by_reward = _table(soup_of(client.get("/runs/random?sort=reward&desc=1")))
    rewards = [float(r["reward"]) for r in by_reward]
    assert rewards == sorted(rewards, reverse=True)
    steps = [int(r["steps"]) for r in _table(soup_of(client.get("/runs/random?sort=steps")))]
    assert steps == sorted(steps)
    failed = _table(soup_of(client.get("/runs/random?outcome=failure")))
    assert len(failed) == sum(not e.success for e in run.episodes) and all(r["success"] == "failed" for r in failed)
    cause = next((e.cause for e in run.episodes if e.cause), "type")
    with_cause = _table(soup_of(client.get(f"/runs/random?cause={cause}")))
    assert len(with_cause) == sum(cause in e.causes for e in run.episodes)
    word = run.episodes[3].instruction.split()[2]
    found = _table(soup_of(client.get(f"/runs/random?q={word.upper()}")))
    assert found and all(word.lower() in r["instruction"].lower() for r in found)
    category = run.episodes[0].category
    assert all(r["category"] == category for r in _table(soup_of(client.get(f"/runs/random?category={category}"))))
    assert client.get("/runs/random?sort=nonsense").status_code == 400


def test_step_pages_are_the_envs_html(client, runs_dir, default_shop):
    # The rule run is a text-mode run: its pages are re-created in html mode.
    run = load_run(runs_dir / "rule.jsonl")
    env = WebShopEnv(shop=default_shop, observation_mode="html", max_steps=15)
    for position in (0, 7):
        episode = run.episodes[position]
        html, _ = env.reset(options={"goal_index": episode.goal_index})
        pages = [html] + [env.step(s["action"])[0] for s in episode.log.steps]
        for k, expected in enumerate(pages):
            response = client.get(f"/runs/rule/{position}/page/{k}")
            assert response.status_code == 200 and response.mimetype == "text/html"
            assert response.get_data(as_text=True) == expected
        assert client.get(f"/runs/rule/{position}/page/{len(pages)}").status_code == 404
    response = client.get("/runs/rule/0/page/0")
    assert "frame-ancestors 'self'" in response.headers["Content-Security-Policy"]
    assert response.headers["X-Frame-Options"] == "SAMEORIGIN"
    assert "frame-ancestors 'none'" in client.get("/runs/rule").headers["Content-Security-Policy"]


def test_episode_stepper(client, runs_dir):
    run = load_run(runs_dir / "rule.jsonl")
    episode = run.episodes[2]
    n = len(episode.log.steps)
    soup = soup_of(client.get("/runs/rule/2?step=1"))
    assert soup.select_one("#page")["src"].endswith("/runs/rule/2/page/1?mark=1")
    assert soup.select_one("#page")["sandbox"] == ["allow-same-origin"]  # no scripts, no forms, no top navigation
    assert soup.select_one("#action").text == episode.log.steps[1]["action"]
    assert soup.select_one("#observation").text == episode.log.steps[0]["observation"]
    assert soup.select_one("#next")["href"] == "?step=2" and soup.select_one("#prev")["href"] == "?step=0"
    assert [li.text for li in soup.select("#step-list li")] == [s["action"] for s in episode.log.steps]
    end = soup_of(client.get(f"/runs/rule/2?step={n}"))
    # the outcome shows the breakdown (not the bare done page) and links the env's page
    assert end.select_one("#next") is None and end.select_one("#page") is None
    assert end.select_one("#raw-done")["href"].endswith(f"/page/{n}")
    board = end.select_one(".score-board").text
    assert f"{episode.reward:.3f}" in board and episode.log.steps[-1]["purchased_asin"].upper() in board
    assert episode.log.record["target"]["asin"] in board and "The instruction asked for" in board
    assert client.get(f"/runs/rule/2?step={n + 1}").status_code == 404
    assert client.get("/runs/rule/2?step=x").status_code == 400
    assert client.get(f"/runs/rule/{NUM_GOALS}").status_code == 404


def test_model_output_is_shown(make_viewer, tmp_path, default_shop):
    evaluate(ScriptedLLM(), shop=default_shop, num_envs=2, num_goals=2, out=tmp_path / "llm.jsonl")
    client = make_viewer(tmp_path)
    soup = soup_of(client.get("/runs/llm/0?step=1"))
    assert soup.select_one("#model-response").text == "<think>step 1</think><answer>click[the best one]</answer>"
    assert "not admissible" in soup.select_one("#model-parse").text
    assert "<think>" not in client.get("/runs/llm/0?step=1").get_data(as_text=True)  # escaped


def test_everything_is_escaped(make_viewer, tmp_path, default_shop):
    nasty = "<script>alert(1)<\\script>"  # a file name cannot hold "/"
    log = tmp_path / f"{nasty}.jsonl"
    env = RecordTrajectory(WebShopEnv(shop=default_shop), log)
    env.reset(options={"goal_index": 0})
    env.step("search[<script>alert(1)</script>]")
    env.step(b"<img src=x onerror=alert(1)>")
    env.close()
    client = make_viewer(tmp_path)
    pages = [client.get("/runs/"), client.get(f"/runs/{nasty}"), client.get(f"/runs/{nasty}/0?step=1"),
             client.get(f"/runs/{nasty}/0?step=2"), client.get(f"/runs/{nasty}/vs/{nasty}"),
             client.get(f"/runs/{nasty}/vs/{nasty}/0")]
    for response in pages:
        text = response.get_data(as_text=True)
        assert response.status_code == 200 and "<script>alert" not in text and "<img src=x" not in text
    step = soup_of(pages[2])  # before action 2
    assert step.select_one("#action").text == "(not a string: bytes b'<img src=x onerror=alert(1)>')"
    # The env's own page escapes the search too
    page = client.get(f"/runs/{nasty}/0/page/1").get_data(as_text=True)
    assert "<script>alert" not in page


def test_unreadable_and_unreplayable_runs(make_viewer, tmp_path, runs_dir):
    shutil.copy(runs_dir / "rule.jsonl", tmp_path / "rule.jsonl")
    (tmp_path / "broken.jsonl").write_text('{"type": "episode"}\n', encoding="utf-8")
    lines = (runs_dir / "rule.jsonl").read_text(encoding="utf-8").splitlines()
    head = json.loads(lines[0])
    head["shop"]["path"] = str(tmp_path / "gone")
    (tmp_path / "moved.jsonl").write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not a run", encoding="utf-8")
    client = make_viewer(tmp_path)
    soup = soup_of(client.get("/runs/"))
    broken = soup.select_one("#runs tr.broken").text
    assert "broken" in broken and "line 1: episode record has no 'episode'" in broken
    assert len(soup.select("#runs tbody tr")) == 3  # the .txt file is not a run
    assert client.get("/runs/broken").status_code == 422
    moved = soup_of(client.get("/runs/moved/0?step=1"))
    assert "cannot be re-created" in moved.select_one(".banner").text
    assert moved.select_one("#logged-page").text == load_run(tmp_path / "moved.jsonl").episodes[0].log.steps[0]["observation"]
    assert client.get("/runs/moved/0/page/0").status_code == 404
    assert client.get("/runs/..%2Frule").status_code == 404


def test_compare(client, runs_dir):
    rule, oracle = load_run(runs_dir / "rule.jsonl"), load_run(runs_dir / "oracle.jsonl")
    soup = soup_of(client.get("/runs/rule/vs/oracle"))
    rows = soup.select("#goals tbody tr")
    assert len(rows) == NUM_GOALS
    better = sum(o.reward > r.reward for r, o in zip(rule.episodes, oracle.episodes))
    assert f"oracle better on {better}," in soup.select_one("#summary").text
    differ = soup_of(client.get("/runs/rule/vs/oracle?show=b")).select("#goals tbody tr")
    assert len(differ) == better
    side = soup_of(client.get("/runs/rule/vs/oracle/5"))
    names = [h.find("a").text for h in side.select(".side h3")]
    assert names == ["rule", "oracle"] and len(side.select(".side iframe")) == 2
    assert client.get("/runs/rule/vs/oracle/999").status_code == 404
    assert client.get("/runs/rule/vs/nope").status_code == 404


def test_serve_runs_flag(tmp_path, runs_dir, capsys):
    args = build_parser().parse_args(["serve", "--runs", str(runs_dir)])
    assert config_from_args(args)["RUNS"] == str(runs_dir)
    for bad in (str(tmp_path / "missing"), str(runs_dir / "rule.jsonl")):
        with pytest.raises(SystemExit) as exit_info:
            build_parser().parse_args(["serve", "--runs", bad])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert re.search(r"argument --runs: .*(does not exist|expected a directory)", err), err


def test_a_growing_log_is_read_again(make_viewer, tmp_path, default_shop):
    log = tmp_path / "live.jsonl"
    env = RecordTrajectory(WebShopEnv(shop=default_shop), log)
    env.reset(options={"goal_index": 3})
    env.step("search[tea]")
    client = make_viewer(tmp_path)
    assert client.get("/runs/live/0/page/1").status_code == 200
    assert client.get("/runs/live/0/page/2").status_code == 404
    env.step("click[next >]")  # the episode goes on while the viewer is open
    env.close()
    assert client.get("/runs/live/0/page/2").status_code == 200
    assert soup_of(client.get("/runs/live/0?step=1")).select_one("#action").text == "click[next >]"
