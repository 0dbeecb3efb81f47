"""The run viewer shows the prompt a served model saw at each step, rebuilt equal to the request it was sent."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

pytest.importorskip("openai", reason="pip install 'webshop-gym[openai]' to run the served-model tests")

from tests.openai_server import ChatServer, ToolCalls, scripted_answer  # noqa: E402
from webshop_gym.cli.app import main  # noqa: E402
from webshop_gym.runs.log import read_log  # noqa: E402

#: A long rationale in the first think-answer answer: the next prompts hold a message longer than the page shows.
LONG = "why " * 6_000


def _verl_actions(text: str) -> list[str]:
    block = text.split("Your admissible actions of the current situation are: \n[\n", 1)[1].split("\n].", 1)[0]
    return [line[1:-2] for line in block.splitlines()]


def _answer(messages: list[dict]):
    """Search the instruction, open the first product, buy; each prompt format answered in its own form."""
    first, last = str(messages[0].get("content")), str(messages[-1].get("content"))
    if "Your admissible actions of the current situation are" in last:  # verl-agent
        actions = _verl_actions(last)
        instruction = re.search(r"Your task is to: (.*?)\.\n", last).group(1).split(", and price")[0]
        products = [a for a in actions if re.fullmatch(r"click\[b[0-9a-z]{9}\]", a)]
        action = (f"search[{instruction}]" if "search[<your query>]" in actions else "click[buy now]"
                  if "click[buy now]" in actions else products[0] if products else actions[0])
        return f"<think>next</think><action>{action}</action>"
    answer = scripted_answer(messages, "react" if "Thought:" in first else "think-answer")
    if sum(m["role"] == "assistant" for m in messages) == 0 and "<think>" in answer:
        answer = answer.replace("<think>next step", "<think>" + LONG)
    return answer


def _tools(messages: list[dict]):
    """No tool call, a search, a label no page has, no such tool, then two calls at once: a product and buy now."""
    turn = sum(m["role"] == "assistant" for m in messages)
    if turn == 0:
        return "I would like to think first."
    if turn == 1:
        instruction = re.search(r"Instruction: (.*)", messages[0]["content"]).group(1)
        return ToolCalls([("search", {"query": instruction.split(", and price")[0]})], content="Let me search.")
    if turn == 2:
        return ToolCalls([("click", {"label": "Lowest Price Ever"})])
    if turn == 3:
        return ToolCalls([("checkout", {"label": "now"})])
    pages = "\n".join(str(m.get("content")) for m in messages if m["role"] == "tool")
    labels = json.loads(re.findall(r"click\(label\) with label one of (\[.*?\])", pages)[-1])
    products = [x for x in labels if re.fullmatch(r"b[0-9a-z]{9}", x)]
    return ToolCalls([("click", {"label": products[0]}), ("click", {"label": "buy now"})])


FORMATS = ("think-answer", "react", "verl-agent", "tools")


@pytest.fixture(scope="module")
def served_runs(tmp_path_factory) -> tuple[Path, dict]:
    """One served run per prompt format (one episode each, one request at a time) and the requests the server got."""
    folder = tmp_path_factory.mktemp("prompts")
    requests = {}
    for fmt in FORMATS:
        with ChatServer(answer=_tools if fmt == "tools" else _answer) as server:
            assert main(["eval", "--policy", "openai:scripted", "--base-url", server.url, "--prompt", fmt,
                         "--num-goals", "1", "--max-steps", "8", "--concurrency", "1", "--max-retries", "0",
                         "--quiet", "--out", str(folder / f"{fmt}.jsonl")]) == 0
            requests[fmt] = [body["messages"] for body in server.requests]
    return folder, requests


def _request_of_each_step(steps: list[dict], fmt: str) -> list[int]:
    """Which request produced each step's answer: one per step, except the later calls of a tools answer."""
    if fmt != "tools":
        return list(range(len(steps)))
    out, r = [], -1
    for s in steps:
        r += "content" in json.loads(s["model"]["response"])  # a stepped later call records only its call
        out.append(r)
    return out


def _shown(soup) -> list[tuple[str, str | None]]:
    """The prompt's messages as the step panel shows them: (role, text)."""
    out = []
    for block in soup.select("#prompt .message"):
        content = block.select_one("pre.content")
        out.append((block["data-role"], content.text if content else None))
    return out


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_prompt_of_each_step_is_the_request_the_model_was_sent(fmt, served_runs, make_viewer):
    folder, requests = served_runs
    client = make_viewer(folder)
    steps = read_log(folder / f"{fmt}.jsonl").episodes[0].steps
    which = _request_of_each_step(steps, fmt)
    assert len(steps) >= 3 and which[-1] == len(requests[fmt]) - 1
    if fmt == "tools":
        assert which[-2] == which[-1]  # the last answer's two calls: two steps, one request
    for k, r in enumerate(which):
        sent = requests[fmt][r]
        response = client.get(f"/runs/{fmt}/0?step={k}")
        assert response.status_code == 200
        soup = BeautifulSoup(response.get_data(as_text=True), "html.parser")
        summary = soup.select_one("#prompt summary").text
        assert summary.startswith(f"the prompt the model saw ({len(sent)} message"), summary
        # every message, in order: its role and its text (cut where longer than the page shows)
        assert _shown(soup) == [(m["role"], None if m.get("content") is None else m["content"][:20_000]) for m in sent]
        rebuilt = client.get(soup.select_one("#prompt-json")["href"])
        assert rebuilt.status_code == 200 and rebuilt.get_json() == sent
        for block, message in zip(soup.select("#prompt .message"), sent, strict=True):
            calls = [c.text for c in block.select("pre.tool-call")]
            assert calls == [f"{c['function']['name']}({c['function']['arguments']}) · {c['id']}"
                             for c in message.get("tool_calls") or []]
            if message["role"] == "tool":
                assert block.select_one(".role").text == f"tool · {message['name']} · {message['tool_call_id']}"


def test_a_long_message_is_cut_with_a_link_to_all_of_it(served_runs, make_viewer):
    folder, requests = served_runs
    client = make_viewer(folder)
    soup = BeautifulSoup(client.get("/runs/think-answer/0?step=1").get_data(as_text=True), "html.parser")
    [cut] = soup.select("#prompt .message-cut")
    sent = requests["think-answer"][1]
    long = next(i for i, m in enumerate(sent) if len(m["content"]) > 20_000)
    assert f"The message has {len(sent[long]['content']):,} characters" in cut.text
    whole = client.get(cut.select_one("a.whole-message")["href"])
    assert whole.status_code == 200 and whole.mimetype == "text/plain"
    assert whole.get_data(as_text=True) == sent[long]["content"] and LONG in sent[long]["content"]
    for url, status in (("/runs/think-answer/0/prompt/1?message=99", 404), ("/runs/think-answer/0/prompt/1?message=x", 400),
                        ("/runs/think-answer/0/prompt/99", 404)):
        assert client.get(url).status_code == status, url


def test_runs_of_local_policies_show_no_prompt(runs_dir, make_viewer):
    client = make_viewer(runs_dir)
    for name in ("rule", "oracle"):
        response = client.get(f"/runs/{name}/0?step=1")
        soup = BeautifulSoup(response.get_data(as_text=True), "html.parser")
        assert response.status_code == 200 and soup.select_one("#action") is not None
        assert soup.select_one("#prompt") is None and "prompt the model saw" not in response.get_data(as_text=True)
        assert client.get(f"/runs/{name}/0/prompt/0").status_code == 404


def test_an_errored_episode_shows_the_request_that_failed(tmp_path, default_shop, make_viewer):
    with ChatServer(fail_when=default_shop.goals.instruction[1]) as server:
        assert main(["eval", "--policy", "openai:scripted", "--base-url", server.url, "--num-goals", "2",
                     "--concurrency", "1", "--max-retries", "0", "--quiet", "--out", str(tmp_path / "run.jsonl")]) == 0
        failed = [b["messages"] for b in server.requests if default_shop.goals.instruction[1] in json.dumps(b)]
    client = make_viewer(tmp_path)
    episode = read_log(tmp_path / "run.jsonl").episodes[1]
    assert episode.record["errored"] and not episode.steps
    soup = BeautifulSoup(client.get("/runs/run/1?step=0").get_data(as_text=True), "html.parser")
    assert soup.select_one("#prompt summary").text.startswith("the prompt of the request that failed")
    assert client.get(soup.select_one("#prompt-json")["href"]).get_json() == failed[-1]


def test_a_bundle_keeps_the_prompts_and_their_long_messages(served_runs, tmp_path, capsys):
    folder, requests = served_runs
    out = tmp_path / "bundle"
    assert main(["report", str(folder / "think-answer.jsonl"), "--bundle", str(out)]) == 0
    capsys.readouterr()
    soup = BeautifulSoup((out / "episodes" / "0" / "step-1.html").read_text(encoding="utf-8"), "html.parser")
    sent = requests["think-answer"][1]
    assert [m for m, _ in _shown(soup)] == [m["role"] for m in sent]
    link = soup.select_one("#prompt .message-cut a.whole-message")["href"]
    long = next(m["content"] for m in sent if len(m["content"]) > 20_000)
    assert (out / "episodes" / "0" / link).read_text(encoding="utf-8") == long
    assert soup.select_one("#prompt-json").get("href") is None  # the JSON is the server's: plain text here
