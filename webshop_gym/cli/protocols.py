"""``webshop-gym protocols``: list the evaluation protocols, or print one protocol's card.

``webshop-gym protocols`` prints one line per protocol (shop, goals, n, step cap, metrics,
source); ``webshop-gym protocols show NAME`` prints every field, the goal ids (or the rule and
the goals it resolves to for ``--seed``/``--validation``), the digests and the citations.  With
``--shop DIR`` the shop is checked against the protocol and the protocol fingerprint is printed.
"""

from __future__ import annotations

import argparse
import json

from webshop_gym.protocols import Protocol, get_protocol, protocol_names

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``webshop-gym protocols [show NAME ...]``."""
    from webshop_gym.cli import argtypes as types

    sub = parser.add_subparsers(dest="protocols_command", metavar="{show}")
    show = sub.add_parser("show", help="print one protocol's card: every field, the goal ids, the fingerprint, the sources",
                          description="Print one protocol's card: every field, the goal ids or the rule, the digests, "
                                      "the citations.")
    show.add_argument("name", metavar="NAME", help=f"the protocol ({', '.join(protocol_names())})")
    show.add_argument("--seed", type=types.seed, metavar="S",
                      help="the protocol's seed (verl-agent: the run's env.seed; ragen: seed.val); default: the protocol's")
    show.add_argument("--validation", type=types.at_most(types.non_negative_int, 10_000), default=0, metavar="K",
                      help="the K-th validation of a run (verl-agent draws new goals each time; default 0; at most 10,000)")
    show.add_argument("--protocol-file", metavar="FILE", type=types.existing_file,
                      help="the protocol's goal-id file in its family's format (agentgym, seed-fairness)")
    show.add_argument("--shop", metavar="DIR", type=types.existing_dir,
                      help="check this shop against the protocol and print the protocol fingerprint")
    show.add_argument("--json", action="store_true", help="print the card as one JSON object")


def _ranges(ids) -> str:
    """``0-499`` style runs of sorted or unsorted ids, in the given order."""
    out, start, prev = [], None, None
    for i in ids:
        i = int(i)
        if start is not None and i == prev + 1:
            prev = i
            continue
        if start is not None:
            out.append(f"{start}" if start == prev else f"{start}-{prev}")
        start = prev = i
    if start is not None:
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ", ".join(out)


def _rule(spec: dict, protocol: Protocol) -> str:
    order = spec["list"]
    shuffle = order.get("shuffle_seed", 233)
    listing = ("the reference's goal list (random.Random(233) shuffle; our order)" if shuffle == 233
               else "each worker's own goal list (shuffled with the worker's seed)" if shuffle == "worker"
               else f"the goal list shuffled with random.Random({shuffle})")
    if order.get("permutation_seed") is not None:
        listing += f", positions permuted with random.Random({order['permutation_seed']})"
    indices = spec["indices"]
    seed_name = (protocol.seed or {}).get("name", "seed")
    if "range" in indices:
        a, b = indices["range"]
        what = f"positions {a} to {'the end' if b is None else b - 1}"
    elif "draw" in indices:
        d = indices["draw"]
        what = (f"per validation, {d.get('draws_per_validation', 1)} draw(s) of np.random.RandomState({seed_name} + "
                f"{d.get('seed_offset', 0)}).choice(range({d['population'][0]}, {d['population'][1]}), {d['size']}, "
                f"replace={d.get('replace', False)}) from one generator")
    elif "seeds" in indices:
        s = indices["seeds"]
        what = f"env seeds {seed_name} + 0..{s['count'] - 1}, each at position seed % {s['mod']} + {s['add']}"
    else:
        f = indices["file"]
        what = f"the {f.get('count')} ids of {f.get('where')} (format {f['format']})"
    workers = spec.get("workers")
    if workers:
        what += f"; worker i (of {workers['count']}) has seed {seed_name} + {workers.get('seed_offset', 0)} + i"
    return f"{what}, in {listing}"


def _card(protocol: Protocol, args) -> dict:
    shop = None
    num_goals = None
    if args.shop:
        from webshop_gym.shop import load_shop  # loads a catalog: only when --shop is given

        shop = load_shop(args.shop, human_goals=protocol.goal_kind == "human", progress=False)
        protocol.check_shop(shop)
        num_goals = len(shop.goals)
    card = {"protocol": protocol.data, "definition_digest": protocol.definition_digest()}
    if protocol.needs_file and not args.protocol_file:
        card["resolution"] = None
    else:
        resolution = protocol.resolve(args.seed, args.validation, num_goals=num_goals, ids_file=args.protocol_file)
        card["resolution"] = {
            "seed": resolution.seed, "validation": resolution.validation, "ids_digest": resolution.ids_digest(),
            "ids_file_sha256": resolution.ids_file_sha256,
            "episodes": [e.as_dict() for e in resolution.episodes],
        }
        if shop is not None:
            card["fingerprint"] = protocol.fingerprint(resolution, shop)
            card["shop"] = shop.fingerprint()
    return card


def _print_card(protocol: Protocol, card: dict) -> None:
    p = protocol.data
    lines = [
        f"{p['name']} (version {p['version']}): {p['title']}",
        f"  family: {p['family']}",
        f"  reports: {p['reports']}",
        f"  shop: {protocol.describe_shop()}",
        f"  goals: {p['goal_kind']}",
        "  seed: " + ("none (fixed goals)" if p.get("seed") is None else f"{p['seed']['name']} (default {p['seed']['default']})"),
        f"  test: {_rule(p['test'], protocol)}",
        "  train: " + ("not defined by the family" if p.get("train") is None else _rule(p["train"], protocol)),
        f"  price seed: {'each worker seed' if p.get('price_seed') == 'worker' else p.get('price_seed', 0)}",
        f"  step cap: {p['step_cap']}",
        "  reward: " + ("the raw WebShop reward" if p["reward"]["transform"] == "raw" else
                        f"{p['reward']['success_value']:g} on success, else {p['reward']['failure_value']:g}"),
        f"  success: raw reward >= {p['success']['raw_at_least']:g}" + (" on a purchase" if p["success"].get("needs_purchase", True) else ""),
        "  metrics: " + ", ".join(f"{m.get('label', m['name'])} = mean {m['of']} x {m.get('scale', 1):g}"
                                  + (f" ({m['family_key']})" if m.get("family_key") else "") for m in p["metrics"]),
        f"  aggregate: mean over {p['aggregate']['over']}",
        f"  samples per goal: {p['samples_per_goal']}",
        f"  definition digest: {card['definition_digest']}",
    ]
    resolution = card["resolution"]
    if resolution is None:
        lines.append(f"  goal ids: read from your copy of the file: --protocol-file FILE "
                     f"({p['test']['indices']['file'].get('where')})")
    else:
        episodes = resolution["episodes"]
        lines.append(f"  resolved: {len(episodes)} episodes (seed {resolution['seed']}, validation {resolution['validation']}), "
                     f"ids digest {resolution['ids_digest']}"
                     + (f", file sha256 {resolution['ids_file_sha256'][:16]}" if resolution["ids_file_sha256"] else ""))
        if any("worker" in e for e in episodes):
            lines.append("  episodes (draw/worker: position -> goal @ price seed): " + ", ".join(
                f"{e['draw']}/{e['worker']}: {e['position']}->{e['goal']}@{e['price_seed']}" for e in episodes))
        else:
            lines.append(f"  goal ids: {_ranges(e['goal'] for e in episodes)}")
    if "fingerprint" in card:
        lines.append(f"  fingerprint: {card['fingerprint']} (shop catalog {card['shop']['catalog']})")
    else:
        lines.append("  fingerprint: give --shop DIR (it digests the definition, the goals and the shop's fingerprint)")
    lines.append("  sources:")
    lines += [f"    {s['field']}: {s['repo']} {s['file']} @ {s['commit'][:12]}: {s['read']}" for s in p["sources"]]
    if p.get("notes"):
        lines.append("  notes:")
        lines += [f"    - {note}" for note in p["notes"]]
    print("\n".join(lines))


def run(args) -> int:
    """Run ``webshop-gym protocols`` (the list) or ``webshop-gym protocols show NAME`` (a card)."""
    if getattr(args, "protocols_command", None) != "show":
        rows = [get_protocol(name).summary() for name in protocol_names()]
        width = max(len(r["name"]) for r in rows)
        for r in rows:
            n = "?" if r["n"] is None else f"{r['n']}"
            print(f"{r['name']:<{width}}  shop {r['shop']:<4}  {r['goals']:<9}  n {n:>4}  cap {r['step_cap']:>3}  "
                  f"{'/'.join(r['metrics']):<8}  {r['source']}")
        return 0
    protocol = get_protocol(args.name)
    card = _card(protocol, args)
    if args.json:
        print(json.dumps(card, indent=1))
    else:
        _print_card(protocol, card)
    return 0
