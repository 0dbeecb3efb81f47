"""Every AgentGym API answer is strict JSON (RFC 8259): no bare NaN or Infinity, whatever the request held."""

from __future__ import annotations

import json

import requests


def strict(text: str):
    """Parse as a strict parser does: NaN, Infinity and -Infinity are errors."""

    def refuse(token):
        raise ValueError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


BODIES = [  # raw request bodies: Python's json (and FastAPI's) read NaN, Infinity and 1e400 (= inf)
    '{"env_idx": NaN, "action": "click[x]"}',
    '{"env_idx": Infinity, "action": "click[x]"}',
    '{"env_idx": -Infinity, "action": "click[x]"}',
    '{"env_idx": 1e400, "action": "click[x]"}',
    '{"env_idx": -1e400}',
    '{"env_idx": 0, "action": NaN}',
    '{"env_idx": 0, "action": [1e400, {"a": NaN}]}',
    '{"env_idx": 0, "session_id": Infinity}',
    '{"action": NaN, "other": [Infinity, -Infinity]}',
    'NaN',
    '[NaN, 1e400]',
    '1e400',
]


def test_nan_and_infinity_in_requests_never_make_bare_nan_in_answers(live):
    base = live()[1] + "/agentgym"
    http = requests.Session()
    answers = []
    for route in ("step", "reset", "close"):
        for body in BODIES:  # env 0 is not alive: a body that validates is a 404
            response = http.post(f"{base}/{route}", data=body, headers={"Content-Type": "application/json"}, timeout=60)
            assert response.status_code in (404, 422), (route, body, response.text)
            assert response.headers["Content-Type"] == "application/json"
            answer = strict(response.text)  # raises on a bare NaN/Infinity
            if response.status_code == 422:
                assert all({"type", "loc", "msg"} <= set(e) for e in answer["detail"])
            answers.append(response.status_code)
    for value in ("nan", "inf", "-Infinity", "1e400"):
        response = http.get(f"{base}/observation", params={"env_idx": value}, timeout=60)
        assert response.status_code == 422
        strict(response.text)
        answers.append(response.status_code)
    # 404: reset without a session_id (twice) and close (three times) of the bodies whose env_idx is valid
    assert answers.count(404) == 5 and answers.count(422) == len(answers) - 5 == 3 * len(BODIES) - 1


def test_non_finite_inputs_are_echoed_as_strings(live):
    base = live()[1] + "/agentgym"
    response = requests.post(f"{base}/step", data='{"env_idx": 1e400, "action": NaN}', timeout=60,
                             headers={"Content-Type": "application/json"})
    assert response.status_code == 422
    assert strict(response.text)["detail"] == [
        {"type": "finite_number", "loc": ["body", "env_idx"], "msg": "Input should be a finite number",
         "input": "Infinity"}]
    response = requests.post(f"{base}/step", data='{"env_idx": 0, "action": [NaN, -Infinity]}', timeout=60,
                             headers={"Content-Type": "application/json"})
    assert strict(response.text)["detail"][0]["input"] == "[nan, -inf]"  # a non-string echoed as its repr


def test_ordinary_answers_are_strict_json_too(live):
    base = live()[1] + "/agentgym"
    http = requests.Session()
    env_id = strict(http.post(f"{base}/create", timeout=60).text)
    strict(http.post(f"{base}/reset", json={"env_idx": env_id, "session_id": 3}, timeout=60).text)
    step = strict(http.post(f"{base}/step", json={"env_idx": env_id, "action": "search[shoes]"}, timeout=60).text)
    assert step["done"] is False and step["reward"] == 0.0
    for route in ("observation", "available_actions", "instruction_text", "state"):
        strict(http.get(f"{base}/{route}", params={"env_idx": env_id}, timeout=60).text)
    assert strict(http.get(f"{base}/list_envs", timeout=60).text) == [env_id]
    assert strict(http.post(f"{base}/close", json={"env_idx": env_id}, timeout=60).text) is True
