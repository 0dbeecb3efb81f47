"""A test of an optional extra skips, naming the extra, whatever ImportError the missing extra raises."""

from __future__ import annotations

import sys

import pytest

from tests.helpers import require_extra


def test_a_missing_extra_skips_naming_it_even_when_our_module_raises_dependency_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "gem", None)  # `import gem` now fails as if gem-llm were not installed
    monkeypatch.delitem(sys.modules, "webshop_gym.integrations.gem", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"DependencyNotInstalled: .*pip install 'webshop-gym\[gem\]'"):
        require_extra("webshop_gym.integrations.gem", "gem", "gem-llm")


def test_a_module_that_is_not_there_skips_too():
    with pytest.raises(pytest.skip.Exception, match=r"ModuleNotFoundError: .*pip install 'webshop-gym\[x\]'"):
        require_extra("no_such_module_here", "x")
