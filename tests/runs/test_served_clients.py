"""`eval --policy openai:MODEL` writes the same run through either HTTP client (issue 44): results, tokens,
retries, errors and resume, line for line apart from timings, the built-in client against the official one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("openai", reason="pip install 'webshop-gym[openai]' to run the served-model tests")

from tests.openai_server import ChatServer  # noqa: E402
from webshop_gym.cli.app import main  # noqa: E402
from webshop_gym.runs.log import read_log  # noqa: E402

FAULTS = {"429": 0.06, "500": 0.06, "malformed": 0.05, "drop": 0.05, "timeout": 0.03}


@pytest.fixture(autouse=True)
def _fast_backoff(fast_backoff):
    """Retries wait 1-20 ms here (the policy's backoff), so fault tests stay quick."""


def _normalized(path: Path) -> list[dict]:
    """Every line of a run file without what differs between two sessions: timings, run ids, the URL and the client."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        record.pop("latency_s", None)
        if record["type"] in ("run", "summary"):
            for key in ("run", "created", "finished"):
                record.pop(key, None)
            for key in ("http_client", "base_url", "out"):
                record.get("arguments", {}).pop(key, None)
            result = record.get("result", record)
            for key in ("wall_s", "steps_per_s", "env_steps"):  # env_steps: how many answers arrived together
                result.pop(key, None)
            for session in result.get("sessions") or []:
                session.pop("wall_s", None)
        out.append(record)
    return out


def _eval(client: str, out: Path, server, *extra: str, concurrency: int = 1) -> int:
    return main(["eval", "--policy", "openai:scripted", "--base-url", server.url, "--num-goals", "12",
                 "--concurrency", str(concurrency), "--http-client", client, "--out", str(out), "--quiet",
                 "--timeout", "0.3", "--max-retries", "2", *extra])


def test_faults_errors_and_resume_give_the_same_run_file_through_either_client(tmp_path, default_shop, capsys):
    # one request at a time, so that both clients meet the same fault at the same request
    failing = default_shop.goals.instruction[5]
    files = {}
    for client in ("openai", "builtin"):
        out = tmp_path / f"{client}.jsonl"
        with ChatServer(faults=FAULTS, fail_when=failing, retry_after="0.01", hang=0.6, seed=6) as server:
            assert _eval(client, out, server) == 0
            injected = dict(server.injected)
        first = _normalized(out)
        with ChatServer(faults=FAULTS, retry_after="0.01", hang=0.6, seed=8) as server:
            assert _eval(client, out, server, "--resume") == 0
        files[client] = (first, _normalized(out), injected)
    (first, resumed, injected) = files["builtin"]
    assert files["openai"][0] == first and files["openai"][1] == resumed and files["openai"][2] == injected
    assert all(injected[f] > 0 for f in FAULTS)  # every fault was met, in both runs
    # what the first session recorded: goal 5 errored after its retries, every fault retried and counted
    episodes = [r for r in first if r["type"] == "episode"]
    errored = [e for e in episodes if e["errored"]]
    assert 5 in [e["goal_index"] for e in errored] and all(e["error"].endswith("(after 2 retries)") for e in errored)
    assert sum(e["retries"] for e in episodes) > len(errored) * 2
    log = read_log(tmp_path / "builtin.jsonl")
    assert [e.goal_index for e in log.episodes] == list(range(12)) and not any(e.record["errored"] for e in log.episodes)
    assert log.summary["result"]["resumed"]["kept"] == 12 - len(errored)
    capsys.readouterr()


def test_many_in_flight_give_the_same_run_file_through_either_client(tmp_path, default_shop, capsys):
    for client in ("openai", "builtin"):
        with ChatServer(fail_when=default_shop.goals.instruction[3], latency=0.02) as server:
            assert _eval(client, tmp_path / f"{client}.jsonl", server, concurrency=6) == 0
            assert server.max_in_flight == 6
    assert _normalized(tmp_path / "openai.jsonl") == _normalized(tmp_path / "builtin.jsonl")
    capsys.readouterr()
