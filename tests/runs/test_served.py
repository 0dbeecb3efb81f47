"""`webshop-gym eval --policy openai:MODEL` against our own OpenAI-compatible server: concurrency, faults,
errored episodes, token accounting, resume after Ctrl-C, shards (issue 22)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("openai", reason="pip install 'webshop-gym[openai]' to run the served-model tests")

from tests.helpers import default_sigint  # noqa: E402
from tests.openai_server import ChatServer  # noqa: E402
from webshop_gym.agents import OpenAIPolicy  # noqa: E402
from webshop_gym.cli.app import main  # noqa: E402
from webshop_gym.evaluation.local import evaluate  # noqa: E402
from webshop_gym.runs.log import read_log  # noqa: E402
from webshop_gym.runs.replay import replay  # noqa: E402
from webshop_gym.runs.run import load_run  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FAST = ["--max-retries", "20", "--timeout", "5", "--quiet"]


def _eval(server, out, *extra, goals=24, concurrency=8):
    return main(["eval", "--policy", "openai:scripted", "--base-url", server.url, "--num-goals", str(goals),
                 "--concurrency", str(concurrency), "--out", str(out), *FAST, *extra])


def _episodes(path):
    """Episode and step lines without the fields that depend on timing and faults."""
    out = []
    for line in Path(path).read_text().splitlines():
        record = json.loads(line)
        if record["type"] in ("run", "summary"):
            continue
        for key in ("latency_s", "retries", "requests", "time"):
            record.pop(key, None)
        out.append(record)
    return out


@pytest.fixture(autouse=True)
def _fast_backoff(fast_backoff):
    """Retries wait 1-20 ms here (the policy's backoff), so fault tests stay quick."""


def test_a_run_with_faults_loses_nothing_and_counts_every_token(tmp_path, capsys):
    out = tmp_path / "run.jsonl"
    faults = {"429": 0.08, "500": 0.08, "malformed": 0.05, "drop": 0.05, "timeout": 0.03}
    with ChatServer(faults=faults, retry_after="0.01", hang=0.6) as server:
        assert _eval(server, out, "--json", str(tmp_path / "r.json"), "--timeout", "0.3") == 0
        prompt, completion = server.usage_sums()
        injected = sum(server.injected.values())
        received = len(server.requests)
    result = json.loads((tmp_path / "r.json").read_text())
    assert all(server.injected[f] > 0 for f in faults) and result["errored"] == 0
    assert result["counts"]["episodes"] == 24 and result["goals"] == [0, 24]
    assert result["tokens"]["prompt"] == prompt and result["tokens"]["completion"] == completion
    assert result["requests"] == received and result["retries"] == injected
    log = read_log(out)
    assert [e.goal_index for e in log.episodes] == list(range(24)) and log.summary is not None
    steps = [s for e in log.episodes for s in e.steps]
    assert sum(s["usage"]["prompt_tokens"] for s in steps) == prompt
    assert sum(s["retries"] for s in steps) == injected
    assert all(e.record["errored"] is False and "error" not in e.record for e in log.episodes)
    assert all(r["match"] for r in replay(out))
    text = capsys.readouterr().out
    assert "errored episodes" not in text and f"{prompt + completion:,}" in text  # nothing errored: no such line


def test_episodes_whose_calls_keep_failing_are_errored_and_not_scored(tmp_path, default_shop, capsys):
    # every request of goal 5 fails: its episode is errored, the others are scored as usual
    instruction = default_shop.goals.instruction[5]
    out = tmp_path / "run.jsonl"
    with ChatServer(fail_when=instruction) as server:
        assert _eval(server, out, "--max-retries", "2", "--json", str(tmp_path / "r.json"), goals=12) == 0
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["errored"] == 1 and result["counts"]["errored"] == 1 and result["counts"]["episodes"] == 11
    run = load_run(out)
    errored = [e for e in run.episodes if e.errored]
    assert [e.goal_index for e in errored] == [5] and errored[0].causes == []
    head = errored[0].log.record
    assert head["error"].startswith("status 500") and "after 2 retries" in head["error"] and head["retries"] == 2
    assert run.figures["episodes"] == 11 and run.figures["score"] == pytest.approx(result["score"])
    # the same figures without goal 5: errored episodes never enter Score/SR
    scored = [e.reward for e in run.episodes if not e.errored]
    assert result["score"] == pytest.approx(100 * sum(scored) / len(scored))
    assert "1 of 12" in capsys.readouterr().out


def test_requests_really_overlap(tmp_path, capsys):
    with ChatServer(latency=0.3) as server:
        assert _eval(server, tmp_path / "run.jsonl", goals=16, concurrency=8) == 0
        assert server.max_in_flight == 8
    with ChatServer(latency=0.05) as server:
        assert _eval(server, tmp_path / "run1.jsonl", goals=4, concurrency=1) == 0
        assert server.max_in_flight == 1
    capsys.readouterr()


def test_same_file_whatever_the_concurrency(tmp_path, capsys):
    with ChatServer() as server:
        assert _eval(server, tmp_path / "a.jsonl", goals=12, concurrency=1) == 0
        assert _eval(server, tmp_path / "b.jsonl", goals=12, concurrency=7) == 0
    assert _episodes(tmp_path / "a.jsonl") == _episodes(tmp_path / "b.jsonl")
    capsys.readouterr()


def test_python_api_with_demos_too(default_shop):
    from webshop_gym.evaluation.demos import make_demos

    with ChatServer() as server:
        policy = OpenAIPolicy("scripted", base_url=server.url, concurrency=4)
        result = evaluate(policy, shop=default_shop, num_goals=6)
        assert result["counts"]["episodes"] == 6 and result["policy"] == "openai:scripted"
        assert result["concurrency"] == 4 and result["tokens"]["prompt"] == server.usage_sums()[0]
        demos = make_demos(shop=default_shop, policy=policy, n=4, num_envs=4, min_reward=0.0)
        assert demos.counts["trajectories_kept"] == 4
        policy.close()


@pytest.mark.parametrize("argv, message", [
    (["--concurrency", "0"], "argument --concurrency: must be an integer in 1-1024, got '0'"),
    (["--concurrency", "1025"], "argument --concurrency: must be an integer in 1-1024, got '1025'"),
    (["--shard", "2/2"], "argument --shard: must be i/n with integers 0 <= i < n, got '2/2'"),
])
def test_bad_flags_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["eval", "--policy", "openai:m", *argv])
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_unreachable_or_unknown_model_fails_at_start_in_one_line(tmp_path, capsys):
    with ChatServer(models=["qwen"]) as server:
        url = server.url
        assert main(["eval", "--policy", "openai:qwn", "--base-url", url, "--out", str(tmp_path / "r.jsonl"), "--quiet"]) == 2
        err = capsys.readouterr().err.strip()
        assert err == (f"webshop-gym eval: error: model 'qwn' is not served at {url}; it serves: qwen "
                       "(did you mean 'qwen'?)")
        assert not server.requests  # nothing was played
    assert main(["eval", "--policy", "openai:qwen", "--base-url", url, "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"webshop-gym eval: error: cannot reach {url}") and "\n" not in err


def test_served_flags_on_another_policy_and_sampling_flags_without_sample(capsys):
    assert main(["eval", "--policy", "rule", "--concurrency", "4", "--quiet"]) == 2
    assert "--concurrency apply to openai:MODEL policies only" in capsys.readouterr().err
    assert main(["eval", "--policy", "openai:m", "--temperature", "0.7", "--quiet"]) == 2
    assert "need --sample" in capsys.readouterr().err


def test_resume_refuses_another_run(tmp_path, capsys):
    out = tmp_path / "run.jsonl"
    with ChatServer() as server:
        assert _eval(server, out, goals=4) == 0
        before = out.read_text()
        assert _eval(server, out, "--resume", "--sample", "--temperature", "0.5", goals=4) == 2
        err = capsys.readouterr().err.strip()
        assert err == (f"webshop-gym eval: error: --resume: {out} was written with temperature 0.0, this command has "
                       "0.5 (same settings, or another --out)")
        assert _eval(server, out, "--resume", goals=5) == 2
        assert "was written with goals [0, 4], this command has [0, 5]" in capsys.readouterr().err
        assert out.read_text() == before


def test_resume_plays_only_missing_and_errored(tmp_path, default_shop, capsys):
    out, reference = tmp_path / "run.jsonl", tmp_path / "ref.jsonl"
    with ChatServer(fail_when=default_shop.goals.instruction[3]) as server:
        assert _eval(server, out, "--max-retries", "0", goals=10) == 0
        gone = server.url
    assert [e.goal_index for e in load_run(out).episodes if e.errored] == [3]
    before = out.read_text()
    assert main(["eval", "--policy", "openai:scripted", "--base-url", gone, "--num-goals", "10", "--out", str(out),
                 "--resume", "--quiet"]) == 2  # the server is gone: the file is not touched
    assert out.read_text() == before and "cannot reach" in capsys.readouterr().err
    with ChatServer() as server:
        assert _eval(server, out, "--resume", goals=10) == 0
        played = {r["messages"][1]["content"].split("\n")[0] for r in server.requests}
        assert played == {"Instruction: " + default_shop.goals.instruction[3]}
        assert _eval(server, reference, goals=10) == 0
        asked = len(server.requests)
        assert _eval(server, out, "--resume", goals=10) == 0  # nothing left: nothing played
        assert len(server.requests) == asked
    assert _episodes(out) == _episodes(reference)
    log = read_log(out)
    assert log.summary is not None and log.summary["result"]["resumed"] == {"kept": 10, "played": 0}
    capsys.readouterr()


def test_ctrl_c_loses_nothing_and_resume_finishes_the_run(tmp_path, capsys):
    out, reference = tmp_path / "run.jsonl", tmp_path / "ref.jsonl"
    with ChatServer(latency=0.15) as server:
        argv = [sys.executable, "-m", "webshop_gym.cli", "eval", "--policy", "openai:scripted", "--base-url", server.url,
                "--num-goals", "40", "--concurrency", "4", "--out", str(out), "--quiet"]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=default_sigint)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and (not out.exists() or out.read_text().count('"type": "episode"') < 5):
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130 and err.strip() == "webshop-gym eval: interrupted"
        log = read_log(out)
        finished = [e.goal_index for e in log.episodes]
        assert 5 <= len(finished) < 40 and log.summary is None and all(e.finished for e in log.episodes)
        asked = len(server.requests)
        server.requests.clear()
        assert main(argv[3:-1] + ["--resume", "--quiet"]) == 0
        instructions = {r["messages"][1]["content"].split("\n")[0] for r in server.requests}
        from webshop_gym import load_shop

        shop = load_shop(progress=False)
        assert not instructions & {"Instruction: " + shop.goals.instruction[g] for g in finished}
        assert len(instructions) == 40 - len(finished) and asked > 0
        assert main(argv[3:-3] + ["--out", str(reference), "--quiet"]) == 0
    assert _episodes(out) == _episodes(reference)
    assert [e.goal_index for e in read_log(out).episodes] == list(range(40))
    capsys.readouterr()


def test_python_resume_and_a_malformed_accounting_field(tmp_path, default_shop):
    from webshop_gym.runs.log import LogError

    out = tmp_path / "run.jsonl"
    with ChatServer() as server:
        policy = OpenAIPolicy("scripted", base_url=server.url, concurrency=3)
        first = evaluate(policy, shop=default_shop, num_goals=5, out=out)
        lines = out.read_text().splitlines()
        # drop the summary and the last two episodes, as an interrupted run would have left the file
        starts = [i for i, line in enumerate(lines) if '"type": "episode"' in line]
        out.write_text("\n".join(lines[: starts[3]]) + "\n")
        asked = len(server.requests)
        again = evaluate(policy, shop=default_shop, num_goals=5, out=out, resume=True)
        assert again["resumed"] == {"kept": 3, "played": 2} and len(server.requests) - asked == 2 * 3
        assert again["score"] == first["score"] and again["tokens"] == first["tokens"]
        policy.close()
    text = out.read_text().replace('"errored": false', '"errored": "no"', 1)
    out.write_text(text)
    with pytest.raises(LogError, match="'errored' must be a boolean, got a string"):
        read_log(out)


def test_empty_answers_are_invalid_actions_and_missing_usage_is_unknown(tmp_path, capsys):
    def answer(messages):
        return "" if len(messages) == 4 else None if len(messages) == 6 else "<answer>search[shoes]</answer>"

    out = tmp_path / "run.jsonl"
    with ChatServer(answer=answer, usage=False) as server:
        assert _eval(server, out, "--max-steps", "3", "--json", str(tmp_path / "r.json"), goals=3) == 0
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["errored"] == 0 and result["counts"]["episodes"] == 3
    assert result["counts"]["invalid_actions"] == 6 and result["counts"]["truncated"] == 3
    assert result["tokens"] == {"prompt": 0, "completion": 0, "total": 0, "per_episode": 0.0, "unknown": 3}
    steps = [s for e in read_log(out).episodes for s in e.steps]
    assert [s["model"]["reason"] for s in steps[:3]] == ["", "empty answer", "empty answer"]
    assert all(s["usage"] == {"prompt_tokens": None, "completion_tokens": None} for s in steps)
    assert all(e.record["tokens"] == {"prompt": None, "completion": None} for e in read_log(out).episodes)
    assert "3 episodes without usage from the server" in capsys.readouterr().out


def test_the_key_comes_from_the_variable_named(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MY_PROVIDER_KEY", "sk-test-123")
    with ChatServer() as server:
        assert _eval(server, tmp_path / "r.jsonl", "--api-key-env", "MY_PROVIDER_KEY", goals=1) == 0
        assert set(server.keys) == {"Bearer sk-test-123"}
        assert _eval(server, tmp_path / "r.jsonl", "--api-key-env", "NOT_SET_ANYWHERE", goals=1) == 2
    assert capsys.readouterr().err.strip().endswith(
        "error: --api-key-env: the environment variable 'NOT_SET_ANYWHERE' is not set")


def test_without_the_openai_package_one_line_with_the_pip_command(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "openai", None)  # import openai raises ImportError
    assert main(["eval", "--policy", "openai:m", "--base-url", "http://127.0.0.1:9/v1", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("webshop-gym eval: error: the served-model policy needs the openai client")
    assert err.endswith("install it with `pip install 'webshop-gym[openai]'`") and "\n" not in err


def test_demos_by_name_with_the_base_url_from_the_environment(default_shop, monkeypatch):
    from webshop_gym.evaluation.demos import make_demos

    with ChatServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        demos = make_demos(shop=default_shop, policy="openai:scripted", n=3, num_envs=3, min_reward=0.0)
        assert demos.counts["trajectories_kept"] == 3 and len(server.requests) == 9


@pytest.mark.parametrize("url, why", [("", "is not an http(s) URL with a host"), ("http://[::1", "is not a URL"),
                                      ("ftp://host/v1", "is not an http(s) URL"), ("http://h:99999/v1", "is not a URL")])
def test_a_bad_base_url_is_one_line(tmp_path, capsys, url, why):
    with pytest.raises(SystemExit) as exit_:
        main(["eval", "--policy", "openai:scripted", "--base-url", url, "--num-goals", "1",
              "--out", str(tmp_path / "r.jsonl"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and why in err.splitlines()[-1] and "Traceback" not in err
    assert not (tmp_path / "r.jsonl").exists()


def test_without_an_endpoint_no_key_goes_anywhere(tmp_path, capsys, monkeypatch):
    # before: an empty or missing --base-url went to the default hosted API with $OPENAI_API_KEY
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    code = main(["eval", "--policy", "openai:scripted", "--num-goals", "1", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "no endpoint" in err and "--base-url" in err and len(err.splitlines()) == 1


def test_a_run_whose_every_episode_errored_exits_non_zero(tmp_path, capsys):
    with ChatServer(faults={"500": 1.0}) as server:
        code = _eval(server, tmp_path / "run.jsonl", "--max-retries", "0", goals=3)
    captured = capsys.readouterr()
    assert code == 1
    assert captured.err.strip().splitlines()[-1].startswith("webshop-gym eval: no episode could be scored: all 3 errored")


def test_max_completion_tokens_replaces_max_tokens(tmp_path, capsys):
    with ChatServer() as server:
        assert _eval(server, tmp_path / "run.jsonl", "--max-completion-tokens", "77", goals=1) == 0
        bodies = list(server.requests)
    assert bodies and all(b["max_completion_tokens"] == 77 and "max_tokens" not in b for b in bodies)
    assert main(["eval", "--policy", "rule", "--max-completion-tokens", "7", "--num-goals", "1"]) == 2
    assert "apply to openai:MODEL policies only" in capsys.readouterr().err


def test_no_progress_bar_in_a_redirected_stderr(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("WEBSHOP_GYM_PROGRESS", raising=False)
    with ChatServer() as server:
        assert main(["eval", "--policy", "openai:scripted", "--base-url", server.url, "--num-goals", "4",
                     "--out", str(tmp_path / "run.jsonl")]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err and "ep/s" not in err and "it/s" not in err


def test_no_answer_aborts_the_run(tmp_path, capsys):
    # a lone surrogate escape in the answer, and a body nested past the JSON parser's recursion limit
    nested = b'{"choices": [{"message": {"content": "x", "extra": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}]}"

    def answer(messages):
        turn = len(messages)
        if turn == 2:
            return '<answer>search[\ud800 shoes]</answer>'
        return nested if turn == 4 else "<answer>click[buy now]</answer>"

    out = tmp_path / "run.jsonl"
    with ChatServer(answer=answer) as server:
        assert _eval(server, out, "--max-retries", "1", "--max-steps", "3", "--json", str(tmp_path / "r.json"),
                     goals=3) in (0, 1)
        assert main(["eval", "--policy", "openai:scripted", "--base-url", server.url, "--num-goals", "3",
                     "--out", str(out), "--resume", *FAST, "--max-retries", "1", "--max-steps", "3"]) in (0, 1)
    log = read_log(out)
    assert [e.goal_index for e in log.episodes] == [0, 1, 2]
    first = log.episodes[0].steps[0]
    assert first["model"]["response"].startswith("<answer>search[\ufffd shoes]") and first["action"] == "search[\ufffd shoes]"
    assert all(e.record.get("errored") for e in log.episodes)  # the nested body: retried, then errored
    assert "JSON nested too deeply" in log.episodes[0].record["error"]
    assert all(r["match"] for r in replay(out))
    capsys.readouterr()


def test_absurd_usage_counts_are_unknown_and_readers_refuse_them(tmp_path, capsys):
    from webshop_gym.runs.log import LogError

    out = tmp_path / "run.jsonl"
    def huge(reply):
        reply["usage"]["prompt_tokens"] = 10**400

    with ChatServer(edit=huge) as server:
        assert _eval(server, out, "--json", str(tmp_path / "r.json"), goals=2) == 0
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["tokens"]["unknown"] == 2 and result["tokens"]["prompt"] == 0
    assert main(["report", str(out), "--no-plots", "--format", "md", "--out", str(tmp_path / "r.md")]) == 0
    for bad, message in (('"prompt": ' + "9" * 400, "'tokens.prompt' must be an integer in [0, 1,000,000,000,000]"),
                         ('"prompt": "12"', "'tokens.prompt' must be an integer in [0, 1,000,000,000,000] or null, got a string")):
        text = out.read_text()
        head = text.index('"tokens": {"prompt": ')
        end = text.index(",", head + len('"tokens": {'))
        (tmp_path / "bad.jsonl").write_text(text[:head] + '"tokens": {' + bad + text[end:])
        with pytest.raises(LogError, match=re.escape(message)):
            read_log(tmp_path / "bad.jsonl")
        assert main(["report", str(tmp_path / "bad.jsonl"), "--no-plots", "--format", "md"]) == 2
        assert message in capsys.readouterr().err


def test_resume_keeps_what_the_whole_run_cost_and_every_sessions_time(tmp_path, default_shop, capsys):
    out = tmp_path / "run.jsonl"
    failing = [default_shop.goals.instruction[g] for g in (1, 3)]
    with ChatServer(fail_when=failing) as server:
        assert _eval(server, out, "--max-retries", "1", "--json", str(tmp_path / "a.json"), goals=6) == 0
        first_requests = len(server.requests)
        first_prompt, first_completion = server.usage_sums()
    first = json.loads((tmp_path / "a.json").read_text())
    assert first["errored"] == 2 and first["requests"] == first_requests
    with ChatServer() as server:
        assert _eval(server, out, "--resume", "--json", str(tmp_path / "b.json"), "--price-input", "1",
                     "--price-output", "2", goals=6) == 0
        second_requests = len(server.requests)
        second_prompt, second_completion = server.usage_sums()
    result = json.loads((tmp_path / "b.json").read_text())
    assert result["resumed"] == {"kept": 4, "played": 2} and result["errored"] == 0
    # the kept episodes' figures, and what every request of both sessions cost
    assert result["billed"]["requests"] == first_requests + second_requests
    assert result["billed"]["tokens"]["prompt"] == first_prompt + second_prompt
    assert result["billed"]["tokens"]["completion"] == first_completion + second_completion
    assert result["requests"] < result["billed"]["requests"] and result["billed"]["episodes"] == 8
    assert result["cost_billed"] == pytest.approx((result["billed"]["tokens"]["prompt"] * 1
                                                   + result["billed"]["tokens"]["completion"] * 2) / 1e6)
    # the rate is this session's own: its 2 episodes' steps over its wall time
    sessions = result["sessions"]
    assert len(sessions) == 2 and sessions[0]["wall_s"] == pytest.approx(first["wall_s"]) and sessions[0]["finished"]
    played_steps = sum(len(e.steps) for e in read_log(out).episodes if e.goal_index in (1, 3))
    assert result["steps_per_s"] == pytest.approx(played_steps / result["wall_s"])
    text = capsys.readouterr().out
    assert "this session" in text and "whole run" in text
    assert main(["report", str(out), "--no-plots", "--format", "md", "--out", str(tmp_path / "r.md"),
                 "--price-input", "1", "--price-output", "2"]) == 0
    from tests.runs.test_figures_agree import _md_tables

    calls = next(v for k, v in _md_tables((tmp_path / "r.md").read_text()).items() if k.startswith("Model calls"))[0]
    assert calls["whole run: requests"] == f"{first_requests + second_requests:,}"
    assert calls["requests"] == f"{result['requests']:,}"
    assert calls["whole run: cost"] == f"{result['cost_billed']:.4f}"
    assert calls["wall time (s)"] == f"{first['wall_s'] + result['wall_s']:.1f}"
    assert all(r["match"] for r in replay(out))
    capsys.readouterr()


def test_sft_data_with_a_served_teacher_from_the_command_line(tmp_path, capsys):
    out = tmp_path / "demos.jsonl"
    with ChatServer() as server:
        assert main(["sft-data", "--policy", "openai:scripted", "--base-url", server.url, "-n", "6",
                     "--min-reward", "0", "--out", str(out), "--quiet"]) == 0
        assert server.requests  # the teacher was asked
    counts = json.loads(capsys.readouterr().out)
    records = [json.loads(x) for x in out.read_text().splitlines()]
    assert counts["policy"] == "openai:scripted" and counts["goals_run"] == 6 and len(records) == counts["records"] > 0
    assert main(["sft-data", "--policy", "rule", "--base-url", "http://127.0.0.1:1/v1", "--out", str(out)]) == 2
    assert "--base-url applies to openai:MODEL teachers only" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["sft-data", "--policy", "gpt", "--out", str(out)])
    assert "must be oracle, rule or openai:MODEL" in capsys.readouterr().err


@pytest.mark.parametrize("flags", [["--timeout", "5"], ["--max-retries", "0"], ["--api-key-env", "MY_KEY"]])
def test_request_flags_given_to_a_local_policy_are_refused(flags, capsys):
    # they were accepted and ignored: a user who set --timeout for a rule baseline got no word of it
    assert main(["eval", "--policy", "rule", *flags, "--num-goals", "1", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"webshop-gym eval: error: {flags[0]} apply to openai:MODEL policies only, not 'rule'"]
