"""Issue 43 item 13: bad seeds and goal-id files are one line with exit status 2; a file protocol digests its ids."""

from __future__ import annotations

import json

import pytest

from webshop_gym.cli.app import main
from webshop_gym.error import ProtocolError
from webshop_gym.protocols import get_protocol

FIRST10 = [5238, 912, 204, 6074, 2253, 2006, 1828, 1143, 6033, 839]


def _one_line_exit_2(argv, capsys, *needles):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "internal error" not in err, err
    for needle in needles:
        assert needle in err, err
    return err


@pytest.mark.parametrize("seed", ["4294967000", str(2**63 - 1)])
def test_a_verl_agent_seed_past_numpys_range_is_one_line(seed, capsys):
    """--seed promises 0 .. 2**63 - 1; verl-agent seeds RandomState(env.seed + 1000), which stops at 2**32 - 1."""
    _one_line_exit_2(["protocols", "show", "verl-agent", "--seed", seed], capsys,
                     "must be at most 4,294,966,295", "RandomState")
    with pytest.raises(ProtocolError, match="at most 4,294,966,295"):
        get_protocol("verl-agent-1draw").resolve(int(seed))
    get_protocol("verl-agent").resolve(4_294_966_295)  # the largest seed the family's code takes


def test_eval_with_a_seed_past_the_range_is_one_line(real_dir, tmp_path, capsys):
    _one_line_exit_2(["eval", "--quiet", "--shop", str(real_dir), "--protocol", "verl-agent", "--seed", "4294967000",
                      "--out", str(tmp_path / "run.jsonl")], capsys, "must be at most 4,294,966,295")
    assert not (tmp_path / "run.jsonl").exists()


def test_seeds_up_to_2_63_minus_1_work_where_the_family_takes_them():
    big = 2**63 - 1
    positions = [e.position for e in get_protocol("ragen").resolve(seed=big).episodes]
    assert positions == [(big + i) % 1000 + 500 for i in range(256)]  # RAGEN's seed % 1000 + 500, in Python ints


@pytest.mark.parametrize("name, text, needle", [
    ("agentgym", "[" * 100_000 + "]" * 100_000, "nested deeper than any goal-id file"),
    ("agentgym", json.dumps([{"item_id": "webshop_" + "1" * 5000}]), "item 0: item_id 'webshop_<5,000 digits>' is not a goal index"),
    ("seed-fairness", '{"metadata": {"goal_idx": ' + "1" * 5000 + "}}\n", "holds a number too long to be a goal id"),
    ("seed-fairness", json.dumps({"metadata": {"goal_idx": 10**30}}) + "\n", "line 1: metadata.goal_idx: expected a goal index"),
])
def test_bad_goal_id_files_are_one_line(name, text, needle, tmp_path, capsys):
    path = tmp_path / "ids.json"
    path.write_text(text)
    err = _one_line_exit_2(["protocols", "show", name, "--protocol-file", str(path)], capsys, needle)
    assert len(err) < 600  # the 5,000 digits are not echoed


def test_goal_idx_10_30_inside_a_file_of_the_right_count(tmp_path):
    rows = [{"metadata": {"goal_idx": i}} for i in range(499)] + [{"metadata": {"goal_idx": 10**30}}]
    path = tmp_path / "evaluation.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ProtocolError, match=r"line 500: metadata.goal_idx: expected a goal index, an integer in 0-9,223,372,036,854,775,807, got an integer of 31 digits"):
        get_protocol("seed-fairness").resolve(ids_file=path)


def _fp():
    return {"catalog": "c", "files": {}, "content": {"items_ins_v2_1000.json": "8447a900e7c5e996",
                                                     "items_shuffle_1000.json": "f207cbbedfa38eac"},
            "products": 1000, "goals": 6910, "goal_kind": "synthetic", "price_seed": 0, "goal_set": "g"}


def test_a_file_protocols_fingerprint_digests_the_ids_it_holds(tmp_path):
    """The same ids written with CRLF line ends, blank lines or another indentation: the same fingerprint."""
    ids = list(range(3, 503))
    lf, crlf = tmp_path / "lf.jsonl", tmp_path / "crlf.jsonl"
    lf.write_text("".join(json.dumps({"metadata": {"goal_idx": i}}) + "\n" for i in ids))
    crlf.write_bytes(("\r\n\r\n".join(json.dumps({"metadata": {"goal_idx": i}, "prompt": "x"}) for i in ids) + "\r\n").encode())
    p = get_protocol("seed-fairness")
    a, b = p.resolve(ids_file=lf), p.resolve(ids_file=crlf)
    assert a.ids_file_sha256 != b.ids_file_sha256  # other bytes ...
    assert p.fingerprint(a, _fp()) == p.fingerprint(b, _fp())  # ... the same goals
    other = tmp_path / "other.jsonl"
    other.write_text("".join(json.dumps({"metadata": {"goal_idx": i}}) + "\n" for i in [*ids[:-1], 999]))
    assert p.fingerprint(p.resolve(ids_file=other), _fp()) != p.fingerprint(a, _fp())
    items = [{"item_id": f"webshop_{i}"} for i in FIRST10 + list(range(190))]
    compact, indented = tmp_path / "a.json", tmp_path / "b.json"
    compact.write_text(json.dumps(items))
    indented.write_text(json.dumps(items, indent=4).replace("\n", "\r\n"))
    g = get_protocol("agentgym")
    assert g.fingerprint(g.resolve(ids_file=compact), _fp()) == g.fingerprint(g.resolve(ids_file=indented), _fp())
