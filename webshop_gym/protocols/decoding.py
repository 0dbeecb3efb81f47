"""Decoding is part of a protocol: how the family's model chose its tokens when the number was measured.

A protocol's ``decoding`` object holds ``do_sample`` (sampling or greedy), ``temperature``,
``top_p`` and ``max_new_tokens`` as the family's code fixes them (``null``: a value no line of
its code fixes), or is ``null`` itself (the family fixes no decoding: trained IL/RL models, this
package's own protocol).  :func:`normalized` writes a decoding the one way the fingerprint digests
it (greedy decoding has no temperature or top-p); :func:`deviation` says how a played decoding
differs from the protocol's; :func:`decoding_text` writes one in words.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["KEYS", "check_decoding", "decoding_text", "deviation", "normalized"]

KEYS = ("do_sample", "temperature", "top_p", "max_new_tokens")


def normalized(decoding: Mapping | None) -> dict | None:
    """``decoding`` with every key, greedy decoding without temperature and top-p (``None`` stays ``None``)."""
    if decoding is None:
        return None
    out = {k: decoding.get(k) for k in KEYS}
    if out["do_sample"] is False:
        out["temperature"] = out["top_p"] = None
    for k in ("temperature", "top_p"):
        if out[k] is not None:
            out[k] = float(out[k])
    return out


def check_decoding(decoding) -> str | None:
    """Why a protocol's ``decoding`` field is malformed (``None``: well formed)."""
    if decoding is None:
        return None
    if not isinstance(decoding, Mapping):
        return f"field 'decoding' must be null or an object, got {decoding!r}"
    extra = sorted(set(decoding) - set(KEYS))
    if extra:
        return f"decoding: unknown field {extra[0]!r} (fields: {', '.join(KEYS)})"
    if not isinstance(decoding.get("do_sample"), bool):
        return f"decoding.do_sample must be true or false, got {decoding.get('do_sample')!r}"
    for key, low in (("temperature", 0.0), ("top_p", 0.0)):
        value = decoding.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < low):
            return f"decoding.{key} must be null or a number >= {low:g}, got {value!r}"
    tokens = decoding.get("max_new_tokens")
    if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1):
        return f"decoding.max_new_tokens must be null or an integer >= 1, got {tokens!r}"
    return None


def decoding_text(decoding: Mapping | None) -> str:
    """A decoding in words: ``sampling, temperature 0.4, top-p 1, at most 512 new tokens``, ``greedy``."""
    if decoding is None:
        return "no decoding"
    d = normalized(decoding)
    parts = ["sampling" if d["do_sample"] else "greedy"]
    if d["do_sample"]:
        if d["temperature"] is not None:
            parts.append(f"temperature {d['temperature']:g}")
        if d["top_p"] is not None:
            parts.append(f"top-p {d['top_p']:g}")
    if d["max_new_tokens"] is not None:
        parts.append(f"at most {d['max_new_tokens']} new tokens")
    return ", ".join(parts)


def deviation(played: Mapping, own: Mapping | None) -> bool:
    """Whether ``played`` differs from ``own`` in a value ``own`` fixes (``own`` ``None``: it fixes none)."""
    if own is None:
        return False
    p, o = normalized(played), normalized(own)
    if p["do_sample"] != o["do_sample"]:
        return True
    keys = ("temperature", "top_p", "max_new_tokens") if o["do_sample"] else ("max_new_tokens",)
    return any(o[k] is not None and p[k] != o[k] for k in keys)
