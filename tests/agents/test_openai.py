"""OpenAIPolicy against our own OpenAI-compatible server (tests/openai_server.py): answers, retries, accounting."""

from __future__ import annotations

import socket
import threading
import time

import pytest

pytest.importorskip("openai", reason="pip install 'webshop-gym[openai]' to run the served-model tests")

from tests.openai_server import ChatServer, scripted_answer  # noqa: E402
from webshop_gym.adapters import OpenAIPolicy  # noqa: E402
from webshop_gym.agents.openai import ServedModelError  # noqa: E402
from webshop_gym.error import InvalidArgument  # noqa: E402

INFO = {"goal_index": 3, "instruction": "i need bacon, and price lower than 20.00 dollars", "steps": 0,
        "valid_actions": ["search[<query>]"], "page": "start"}
OBS = "WebShop [SEP] Instruction: [SEP] i need bacon, and price lower than 20.00 dollars [SEP] Search"


def _policy(server, **kw):
    kw = {"backoff": 0.01, "max_backoff": 0.02, "timeout": 5.0, **kw}
    return OpenAIPolicy("scripted", base_url=server.url, **kw)


def test_one_turn_is_the_parsed_answer_with_usage_and_the_stop_tag_restored():
    with ChatServer() as server:
        policy = _policy(server)
        session = policy.new_session(INFO)
        decision = policy.decide(session, OBS, INFO)
        assert decision.action == "search[i need bacon]" and decision.parsed.valid and decision.parsed.format_ok
        body = server.requests[0]
        assert body["model"] == "scripted" and body["stop"] == ["</answer>"] and body["temperature"] == 0.0
        assert body["messages"][0]["role"] == "system" and "Admissible actions" in body["messages"][-1]["content"]
        # the server cut the answer at </answer>; the recorded answer has it back
        assert decision.call.text == "<think>next step</think><answer>search[i need bacon]</answer>"
        sent = server.responses[0]["usage"]
        assert decision.call.usage() == {"prompt_tokens": sent["prompt_tokens"], "completion_tokens": sent["completion_tokens"]}
        assert decision.call.requests == 1 and decision.call.retries == 0 and decision.call.error is None
        assert session.turns[0].action == "search[i need bacon]"
        policy.close()


def test_reasoning_is_stored_apart_and_never_parsed():
    with ChatServer(reasoning="I will click[buy now] right away") as server:
        policy = _policy(server)
        decision = policy.decide(policy.new_session(INFO), OBS, INFO)
        assert decision.call.reasoning == "I will click[buy now] right away"
        assert decision.action == "search[i need bacon]"
        policy.close()


@pytest.mark.parametrize("content, reason", [(None, "empty answer"), ("", "empty answer"), ({"x": 1}, "non-text answer")])
def test_empty_or_non_text_answer_is_an_invalid_action_not_a_crash(content, reason):
    with ChatServer(answer=lambda messages: content) as server:
        policy = _policy(server)
        decision = policy.decide(policy.new_session(INFO), OBS, INFO)
        assert decision.call.error is None and decision.action == ""
        assert not decision.parsed.valid and decision.parsed.reason == reason
        policy.close()


def test_429_with_retry_after_and_500_are_retried_and_counted():
    with ChatServer(faults={"429": 0.5, "500": 0.3}, retry_after="0.05", seed=1) as server:
        policy = _policy(server, max_retries=50)
        session = policy.new_session(INFO)
        calls = [policy.decide(session, OBS, INFO).call for _ in range(10)]
        assert all(c.error is None for c in calls)
        assert sum(c.retries for c in calls) == server.injected["429"] + server.injected["500"] > 0
        assert sum(c.requests for c in calls) == len(server.requests)
        policy.close()


def test_retry_after_is_honoured():
    with ChatServer(faults={"429": 1.0}, retry_after="0.3") as server:
        policy = _policy(server, max_retries=1)
        call = policy.decide(policy.new_session(INFO), OBS, INFO).call
        assert call.error is not None and call.error.startswith("status 429") and call.retries == 1
        assert call.requests == 2 and len(server.requests) == 2
        assert call.latency_s >= 0.3  # waited what the server asked, not the 10 ms backoff
        policy.close()


@pytest.mark.parametrize("fault", ["malformed", "drop", "500"])
def test_a_turn_that_keeps_failing_ends_with_an_error_after_max_retries(fault):
    with ChatServer(faults={fault: 1.0}) as server:
        policy = _policy(server, max_retries=2)
        decision = policy.decide(policy.new_session(INFO), OBS, INFO)
        assert decision.parsed is None and decision.action == ""
        assert decision.call.error and "after 2 retries" in decision.call.error
        assert decision.call.requests == 3 == len(server.requests) and decision.call.retries == 2
        policy.close()


def test_timeouts_are_retried():
    with ChatServer(faults={"timeout": 1.0}, hang=1.0) as server:
        policy = _policy(server, max_retries=1, timeout=0.2)
        call = policy.decide(policy.new_session(INFO), OBS, INFO).call
        assert call.error.startswith("timed out after 0.2 s") and call.retries == 1 and call.requests == 2
        policy.close()


def test_attempts_that_never_connected_are_retried_but_not_counted_as_requests():
    # "requests" counts what reached a server (what it answers and bills): a refused connection,
    # or one whose connect times out (a full accept queue drops the SYN), sent nothing
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, never listening: connections are refused
        policy = OpenAIPolicy("scripted", base_url=f"http://127.0.0.1:{port}/v1", backoff=0.01, max_backoff=0.02,
                              max_retries=2, timeout=5.0)
        call = policy.decide(policy.new_session(INFO), OBS, INFO).call
        policy.close()
    assert call.error.startswith("connection error") and "after 2 retries" in call.error
    assert call.requests == 0 and call.retries == 2
    with socket.socket() as full:
        full.bind(("127.0.0.1", 0))
        full.listen(0)
        port = full.getsockname()[1]
        waiting = []
        while len(waiting) < 8:  # fill the accept queue until a connect times out
            try:
                waiting.append(socket.create_connection(("127.0.0.1", port), timeout=0.2))
            except TimeoutError:
                break
        assert len(waiting) < 8
        policy = OpenAIPolicy("scripted", base_url=f"http://127.0.0.1:{port}/v1", backoff=0.01, max_backoff=0.02,
                              max_retries=1, timeout=0.2)
        call = policy.decide(policy.new_session(INFO), OBS, INFO).call
        policy.close()
        for conn in waiting:
            conn.close()
    assert call.error.startswith("could not connect within 0.2 s") and call.requests == 0 and call.retries == 1


def test_the_test_server_leaves_no_thread_running():
    # a request thread still sleeping through a "timeout" fault after the test would run on into
    # later tests (it freed objects under test_heap's counts)
    before = set(threading.enumerate())
    with ChatServer(faults={"timeout": 1.0}, hang=30.0) as server:
        policy = _policy(server, max_retries=0, timeout=0.2)
        policy.decide(policy.new_session(INFO), OBS, INFO)
        policy.close()
        started = time.monotonic()
    assert time.monotonic() - started < 5
    assert not [t for t in set(threading.enumerate()) - before if "process_request" in t.name]


def test_a_bad_request_is_not_retried():
    with ChatServer() as server:
        policy = OpenAIPolicy("not-served", base_url=server.url, max_retries=5, backoff=0.01)
        call = policy.decide(policy.new_session(INFO), OBS, INFO).call
        assert call.error.startswith("status 404") and "does not exist" in call.error
        assert call.requests == 1 and call.retries == 0
        policy.close()


def test_no_usage_from_the_server_is_marked_unknown():
    with ChatServer(usage=False) as server:
        policy = _policy(server)
        call = policy.decide(policy.new_session(INFO), OBS, INFO).call
        assert call.usage() == {"prompt_tokens": None, "completion_tokens": None}
        policy.close()


def test_check_finds_the_model_or_says_what_is_served():
    with ChatServer(models=["qwen-webshop", "llama"]) as server:
        assert OpenAIPolicy("qwen-webshop", base_url=server.url).check() == ["qwen-webshop", "llama"]
        with pytest.raises(ServedModelError, match=r"'qwen-websop' is not served at .*it serves: qwen-webshop, "
                                                   r"llama \(did you mean 'qwen-webshop'\?\)"):
            OpenAIPolicy("qwen-websop", base_url=server.url).check()
        url = server.url
    with pytest.raises(ServedModelError, match="cannot reach http://127.0.0.1:.*is the server running"):
        OpenAIPolicy("qwen-webshop", base_url=url, timeout=2).check()


def test_sampling_sends_top_p_and_a_seed_per_turn():
    with ChatServer() as server:
        policy = _policy(server, temperature=0.7, top_p=0.9, seed=5)
        session = policy.new_session(INFO, seed=100)
        policy.decide(session, OBS, INFO)
        policy.decide(session, OBS, INFO)
        assert [(b["temperature"], b["top_p"], b["seed"]) for b in server.requests] == [(0.7, 0.9, 100), (0.7, 0.9, 101)]
        policy.close()


def test_request_options_reach_the_body():
    with ChatServer() as server:
        policy = _policy(server, stop=False, request_options={"max_completion_tokens": 64, "top_k": 20})
        policy.decide(policy.new_session(INFO), OBS, INFO)
        body = server.requests[0]
        assert body["max_completion_tokens"] == 64 and "max_tokens" not in body and body["top_k"] == 20
        assert "stop" not in body
        policy.close()


def test_act_batch_sends_the_slots_together():
    with ChatServer(latency=0.2) as server:
        policy = _policy(server, concurrency=4)
        infos = [dict(INFO, goal_index=g) for g in range(4)]
        actions = policy.act_batch([OBS] * 4, infos)
        assert actions == ["search[i need bacon]"] * 4 and server.max_in_flight == 4
        assert [c.requests for c in policy.last_calls] == [1] * 4
        policy.close()


def test_scripted_answer_reads_the_prompt():
    messages = [{"role": "user", "content": "Instruction: x\nObservation: y\nAdmissible actions:\nclick[back to search]\nclick[b0abcdefgh]"}]
    assert scripted_answer(messages) == "<think>next step</think><answer>click[b0abcdefgh]</answer>"


@pytest.mark.parametrize("kw", [{"concurrency": 0}, {"concurrency": 1025}, {"temperature": -1}, {"top_p": 2},
                                {"max_retries": -1}, {"timeout": 0}, {"max_new_tokens": 0}])
def test_bad_arguments(kw):
    with pytest.raises(InvalidArgument):
        OpenAIPolicy("m", base_url="http://127.0.0.1:9/v1", **kw)
