"""What a served model's episodes cost: each call added to its episode's totals, and ``eval``'s rows of a run's totals.

:func:`add_call` is the one place a model call's usage, requests, retries and latency enter an
episode's record (:mod:`webshop_gym.evaluation.in_flight` calls it per answer); a run's totals
are summed from those records by :func:`webshop_gym.analysis.figures.accounting`, and
:func:`accounting_rows` words them for ``eval``'s table.
"""

from __future__ import annotations

__all__ = ["accounting_rows", "add_call"]


def add_call(episode: dict, call) -> None:
    """Add one call's usage, requests, retries and latency to the episode's totals."""
    episode["requests"] += call.requests
    episode["retries"] += call.retries
    episode["latency_s"] = round(episode["latency_s"] + call.latency_s, 6)
    totals = episode["tokens"]
    for key, value in (("prompt", call.prompt_tokens), ("completion", call.completion_tokens)):
        if value is None:
            if call.error is None:
                totals[key] = None  # the server sent no usage: the total is unknown
        elif totals[key] is not None:
            totals[key] += int(value)


def accounting_rows(result: dict) -> list[tuple[str, str]]:
    """The rows ``eval``'s table adds for a served model (errored episodes, tokens, requests, cost)."""
    tokens = result.get("tokens") or {}
    episodes = result["counts"]["episodes"] + result.get("errored", 0)
    per = tokens.get("per_episode")
    unknown = tokens.get("unknown", 0)
    rows = [
        ("tokens", f"{tokens.get('total', 0):,} ({tokens.get('prompt', 0):,} prompt + {tokens.get('completion', 0):,} "
                   f"completion; {per:,.0f} per episode)" if per is not None else "-"),
        ("requests / retries", f"{result.get('requests', 0):,} / {result.get('retries', 0):,}"),
    ]
    if unknown:
        rows[0] = (rows[0][0], rows[0][1] + f"; {unknown} episodes without usage from the server")
    if result.get("errored"):  # said only when something errored
        rows.insert(0, ("errored episodes", f"{result['errored']} of {episodes} (not scored: the model's calls failed)"))
    if result.get("cost") is not None:
        rows.append(("cost", f"{result['cost']:.4f} USD (at the prices given, USD per million tokens)"))
    whole = result.get("billed")
    if whole:  # a resumed run: what every session sent, the attempts --resume dropped included
        text = (f"{whole['tokens']['total']:,} tokens, {whole['requests']:,} requests / {whole['retries']:,} retries "
                f"over {whole['episodes']:,} episodes played (kept and dropped)")
        if result.get("cost_billed") is not None:
            text += f"; cost {result['cost_billed']:.4f} USD"
        rows.append(("whole run", text))
    return rows
