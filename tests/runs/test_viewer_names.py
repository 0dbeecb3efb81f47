"""Run files whose name without ``.jsonl`` is only dots are listed and open (``/runs/..`` would be ``/``)."""

from __future__ import annotations

import threading

import requests
from bs4 import BeautifulSoup
from webshop_gym.server import create_app

from webshop_gym import WebShopEnv
from webshop_gym.runs.log import RecordTrajectory


def test_dotted_run_names_are_listed_and_open_through_a_real_server(tmp_path, default_shop):
    from werkzeug.serving import make_server

    names = ["...jsonl", "..jsonl", "a...jsonl", "b.jsonl"]
    for goal, name in enumerate(names):
        env = RecordTrajectory(WebShopEnv(shop=default_shop), tmp_path / name)
        env.reset(options={"goal_index": goal})
        env.step("search[gift]")
        env.close()
    app = create_app({"SHOP": default_shop, "RUNS": str(tmp_path), "SEED": 0, "MAX_SESSIONS": 4})
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_port}"
    try:
        http = requests.Session()
        listing = BeautifulSoup(http.get(f"{base}/runs/", timeout=60).text, "html.parser")
        links = {a.text: a["href"] for a in listing.select("a.run-link")}
        assert sorted(links) == ["...jsonl", "..jsonl", "a..", "b"]
        for goal, name in enumerate(names):
            shown = name if name.startswith("..") else name[: -len(".jsonl")]
            response = http.get(base + links[shown], timeout=60)
            assert response.status_code == 200 and response.url == base + links[shown], name
            page = BeautifulSoup(response.text, "html.parser")
            assert page.select_one("p.notice").text.strip().endswith(f"/ {shown}"), name
            episode = page.select_one("#episodes tbody tr td a")["href"]
            stepper = http.get(base + episode, timeout=60)
            assert stepper.status_code == 200 and default_shop.goals.instruction[goal] in BeautifulSoup(stepper.text, "html.parser").text, name
    finally:
        server.shutdown()
        server.server_close()
        app.extensions["webshop_gym"].close()
        app.extensions["webshop_gym_runs"].close()
