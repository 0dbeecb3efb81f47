"""`eval --protocol` / `--samples` as a user runs them, and the protocol in the run, `report` and the viewer (issue 30, phase 2)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from webshop_gym.cli.app import main
from webshop_gym.evaluation.episode import episode_seed
from webshop_gym.evaluation.plan import prepare
from webshop_gym.protocols import get_protocol
from webshop_gym.protocols.play import adhoc_protocol
from webshop_gym.reporting.report import build_report, tables
from webshop_gym.runs.replay import replay
from webshop_gym.runs.run import load_run, summary_difference
from webshop_gym.shop import load_shop


def _eval(out: Path, *extra: str) -> dict:
    figures = out.with_suffix(".json")
    assert main(["eval", "--quiet", "--out", str(out), "--json", str(figures), *extra]) == 0
    return json.loads(figures.read_text(encoding="utf-8"))


def _lines(path: Path, kind: str) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if json.loads(line)["type"] == kind]


@pytest.fixture(scope="module")
def protocol_runs(tmp_path_factory, real_dir) -> Path:
    """Runs on the real 1k shop: verl-agent seed 0 (validations 0 and 1), an ad-hoc run, a sampled run."""
    folder = tmp_path_factory.mktemp("protocol-runs")
    shop = ["--shop", str(real_dir)]
    _eval(folder / "verl.jsonl", *shop, "--protocol", "verl-agent", "--seed", "0")
    _eval(folder / "verl-v1.jsonl", *shop, "--protocol", "verl-agent", "--seed", "0", "--validation", "1", "--policy", "random")
    _eval(folder / "adhoc.jsonl", *shop, "--num-goals", "30")
    _eval(folder / "sampled.jsonl", *shop, "--policy", "random", "--num-goals", "6", "--samples", "3")
    return folder


def test_eval_protocol_plays_verl_agents_validation(protocol_runs, real_dir):
    protocol = get_protocol("verl-agent")
    shop = load_shop(real_dir, progress=False)
    for name, validation in (("verl", 0), ("verl-v1", 1)):
        path = protocol_runs / f"{name}.jsonl"
        resolution = protocol.resolve(0, validation, num_goals=len(shop.goals))
        [header] = _lines(path, "run")
        episodes = _lines(path, "episode")
        assert len(episodes) == len(resolution.episodes) == 256
        by_item = {e["protocol"]["item"]: e for e in episodes}
        for i, expected in enumerate(resolution.episodes):
            got = by_item[i]
            assert got["goal_index"] == expected.goal and got["protocol"]["price_seed"] == expected.price_seed
            assert (got["protocol"]["worker"], got["protocol"]["draw"], got["protocol"]["position"]) == (
                expected.worker, expected.draw, expected.position)
            # every episode is scored with its worker's prices and caps
            assert got.get("shop", header["shop"])["price_seed"] == expected.price_seed
            assert got["max_steps"] == 15
        record = header["protocol"]
        assert record["name"] == "verl-agent" and record["validation"] == validation
        assert record["fingerprint"] == protocol.fingerprint(resolution, shop)
        assert header["max_steps"] == protocol.step_cap
    result = json.loads((protocol_runs / "verl.json").read_text())
    run = load_run(protocol_runs / "verl.jsonl")
    rows = [{"raw_reward": e.reward, "purchased": e.purchased, "draw": e.log.record["protocol"]["draw"]}
            for e in run.episodes]
    metrics = {m["name"]: m["value"] for m in result["protocol"]["metrics"]}
    assert metrics == pytest.approx(protocol.figures(rows))
    assert result["protocol"]["fingerprint"] == run.protocol["fingerprint"] and summary_difference(run) is None
    assert all(r["match"] for r in replay(protocol_runs / "verl.jsonl"))


def test_a_run_without_protocol_records_the_equivalent_one(protocol_runs, real_dir):
    [header] = _lines(protocol_runs / "adhoc.jsonl", "run")
    record = header["protocol"]
    shop = load_shop(real_dir, progress=False)
    adhoc = adhoc_protocol(start=0, stop=30, max_steps=15, price_seed=0, goal_kind="synthetic")
    assert record["name"] == "ad-hoc" and record["definition"] == adhoc.data
    assert record["fingerprint"] == adhoc.fingerprint(adhoc.resolve(num_goals=len(shop.goals)), shop)
    assert all("protocol" not in e and e["episode"] == f"g{e['goal_index']}" for e in _lines(protocol_runs / "adhoc.jsonl", "episode"))
    # the plain 500 test goals with cap 15 are webshop-gym's protocol: the same fingerprint
    plan = prepare(shop, split="test")
    ours = get_protocol("webshop-gym")
    assert plan.record["equivalent"] == "webshop-gym"
    assert plan.record["fingerprint"] == ours.fingerprint(ours.resolve(num_goals=len(shop.goals)), shop)


def test_samples_give_mean_and_pass_at_k_with_recorded_seeds(protocol_runs, capsys):
    result = json.loads((protocol_runs / "sampled.json").read_text())
    episodes = _lines(protocol_runs / "sampled.jsonl", "episode")
    assert [e["goal_index"] for e in episodes] == [g for g in range(6) for _ in range(3)]
    assert [e["protocol"]["sample"] for e in episodes] == [0, 1, 2] * 6
    assert [e["protocol"]["policy_seed"] for e in episodes] == [episode_seed(0, g, k) for g in range(6) for k in range(3)]
    assert len({e["protocol"]["policy_seed"] for e in episodes}) == 18
    run = load_run(protocol_runs / "sampled.jsonl")
    wins: dict[int, list[bool]] = {}
    for e in run.episodes:
        wins.setdefault(e.goal_index, []).append(e.success)
    figures = result["protocol"]
    assert figures["samples"] == 3 and run.protocol["definition"]["samples_per_goal"] == 3
    assert figures["mean@3"] == pytest.approx(100 * sum(sum(w) / 3 for w in wins.values()) / 6)
    assert figures["pass@3"] == pytest.approx(100 * sum(any(w) for w in wins.values()) / 6)
    assert result["counts"]["episodes"] == 18 and run.figures["protocol"] == result["protocol"]


def test_eval_prints_the_protocol_and_its_fingerprint(real_dir, capsys):
    assert main(["eval", "--quiet", "--shop", str(real_dir), "--policy", "random", "-n", "4", "--samples", "2"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^protocol +ad-hoc, fingerprint [0-9a-f]{16}$", out, re.M)  # the bare name (issue 56 item 2)
    assert re.search(r"^protocol as played +2 samples per goal$", out, re.M)
    # pass@2 is a count of the 4 goals: no interval on so few (issue 54, round 6)
    assert re.search(r"^mean@2 / pass@2 \(%\) \[95% CI\] +\d+\.\d \[\d+\.\d, \d+\.\d\] / "
                     r"\d+\.\d \(no 95% interval at 4 goals\)$", out, re.M)
    assert re.search(r"^95% intervals +over the 4 goals, each with its 2 samples", out, re.M)


@pytest.mark.parametrize("extra, message", [
    (["--protocol", "verl-agent", "--split", "eval"], "--split contradicts --protocol verl-agent"),
    (["--protocol", "verl-agent", "--num-goals", "8", "--max-steps", "9"], "--num-goals, --max-steps contradict --protocol"),
    (["--protocol", "ragen", "--human-goals"], "--human-goals contradicts --protocol ragen"),
    (["--protocol", "ragen", "--price-seed", "3"], "--price-seed contradicts --protocol ragen"),
    (["--protocol", "webshop-paper"], "protocol 'webshop-paper' needs the full release"),
    (["--protocol", "seed-fairness"], "pass your copy with --protocol-file FILE"),
    (["--protocol", "ragen", "--validation", "1"], "protocol 'ragen' plays the same goals at every validation"),
    (["--validation", "1"], "--validation applies to --protocol NAME only"),
    (["--protocol", "verl-agent", "--num-workers", "2"], "plays 128 price seeds"),
])
def test_contradicting_flags_are_one_line_errors(extra, message, real_dir, tmp_path, capsys):
    out = tmp_path / "run.jsonl"
    assert main(["eval", "--quiet", "--shop", str(real_dir), "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err and not out.exists()


def test_parser_rejects_unknown_protocols_and_bad_counts(capsys):
    for argv, message in ((["--protocol", "gigpo"], "unknown protocol 'gigpo' (did you mean 'hgpo'?); known protocols: agentbench"),
                          (["--samples", "0"], "--samples"), (["--validation", "-1"], "--validation")):
        with pytest.raises(SystemExit) as info:
            main(["eval", *argv])
        err = capsys.readouterr().err
        assert info.value.code == 2 and message in err and "Traceback" not in err


def test_agentgym_file_of_the_wrong_count_is_one_line(real_dir, tmp_path, capsys):
    ids = tmp_path / "webshop_test.json"
    ids.write_text(json.dumps([{"item_id": f"webshop_{i}"} for i in range(7)]))
    assert main(["eval", "--quiet", "--shop", str(real_dir), "--protocol", "agentgym", "--protocol-file", str(ids)]) == 2
    assert "7 goal ids, protocol 'agentgym' expects 200" in capsys.readouterr().err


def test_report_refuses_to_pair_runs_of_different_protocols(protocol_runs):
    report = build_report([protocol_runs / "verl.jsonl", protocol_runs / "verl-v1.jsonl", protocol_runs / "adhoc.jsonl"],
                          resamples=200)
    other_validation, adhoc = report.comparisons
    assert other_validation.paired is None and adhoc.paired is None
    assert other_validation.note == ("not paired: they played different episodes (256 episodes of goals drawn per "
                                     "validation at price seeds 1000, 1001, 1002 ... (128 in all) vs 256 episodes of goals "
                                     "drawn per validation at price seeds 1000, 1001, 1002 ... (128 in all))")
    assert "256 episodes of goals drawn per validation" in adhoc.note and "vs 30 episodes of goals 0-29 at price seed 0" in adhoc.note
    assert "step cap" not in adhoc.note and "aggregation" not in adhoc.note  # how a family reports is not what was played
    assert "{" not in adhoc.note and "'" not in adhoc.note
    same = build_report([protocol_runs / "verl.jsonl", protocol_runs / "verl.jsonl"], resamples=200)
    assert same.comparisons[0].paired is not None and same.comparisons[0].paired.goals == 256  # paired by (goal, price seed, sample)
    header, rows = tables(report)["runs"]
    assert header[-1] == "protocol (fingerprint)" and rows[0][-1].startswith("verl-agent [1] (")


def test_report_latex_and_markdown_rows_in_the_published_shape(protocol_runs, tmp_path, capsys):
    runs = [str(protocol_runs / f"{n}.jsonl") for n in ("verl", "adhoc", "sampled")]
    out = tmp_path / "table.tex"
    assert main(["report", *runs, "--out", str(out), "--bootstrap", "200"]) == 0
    tex = out.read_text(encoding="utf-8")
    lines = tex.splitlines()
    header_line = lines[lines.index(r"\toprule") + 1]
    assert header_line.endswith(r" \\")
    header = [h.strip() for h in header_line[: -len(r" \\")].split(" & ")]
    for name in ("method", "protocol", "fingerprint", r"Score [95\% CI]", r"valid \%", "mean steps", r"pass@3 [95\% CI]"):
        assert name in header, name
    rows = {}
    for line in lines:
        cells = [c.strip() for c in line[: -len(r" \\")].split(" & ")] if line.endswith(r" \\") and line != header_line else None
        if cells:
            rows[cells[0]] = dict(zip(header, cells))
    verl = json.loads((protocol_runs / "verl.json").read_text())
    # the protocol cell is the bare name with a footnote mark; the seed is the note (issue 56 item 2)
    assert rows["verl"]["protocol"] == "verl-agent$^{1}$" and rows["verl"]["Score [95\\% CI]"].startswith(f"{verl['score']:.1f} [")
    assert r"\par{\footnotesize $^{1}$\,verl-agent as played: seed 0 (verl)" in tex
    sr = next(h for h in header if h.startswith("SR"))  # "SR = mean@3": one column when they are one figure
    assert rows["verl"][sr].startswith(f"{verl['sr']:.1f} [")
    assert rows["verl"][r"valid \%"] == f"{verl['valid_rate']:.1f}" and rows["verl"]["mean steps"] == f"{verl['mean_steps']:.2f}"
    sampled = json.loads((protocol_runs / "sampled.json").read_text())
    found = sampled["protocol"]["intervals"]["mean@3"]
    mean = r"mean@3 [95\% CI]" if r"mean@3 [95\% CI]" in header else sr
    assert rows["sampled"][mean] == f"{sampled['protocol']['mean@3']:.1f} [{found['low']:.1f}, {found['high']:.1f}]"
    assert mean == sr or rows["verl"][mean] == "-"
    assert tex.count(r"\midrule") == 3  # under the header, then between the three protocols' blocks
    assert main(["report", *runs, "--format", "md", "--no-plots", "--bootstrap", "200"]) == 0
    md = capsys.readouterr().out
    section = md.split("## Rows as published tables give them")[1].split("\n## ")[0]
    assert "| verl | verl-agent \\[1\\] |" in section and f"| {verl['score']:.1f} \\[" in section
    assert "\\[1\\] verl-agent as played: seed 0 (verl)." in section


def test_viewer_names_protocols_groups_them_and_refuses_to_pair(protocol_runs, make_viewer):
    client = make_viewer(protocol_runs)
    page = client.get("/runs/")
    assert page.status_code == 200
    soup = BeautifulSoup(page.get_data(as_text=True), "html.parser")
    groups = {tr.find_all("td")[0].text.strip(): tr.find_all("td")[2].text for tr in soup.select("#protocols tbody tr")}
    assert groups["verl-agent"] == "verl" and "sampled" in groups["ad-hoc"]
    notes = [li.text for li in soup.select("#protocol-notes li")]
    assert "As played: seed 0." in notes and "As played: 3 samples per goal." in notes
    rule = soup.select_one("#comparability").text  # decided from what was played, never from the protocol's name
    assert "never compared" not in rule and "exactly when their protocol fingerprints are equal" not in rule
    for field in ("same episodes", "same shop", "step cap", "success rule", "observation", "prompt"):
        assert field in rule, field
    fingerprint = json.loads((protocol_runs / "verl.json").read_text())["protocol"]["fingerprint"]
    run = BeautifulSoup(client.get("/runs/verl").get_data(as_text=True), "html.parser")
    assert fingerprint in run.select_one("#protocol").text and "SR (success_rate)" in run.select_one("#protocol").text
    compare = BeautifulSoup(client.get("/runs/verl/vs/adhoc").get_data(as_text=True), "html.parser")
    refused = compare.select_one("#refused").text
    assert refused.startswith("Not compared goal by goal: they played different episodes (256 episodes of goals drawn per validation")
    assert "step cap" not in refused and "vs 30 episodes of goals 0-29" in refused
    assert "goal index is not the same task" not in refused and "same episodes under the same rules" in refused
    goal = client.get("/runs/verl/vs/adhoc/3")
    assert goal.status_code == 409 and "goal index is not the same task" not in goal.get_data(as_text=True)


def test_served_models_play_protocols_too(real_dir, tmp_path):
    pytest.importorskip("openai", reason="pip install 'webshop-gym[openai]' to run the served-model tests")
    from tests.openai_server import ChatServer

    out = tmp_path / "served.jsonl"
    with ChatServer() as server:
        result = _eval(out, "--policy", "openai:scripted", "--base-url", server.url, "--shop", str(real_dir),
                       "--protocol", "verl-agent", "--seed", "3", "--samples", "2", "--max-retries", "0")
    protocol = get_protocol("verl-agent")
    resolution = protocol.resolve(3, num_goals=6910)
    [header] = _lines(out, "run")
    episodes = _lines(out, "episode")
    assert header["protocol"]["samples"] == 2 and header["protocol"]["seed"] == 3 and len(episodes) == 512
    for e in episodes:
        expected = resolution.episodes[e["protocol"]["item"]]
        assert (e["goal_index"], e["protocol"]["price_seed"]) == (expected.goal, expected.price_seed)
    assert result["protocol"]["samples"] == 2 and result["protocol"]["pass@2"] >= result["protocol"]["mean@2"]
    assert load_run(out).figures["protocol"] == result["protocol"]
    assert main(["eval", "--policy", "openai:scripted", "--base-url", "http://127.0.0.1:9/v1", "--out", str(out),
                 "--resume", "--protocol", "ragen", "--shop", str(real_dir), "--quiet"]) == 2


def test_a_frozen_goal_set_plays_its_own_prices_and_refuses_a_named_protocol(real_dir, golden_dir, tmp_path, capsys):
    from webshop_gym.cli import main

    out = tmp_path / "frozen.jsonl"
    assert main(["eval", "--policy", "rule", "--shop", str(real_dir), "--goals", str(golden_dir / "goals.json"),
                 "--num-goals", "3", "--quiet", "--out", str(out)]) == 0
    assert main(["replay", str(out)]) == 0
    capsys.readouterr()
    assert main(["eval", "--policy", "rule", "--shop", str(real_dir), "--goals", str(golden_dir / "goals.json"),
                 "--protocol", "verl-agent-500", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--goals" in err or "frozen goal set" in err
