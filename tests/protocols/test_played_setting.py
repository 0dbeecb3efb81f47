"""Issue 43 item 10: the observation mode and the prompt are protocol fields in the fingerprint.

``eval --protocol X`` plays the family's prompt format by default; a run with another prompt
records it, gets another fingerprint and says it is not the protocol's published setting.
"""

from __future__ import annotations

import copy
import json
import re

import pytest

from webshop_gym.cli.app import main
from webshop_gym.evaluation.local import evaluate
from webshop_gym.protocols import Protocol, get_protocol

pytest.importorskip("openai", reason="pip install 'webshop-gym[openai]' to run the served-model tests")


@pytest.fixture(scope="module")
def server():
    from tests.openai_server import ChatServer

    with ChatServer() as running:
        yield running


def _small(name: str, goals: int = 4) -> Protocol:
    data = copy.deepcopy(get_protocol(name).data)
    data["test"] = {"list": {"shuffle_seed": 233}, "indices": {"range": [0, goals]}}
    data.pop("train", None)
    data["price_seed"] = 0
    return Protocol(data, "")


@pytest.mark.parametrize("name, fmt, history", [("verl-agent-500", "verl-agent", 2), ("agentbench", "react", None),
                                                ("ragen", "think-answer", None)])
def test_every_protocol_names_its_familys_prompt_format(name, fmt, history):
    p = get_protocol(name)
    assert p.prompt == {"format": fmt, "history": history} and p.observation == {"mode": "text"}
    assert "prompt" in p.definition() and "observation" in p.definition()


def test_the_default_prompt_is_the_protocols_and_another_one_is_shown(server, real_dir):
    protocol = _small("verl-agent-500")
    kwargs = dict(shop=str(real_dir), protocol=protocol, base_url=server.url, max_retries=0, keep_episodes=False)
    own = evaluate("openai:scripted", **kwargs)
    record = own["protocol_record"]
    assert record["played_prompt"] == {"format": "verl-agent", "history": 2} and record["deviations"] == []
    assert record["definition"]["prompt"] == protocol.prompt
    other = evaluate("openai:scripted", prompt="react", **kwargs)
    theirs = other["protocol_record"]
    assert theirs["deviations"] == ["prompt react (every earlier step), the protocol's is verl-agent (2 earlier steps)"]
    assert theirs["fingerprint"] != record["fingerprint"] and theirs["definition"]["prompt"]["format"] == "react"
    # --json's protocol.name is the bare name; the deviation is a field of its own (issue 56 item 2)
    assert other["protocol"]["name"] == protocol.name and other["protocol"]["deviations"] == theirs["deviations"]
    assert "not its published setting: prompt react" in other["protocol"]["setting"]
    rule = evaluate("rule", shop=str(real_dir), protocol=protocol, keep_episodes=False)["protocol_record"]
    assert rule["played_prompt"] is None and rule["deviations"] == [] and rule["fingerprint"] == record["fingerprint"]


def test_a_format_the_policy_cannot_read_falls_back_and_says_so(real_dir):
    """agentbench-fc's tools (function calling) is a served model's format: an hf: policy would read think-answer."""
    from webshop_gym.evaluation.plan import choose_prompt

    fc = get_protocol("agentbench-fc")
    assert choose_prompt("openai:m", None, fc) == "tools" and choose_prompt("hf:/x", None, fc) == "think-answer"
    assert choose_prompt("rule", None, fc) is None and choose_prompt("openai:m", "react", fc) == "react"
    played, deviations = fc.played(prompt={"format": "think-answer", "history": None})
    assert deviations == ["prompt think-answer (every earlier step), the protocol's is tools (every earlier step)"]


def test_eval_prints_the_deviation_and_report_keeps_the_row_apart(server, real_dir, tmp_path, capsys):
    runs = []
    for prompt in (None, "react"):
        out = tmp_path / f"{prompt or 'own'}.jsonl"
        argv = ["eval", "--quiet", "--policy", "openai:scripted", "--base-url", server.url, "--shop", str(real_dir),
                "--protocol", "verl-agent-500", "--shard", "0/100", "--max-retries", "0", "--out", str(out)]
        assert main(argv + (["--prompt", prompt] if prompt else [])) == 0
        printed = capsys.readouterr().out
        row = next(line for line in printed.splitlines() if line.startswith("protocol "))
        assert row.split()[1] == "verl-agent-500,", row  # the bare name; how it was played on its own row
        played = next((line for line in printed.splitlines() if line.startswith("protocol as played ")), "")
        assert ("not its published setting" in played) == (prompt is not None), played
        header = json.loads(out.read_text().splitlines()[0])
        assert header["prompt"] == (prompt or "verl-agent")
        runs.append(str(out))
    assert main(["report", *runs, "--format", "md", "--no-plots", "--bootstrap", "100"]) == 0
    md = capsys.readouterr().out
    section = md.split("## Rows as published tables give them")[1].split("\n## ")[0]
    # one shard of 100: 5 of the plan's 500 episodes, so the row is marked incomplete, never given the fingerprint;
    # the served model decoded as the protocol by default (verl-agent's validation: sampling at 0.4)
    assert re.search(r"\| own[^|]* \| verl-agent-500 \| incomplete: 5 / 500 scored \| sampling, temperature 0.4, top-p 1, at most 128 new "
                     r"tokens \| 5 / 500 \|", section)
    assert re.search(r"\| react[^|]* \| verl-agent-500 \\\[\d\\\] \|", section)  # the bare name, a footnote mark
    assert re.search(r"verl-agent-500 as played: (?:[^;|]*; )?not its published setting: prompt react \(every earlier step\), the "
                     r"protocol's is verl-agent \(2 earlier steps\) \(react", section)
    paired = md.split("## Paired comparison")[1]
    assert "they played different prompt (verl-agent (2 earlier steps) vs react (every earlier step))" in paired


def test_observation_mode_is_the_protocols_by_default(real_dir):
    protocol = _small("verl-agent-500")
    data = copy.deepcopy(protocol.data)
    data["observation"] = {"mode": "text_rich"}
    rich = Protocol(data, "")
    result = evaluate("rule", shop=str(real_dir), protocol=rich, keep_episodes=False)
    assert result["protocol_record"]["definition"]["observation"] == {"mode": "text_rich"}
    assert result["protocol_record"]["deviations"] == []
    plain = evaluate("rule", shop=str(real_dir), protocol=rich, observation_mode="text", keep_episodes=False)
    assert plain["protocol_record"]["deviations"] == ["observation mode text, the protocol's is text_rich"]
    assert plain["protocol_record"]["fingerprint"] != result["protocol_record"]["fingerprint"]
