"""Issue 42 item 5: two runs are compared when they played the same thing, whatever their protocols are called.

A plain ``eval`` of goals 0-499 at price seed 0 and ``--protocol verl-agent-500`` play the same
500 episodes under the same cap and success rule: ``report`` and the viewer pair them.  A run
that differs in a played field (here the step cap) is refused with that field named, and the
viewer's refusal table lists every field once.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from webshop_gym.cli.app import main
from webshop_gym.reporting.report import build_report

FIELDS = ["episodes", "step cap", "success rule", "shop", "observation mode", "prompt"]


@pytest.fixture(scope="module")
def played(tmp_path_factory, real_dir) -> Path:
    folder = tmp_path_factory.mktemp("comparable")
    common = ["eval", "--quiet", "--shop", str(real_dir)]
    assert main([*common, "--num-goals", "500", "--out", str(folder / "plain.jsonl")]) == 0
    assert main([*common, "--protocol", "verl-agent-500", "--out", str(folder / "named.jsonl")]) == 0
    assert main([*common, "--num-goals", "500", "--max-steps", "10", "--out", str(folder / "capped.jsonl")]) == 0
    return folder


def _header(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8").splitlines()[0])


def test_a_plain_run_and_verl_agent_500_played_the_same_thing(played):
    from webshop_gym.protocols.comparable import FIELDS as ORDER
    from webshop_gym.protocols.comparable import comparison, refusal

    assert list(ORDER) == FIELDS
    plain, named = _header(played / "plain.jsonl"), _header(played / "named.jsonl")
    assert plain["protocol"]["name"] == "ad-hoc" and named["protocol"]["name"] == "verl-agent-500"
    assert plain["protocol"]["fingerprint"] != named["protocol"]["fingerprint"]  # other rules of reporting ...
    fields = comparison(plain, named)
    assert [f.name for f in fields] == list(FIELDS) and not any(f.differs for f in fields)  # ... the same play
    assert refusal(fields) == ""


def test_report_pairs_them_episode_by_episode(played):
    report = build_report([played / "plain.jsonl", played / "named.jsonl", played / "capped.jsonl"], resamples=200)
    same, capped = report.comparisons
    assert same.paired is not None and same.paired.goals == 500 and same.note == ""
    assert (same.paired.won, same.paired.lost, same.paired.tied) == (0, 0, 500)  # the same episodes, the same rule policy
    assert capped.paired is None and capped.note == "not paired: they played different step cap (15 vs 10)"


def test_the_viewer_pairs_them_and_names_the_one_field_that_differs(played, make_viewer):
    client = make_viewer(played)
    page = BeautifulSoup(client.get("/runs/plain/vs/named").get_data(as_text=True), "html.parser")
    assert page.select_one("#refused") is None and len(page.select("#goals tbody tr")) > 0
    assert client.get("/runs/plain/vs/named/0").status_code == 200
    page = BeautifulSoup(client.get("/runs/plain/vs/capped").get_data(as_text=True), "html.parser")
    refused = page.select_one("#refused").text
    named = re.search(r"they played different ([^.]*)\.", refused)
    assert named and named.group(1) == "step cap (15 vs 10)", refused  # the one field, no other
    rows = [tr.find_all("td") for tr in page.select("details#refusal-details tr")[1:]]
    assert [r[0].text for r in rows] == list(FIELDS)  # each field once (the old table listed every field twice)
    marked = [tr.find_all("td")[0].text for tr in page.select("details#refusal-details tr.differs")]
    assert marked == ["step cap"]
