"""AgentGym's env-server API under /agentgym, through a real HTTP server, as AgentGym's client calls it."""

from __future__ import annotations

import random
import threading

import pytest
import requests

from webshop_gym.compat import WebAgentTextEnv


class Client:
    """The calls of AgentGym's ``WebshopEnvClient``, written out: same URLs, bodies and checks."""

    def __init__(self, base: str):
        self.base = base
        self.http = requests.Session()
        response = self.http.post(f"{base}/create", timeout=60)
        assert response.status_code == 200, response.text
        self.env_id = response.json()

    def post(self, path: str, data: dict):
        data["env_idx"] = self.env_id
        response = self.http.post(f"{self.base}/{path}", json=data, timeout=60)
        assert response.status_code == 200, response.text
        return response.json()

    def get(self, path: str):
        response = self.http.get(f"{self.base}/{path}?env_idx={self.env_id}", timeout=60)
        assert response.status_code == 200, response.text
        return response.json()

    def reset(self, idx):
        response = self.post("reset", {"session_id": idx})
        response[0] = self.get("observation")
        return response


def test_an_agentgym_client_plays_like_the_text_env(live, default_shop):
    _, base = live()
    base += "/agentgym"
    assert requests.get(f"{base}/", timeout=30).json() == "ok"
    client = Client(base)
    assert isinstance(client.env_id, int) and 0 <= client.env_id <= 48950076
    assert client.env_id in requests.get(f"{base}/list_envs", timeout=30).json()
    reference = WebAgentTextEnv(observation_mode="text", shop=default_shop)
    obs, info = reference.reset(session=4)
    assert client.reset(4) == [obs, None]
    assert client.get("instruction_text") == reference.get_instruction_text()
    assert client.get("available_actions") == reference.get_available_actions()
    for action in ["search[" + default_shop.goals.instruction[4][:40] + "]", "click[next >]", "click[nope]", "click[< prev]"]:
        step = client.post("step", {"action": action})
        obs, reward, done, _ = reference.step(action)
        assert step == {"state": obs, "reward": float(reward), "done": done, "info": None}
        assert client.get("observation") == reference.observation
        assert client.get("available_actions") == reference.get_available_actions()
    asin = reference.get_available_actions()["clickables"][2]
    for action in [f"click[{asin}]", "click[buy now]"]:
        step = client.post("step", {"action": action})
        obs, reward, done, _ = reference.step(action)
        assert step == {"state": obs, "reward": reward, "done": done, "info": None}
    assert step["done"] is True
    state = client.get("state")
    assert set(state) == {"url", "html", "instruction_text"} and state["url"].startswith("http://127.0.0.1:3000/done/")
    assert client.post("close", {}) is True
    response = requests.get(f"{base}/observation?env_idx={client.env_id}", timeout=30)
    assert response.status_code == 404 and "POST /create" in response.json()["detail"]


def test_reset_without_a_session_draws_a_goal(live):
    _, base = live()
    base += "/agentgym"
    client = Client(base)
    obs, info = client.reset(None)
    assert obs.startswith("WebShop [SEP] Instruction: [SEP]") and info is None


@pytest.mark.parametrize(("path", "body", "loc"), [
    ("step", {"action": "click[x]"}, ["body", "env_idx"]),
    ("step", {"env_idx": 1}, ["body", "action"]),
    ("step", {"env_idx": 1.5, "action": "x"}, ["body", "env_idx"]),
    ("step", {"env_idx": "abc", "action": "x"}, ["body", "env_idx"]),
    ("step", {"env_idx": [1], "action": "x"}, ["body", "env_idx"]),
    ("step", {"env_idx": 1, "action": 3}, ["body", "action"]),
    ("reset", {"env_idx": 1, "session_id": "x"}, ["body", "session_id"]),
    ("reset", [1, 2], ["body"]),
    ("close", "null", ["body"]),
])
def test_bad_bodies_get_fastapis_422(live, path, body, loc):
    _, base = live()
    base += "/agentgym"
    response = requests.post(f"{base}/{path}", json=body, timeout=30)
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == loc and error["msg"] and error["type"]


def test_bad_json_queries_and_unknown_routes_are_json_errors(live):
    _, base = live()
    base += "/agentgym"
    response = requests.post(f"{base}/step", data="{not json", headers={"Content-Type": "application/json"}, timeout=30)
    assert response.status_code == 422 and response.json()["detail"][0]["type"] == "json_invalid"
    for query in ["", "?env_idx=", "?env_idx=x"]:
        response = requests.get(f"{base}/observation{query}", timeout=30)
        assert response.status_code == 422 and response.json()["detail"][0]["loc"][0] == "query"
    response = requests.get(f"{base}/observation?env_idx=12345", timeout=30)
    assert response.status_code == 404 and "12345" in response.json()["detail"]
    assert requests.get(f"{base}/nope", timeout=30).json() == {"detail": "Not Found"}
    response = requests.get(f"{base}/step", timeout=30)
    assert response.status_code == 405 and "detail" in response.json()
    response = requests.post(f"{base}/step", json={"env_idx": 1, "action": "x" * 70_000}, timeout=30)
    assert response.status_code == 413 and "detail" in response.json()


def test_fuzzed_bodies_never_crash(live):
    _, base = live()
    base += "/agentgym"
    client = Client(base)
    rng = random.Random(1)
    values = [None, True, 0, -1, 2**70, 1.5, "", "1", "click[buy now]", [], {}, {"a": 1}, "\u2028", "\ud800x"]
    for _ in range(150):
        body = {k: rng.choice(values + [client.env_id]) for k in rng.sample(["env_idx", "action", "session_id", "x"], rng.randint(0, 4))}
        path = rng.choice(["step", "reset", "close"])
        try:
            response = requests.post(f"{base}/{path}", json=body, timeout=30)
        except ValueError:  # a lone surrogate cannot even be sent as JSON
            continue
        assert response.status_code in (200, 404, 422), (path, body, response.status_code, response.text[:300])
        response.json()
        if path == "close" and response.status_code == 200:
            client = Client(base)


def test_live_envs_are_bounded_and_idle_ones_are_evicted(live, clock):
    app, base = live(AGENTGYM_MAX_ENVS=2, AGENTGYM_ENV_TTL=60)
    base += "/agentgym"
    a, b = Client(base), Client(base)
    response = requests.post(f"{base}/create", timeout=30)
    assert response.status_code == 503 and response.headers["Retry-After"] == "1"
    assert "all 2 environments are in use" in response.json()["detail"]
    clock.advance(30)
    b.reset(1)  # b is in use, a has been idle for 30 s
    clock.advance(40)  # a: 70 s idle, b: 40 s
    c = Client(base)  # room is made by evicting a
    assert sorted(requests.get(f"{base}/list_envs", timeout=30).json()) == sorted([b.env_id, c.env_id])
    response = requests.post(f"{base}/step", json={"env_idx": a.env_id, "action": "click[x]"}, timeout=30)
    assert response.status_code == 404 and "evicted after 60 s idle" in response.json()["detail"]
    assert app.extensions["webshop_gym_agentgym"].stats["evicted"] == 1


def test_out_of_range_session_is_a_404(live):
    _, base = live()
    base += "/agentgym"
    client = Client(base)
    response = requests.post(f"{base}/reset", json={"env_idx": client.env_id, "session_id": 10**9}, timeout=30)
    assert response.status_code == 404 and "names no goal" in response.json()["detail"]


def test_concurrent_clients_are_stepped_together_and_play_as_if_alone(live, default_shop, request):
    """32 clients step at the same moments; each one's answers are those of a text env played alone."""
    app, base = live()
    base += "/agentgym"
    envs = app.extensions["webshop_gym_agentgym"]
    n, rounds = 32, 6
    barrier = threading.Barrier(n)
    played: list = [None] * n
    errors: list = []

    def play(k: int) -> None:
        try:
            rng = random.Random(k)
            client = Client(base)
            goal = 3 * k
            first = client.reset(goal)
            log = [first]
            actions = []
            for _ in range(rounds):
                available = client.get("available_actions")
                if available["has_search_bar"]:
                    action = "search[" + " ".join(default_shop.goals.instruction[goal].split()[: rng.randint(2, 6)]) + "]"
                else:
                    action = "click[" + rng.choice(available["clickables"] + ["nope"]) + "]"
                barrier.wait(timeout=60)  # every client sends its step at the same moment
                log.append(client.post("step", {"action": action}))
                actions.append(action)
            played[k] = (goal, actions, log)
        except Exception as exc:  # reported below
            errors.append(repr(exc))
            barrier.abort()

    threads = [threading.Thread(target=play, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[:3]
    reference = WebAgentTextEnv(observation_mode="text", shop=default_shop)
    for goal, actions, log in played:
        obs, _ = reference.reset(session=goal)
        expected = [[obs, None]]
        for action in actions:
            obs, reward, done, _ = reference.step(action)
            expected.append({"state": obs, "reward": float(reward), "done": done, "info": None})
        assert log == expected
    stats = envs.stats
    assert stats["steps"] == n * rounds
    if request.node.callspec.params["live"] == "uvicorn":
        assert stats["batches"] < stats["steps"] / 2, stats  # steps that arrived together were one batch
    else:
        assert stats["batches"] == stats["steps"]  # Werkzeug: each request alone


def test_the_play_ui_and_site_are_served_beside_the_api(live):
    """Under the ASGI front, every other route reaches Flask: redirects, forms, pages, header names as Flask sends them."""
    import http.client
    from urllib.parse import urlsplit

    _, base = live()
    host, port = urlsplit(base).hostname, urlsplit(base).port
    conn = http.client.HTTPConnection(host, port, timeout=30)
    conn.request("GET", "/goal/3")
    response = conn.getresponse()
    response.read()
    headers = dict(response.getheaders())  # a plain dict: names as sent
    assert response.status == 303 and headers["Location"].startswith("/play/")
    assert headers["Server"] == "webshop-gym" or "Werkzeug" in headers["Server"]
    play = headers["Location"]
    conn.request("POST", play, body="action=search%5Bshoes%5D", headers={"Content-Type": "application/x-www-form-urlencoded"})
    response = conn.getresponse()
    response.read()
    assert response.status == 303
    conn.request("GET", play)
    response = conn.getresponse()
    page = response.read().decode()
    assert response.status == 200 and "Page 1 (Total results:" in page
    assert response.getheader("Content-Security-Policy")
    conn.close()
    page = requests.get(f"{base}/fixed_0", timeout=30)
    assert page.status_code == 200 and "WebShop" in page.text
    missing = requests.get(f"{base}/play/nope", timeout=30)
    assert missing.status_code == 404 and "text/html" in missing.headers["Content-Type"]
    too_big = requests.post(f"{base}{play}", data={"action": "x" * 70_000}, timeout=30)
    assert too_big.status_code == 413


def test_adversarial_actions_at_the_body_limit_are_answered_at_once(live):
    """Issue 46, item 1: a 64 KB step of ``[`` (the API's body limit) took 7.7 s, holding every other
    client's step; the split is linear now, so each answers in milliseconds (5 s: a wide margin)."""
    _, base = live()
    base += "/agentgym"
    client, other = Client(base), Client(base)
    client.reset(3)
    other.reset(4)
    n = 65_000  # the body (64 KB at most) holds the action and the env's id
    for action in ["[" * n, "click[" + "]" * (n - 6), "[" * (n - 2) + "\n]", "search[" + "_" * (n - 8) + "]"]:
        response = client.http.post(f"{base}/step", json={"env_idx": client.env_id, "action": action}, timeout=5)
        assert response.status_code == 200, response.text
        assert response.json()["done"] is False
        assert other.post("step", {"action": "click[nope]"})["reward"] == 0.0  # the other client is answered too
