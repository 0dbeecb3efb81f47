"""Tests of an optional extra skip naming the extra, whatever error its missing package raises."""

from __future__ import annotations

import pytest

from tests.helpers import require_extra


def _module(tmp_path, monkeypatch, name: str, body: str) -> str:
    (tmp_path / f"{name}.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_a_missing_extra_skips_with_its_pip_line_on_any_error(tmp_path, monkeypatch):
    # what webshop_gym.integrations.gem does without gem-llm: an ImportError subclass, not ModuleNotFoundError
    name = _module(tmp_path, monkeypatch, "extra_probe_a",
                   "from webshop_gym.error import DependencyNotInstalled\nraise DependencyNotInstalled('no gem')\n")
    with pytest.raises(pytest.skip.Exception, match=r"no-such-dist-x not installed .*: pip install 'webshop-gym\[gem\]'"):
        require_extra(name, "gem", distributions=("no-such-dist-x",))
    name = _module(tmp_path, monkeypatch, "extra_probe_b", "raise RuntimeError('half-installed')\n")
    with pytest.raises(pytest.skip.Exception, match="webshop-gym\\[skyrl\\]"):
        require_extra(name, "skyrl", distributions=("no-such-dist-y",))


def test_an_installed_extra_that_fails_to_import_is_an_error_not_a_skip(tmp_path, monkeypatch):
    name = _module(tmp_path, monkeypatch, "extra_probe_c", "raise RuntimeError('a real bug')\n")
    with pytest.raises(RuntimeError, match="a real bug"):
        require_extra(name, "report", distributions=("numpy",))  # numpy is installed: the error is real


def test_an_importable_module_is_returned(tmp_path, monkeypatch):
    name = _module(tmp_path, monkeypatch, "extra_probe_d", "VALUE = 7\n")
    assert require_extra(name, "report", distributions=("no-such-dist-z",)).VALUE == 7
