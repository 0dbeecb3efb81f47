"""Decoding is part of a protocol (issue 53 item 4): each family's, with its line; eval's default; another is a deviation."""

from __future__ import annotations

import copy
import json

import pytest

from webshop_gym.cli.app import main
from webshop_gym.evaluation.plan import choose_decoding
from webshop_gym.protocols import Protocol, get_protocol, protocol_names
from webshop_gym.protocols.decoding import decoding_text
from webshop_gym.protocols.play import protocol_record


@pytest.mark.parametrize("name, decoding", [
    ("verl-agent", {"do_sample": True, "temperature": 0.4, "top_p": None, "max_new_tokens": None}),
    ("verl-agent-1draw", {"do_sample": True, "temperature": 0.4, "top_p": None, "max_new_tokens": None}),
    ("verl-agent-500", {"do_sample": True, "temperature": 0.4, "top_p": None, "max_new_tokens": None}),
    ("hgpo", {"do_sample": True, "temperature": 0.4, "top_p": None, "max_new_tokens": 512}),
    ("ragen", {"do_sample": True, "temperature": 0.5, "top_p": None, "max_new_tokens": 400}),
    ("ragen-512", {"do_sample": True, "temperature": 0.5, "top_p": None, "max_new_tokens": 400}),
    ("ragen-eval", {"do_sample": False, "temperature": None, "top_p": None, "max_new_tokens": 400}),
    ("react", {"do_sample": False, "temperature": None, "top_p": None, "max_new_tokens": 100}),
    ("agentboard", {"do_sample": False, "temperature": None, "top_p": None, "max_new_tokens": None}),
    ("agentgym", {"do_sample": False, "temperature": None, "top_p": None, "max_new_tokens": None}),
])
def test_each_familys_decoding_as_its_code_sets_it(name, decoding):
    """verl-agent's val_kwargs (T 0.4), HGPO's eval scripts (0.4, 512 tokens), RAGEN's base.yaml (0.5, 400) and
    eval_webshop.yaml (greedy), ReAct's notebook (temperature 0, 100 tokens)."""
    assert get_protocol(name).definition()["decoding"] == decoding


@pytest.mark.parametrize("name", protocol_names())
def test_a_decoding_is_cited_by_a_line_or_decided_here(name):
    p = get_protocol(name)
    cited = [s for s in p.sources if "decoding" in {f.strip() for f in s["field"].split(",")}]
    if p.data.get("decoding") is None:
        assert "decoding" in (p.data.get("decided_here") or {}), name
    else:
        assert cited and all(isinstance(s.get("line"), int) for s in cited), name


def test_eval_plays_the_protocols_decoding_by_default_and_another_is_a_deviation(default_shop):
    """hf: and openai: policies decode as the protocol unless told; a greedy run of verl-agent-500 is not its row."""
    protocol = get_protocol("verl-agent-500")
    prompt = {"format": "verl-agent", "history": 2}
    kwargs, played = choose_decoding("hf:model", {"prompt": "verl-agent"}, protocol)
    assert played == {"do_sample": True, "temperature": 0.4, "top_p": 1.0, "max_new_tokens": 128}
    assert (kwargs["do_sample"], kwargs["temperature"], kwargs["max_new_tokens"]) == (True, 0.4, 128)
    served, played_served = choose_decoding("openai:m", {"do_sample": None, "temperature": None}, protocol)
    assert served["temperature"] == 0.4 and "do_sample" not in served and played_served == played

    shop = default_shop
    own = get_protocol("verl-agent-500")
    default = prepare_record(protocol, shop, prompt, played)
    assert default["deviations"] == [] and default["played_decoding"] == played
    greedy = choose_decoding("hf:model", {"do_sample": False}, protocol)[1]
    other = prepare_record(protocol, shop, prompt, greedy)
    assert other["deviations"] == ["decoding greedy, at most 128 new tokens, the protocol's is sampling, temperature 0.4"]
    assert other["fingerprint"] != default["fingerprint"]
    hotter = prepare_record(protocol, shop, prompt, choose_decoding("hf:model", {"temperature": 0.7}, protocol)[1])
    assert hotter["deviations"] and hotter["fingerprint"] not in (default["fingerprint"], other["fingerprint"])
    # a policy that decodes nothing plays under the protocol's own decoding and records "no decoding"
    rule = prepare_record(protocol, shop, None, None)
    assert rule["played_decoding"] is None and decoding_text(rule["played_decoding"]) == "no decoding"
    assert rule["definition"]["decoding"] == own.data["decoding"]


def prepare_record(protocol, shop, prompt, decoding) -> dict:
    """The run line's protocol object of ``protocol`` played on ``shop`` (its shop check skipped: any shop's goals)."""
    played, deviations = protocol.played(prompt=prompt, decoding=decoding)
    resolution = played.resolve(num_goals=len(shop.goals))
    return protocol_record(played, resolution, shop, 1, deviations, prompt, decoding)


def test_sampling_flags_against_a_greedy_protocol_are_refused(capsys):
    assert main(["eval", "--policy", "openai:m", "--protocol", "react", "--temperature", "0.7", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("--temperature need --sample (protocol react's decoding is greedy: temperature 0)")
    assert "\n" not in err
    with pytest.raises(SystemExit) as stop:
        main(["eval", "--policy", "openai:m", "--greedy", "--sample", "--quiet"])
    assert stop.value.code == 2 and "not allowed with argument --greedy" in capsys.readouterr().err


def test_eval_prints_the_decoding_a_rule_policy_played(real_dir, capsys):
    """A policy that decodes nothing records 'no decoding' and plays under the protocol's own fingerprint."""
    assert main(["eval", "--policy", "rule", "--shop", str(real_dir), "--protocol", "agentgym", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert any(line.split() == ["decoding", "no", "decoding"] for line in out.splitlines()), out
    printed = json.loads(next(line for line in out.splitlines() if line.startswith("json: "))[len("json: "):])
    assert printed["protocol"]["decoding"] == "no decoding"


def test_a_policy_object_records_the_decoding_it_was_made_with(real_dir, tmp_path):
    """An OpenAIPolicy made by the caller and passed to evaluate decodes as it was made: the run records that
    decoding, as the served string form records its own, and one that differs from the protocol's is a deviation
    (before, an object recorded "no decoding" and its 128-token greedy play passed for ragen-eval's 400)."""
    pytest.importorskip("openai", reason="pip install 'webshop-gym[openai]' to run the served-model tests")
    from tests.openai_server import ChatServer
    from webshop_gym.agents.openai import OpenAIPolicy
    from webshop_gym.evaluation import evaluate

    protocol = get_protocol("ragen-eval")  # greedy, at most 400 new tokens
    data = copy.deepcopy(protocol.data)
    data["test"] = {"list": {"shuffle_seed": 233, "permutation_seed": 42}, "indices": {"range": [0, 2]}}
    small = dict(shop=str(real_dir), protocol=Protocol(data, ""), progress=False)
    with ChatServer() as server:
        served = evaluate("openai:scripted", base_url=server.url, max_retries=0, out=tmp_path / "served.jsonl", **small)
        results = {}
        for name, options in (("alike", {"max_new_tokens": 400}), ("longer", {}), ("hotter", {"max_new_tokens": 400,
                                                                                             "temperature": 0.7})):
            agent = OpenAIPolicy("scripted", base_url=server.url, prompt=protocol.data["prompt"]["format"],
                                 max_retries=0, **options)
            try:
                results[name] = evaluate(agent, out=tmp_path / f"{name}.jsonl", **small)["protocol_record"]
            finally:
                agent.close()
    greedy = {"do_sample": False, "temperature": None, "top_p": None, "max_new_tokens": 400}
    record = served["protocol_record"]
    assert record["played_decoding"] == results["alike"]["played_decoding"] == greedy
    assert results["alike"]["deviations"] == record["deviations"] == []
    assert results["alike"]["fingerprint"] == record["fingerprint"]
    assert results["longer"]["played_decoding"]["max_new_tokens"] == OpenAIPolicy("m", client=object()).max_new_tokens
    assert results["longer"]["deviations"] and results["longer"]["fingerprint"] != record["fingerprint"]
    assert results["hotter"]["played_decoding"] == {"do_sample": True, "temperature": 0.7, "top_p": 1.0,
                                                    "max_new_tokens": 400}
    assert any(d.startswith("decoding sampling") for d in results["hotter"]["deviations"]), results["hotter"]
    header = json.loads((tmp_path / "hotter.jsonl").read_text().splitlines()[0])
    assert header["protocol"]["played_decoding"] == results["hotter"]["played_decoding"]
