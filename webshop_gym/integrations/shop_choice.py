"""Which shop a training stack's environment plays: a portable name, resolved on the machine that plays it.

A dataset file written on one machine and trained on another must not carry a local path.  Rows
(SkyRL's) name the shop by its directory's name (``"webshop-small"``; ``"embedded"`` for the
embedded default shop) and a digest of its content; the machine that plays them finds the directory
through the :data:`SHOP_ENV` environment variable and checks the digest.  The same variable picks the
shop of GEM's ``webshop:*`` ids, which take no path through ``gem.make``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from webshop_gym.error import InvalidArgument
from webshop_gym.shop import Shop

__all__ = ["EMBEDDED", "SHOP_ENV", "check_digest", "environment_shop", "portable_name", "resolve_shop", "shop_digest"]

SHOP_ENV = "WEBSHOP_GYM_SHOP"
"""The environment variable naming this machine's shop directory (or a folder of shop directories)."""

EMBEDDED = "embedded"
"""The name of the embedded default shop."""


def environment_shop() -> str | None:
    """The shop directory :data:`SHOP_ENV` names (``None`` when unset or empty: the embedded shop)."""
    return os.environ.get(SHOP_ENV) or None


def portable_name(shop: str | os.PathLike | None) -> str:
    """The name a row gives ``shop``: its directory's name, or :data:`EMBEDDED`."""
    return EMBEDDED if shop is None else Path(shop).expanduser().resolve().name


def shop_digest(shop: Shop) -> str:
    """A digest of the shop's product files' canonical content (formatting does not count), 16 hex digits."""
    content = json.dumps(shop.fingerprint()["content"], sort_keys=True)
    return hashlib.sha256(content.encode()).hexdigest()[:16]


def _is_path(name: str) -> bool:
    return os.sep in name or "/" in name or name.startswith(("~", "."))


def resolve_shop(name: str | os.PathLike | None) -> str | os.PathLike | None:
    """The shop directory a row's ``shop`` means on this machine (``None``: the embedded shop).

    ``None`` is :data:`SHOP_ENV`'s shop (the embedded one when it is unset); :data:`EMBEDDED` the
    embedded shop; a path (with a ``/``) that path; a plain name the directory of that name that
    :data:`SHOP_ENV` names, or holds.

    Raises:
        InvalidArgument: a name that :data:`SHOP_ENV` does not lead to.
    """
    if name is None:
        return environment_shop()
    if isinstance(name, os.PathLike):
        return name
    if not isinstance(name, str) or not name:
        raise InvalidArgument(f"shop must be a shop's name, a directory or None, got {name!r}")
    if name == EMBEDDED:
        return None
    if _is_path(name):
        return name
    here = environment_shop()
    if here is not None:
        folder = Path(here).expanduser()
        if folder.name == name:
            return str(folder)
        if (folder / name).is_dir():
            return str(folder / name)
    raise InvalidArgument(f"the row names shop {name!r}: set {SHOP_ENV} to its directory on this machine (or to a "
                          f"folder holding it); {SHOP_ENV} is {'unset' if here is None else repr(here)}")


def check_digest(shop: Shop, name: str | os.PathLike | None, digest: str | None) -> None:
    """Refuse a shop whose content is not the one a row was built on (``digest=None``: nothing to check)."""
    if digest is not None and shop_digest(shop) != digest:
        raise InvalidArgument(f"shop {name!r} here ({shop.path}) is not the shop the rows were built on: its content "
                              f"digest is {shop_digest(shop)}, the rows' {digest}")
