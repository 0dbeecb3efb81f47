"""`webshop-gym eval --policy hf:PATH` through the command line (issue 13, item 1)."""

from __future__ import annotations

import json

from webshop_gym.cli.app import main


def test_hf_policy_through_the_cli(make_tiny_model, tiny_tokenizer, tmp_path, capsys):
    """`eval --policy hf:PATH` used to crash with 'got multiple values for keyword argument seed'."""
    model_dir = tmp_path / "tiny"
    tiny_tokenizer.save_pretrained(model_dir)
    make_tiny_model().save_pretrained(model_dir)
    out = tmp_path / "r.json"
    argv = ["eval", "--policy", f"hf:{model_dir}", "--num-envs", "2", "--num-goals", "2", "--max-steps", "2",
            "--max-new-tokens", "3", "--max-prompt-tokens", "128", "--device", "cpu", "--dtype", "float32",
            "--sample", "--seed", "7", "--json", str(out), "--quiet"]
    assert main(argv) == 0
    first = json.loads(out.read_text())
    assert first["counts"]["episodes"] == 2 and first["policy"] == f"hf:{model_dir}" and first["seed"] == 7
    assert main(argv) == 0  # seeded sampling: the same run again
    again = json.loads(out.read_text())
    assert again["score"] == first["score"] and again["counts"] == first["counts"]
    capsys.readouterr()
