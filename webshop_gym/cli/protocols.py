"""``webshop-gym protocols``: list the evaluation protocols, or print one protocol's card.

``webshop-gym protocols`` prints one line per protocol (shop, goals, n, step cap, metrics,
source); ``webshop-gym protocols show NAME`` prints every field, the goal ids (or the rule and
the goals it resolves to for ``--seed``/``--validation``), the digests and the citations.  With
``--shop DIR`` the shop is checked against the protocol and the protocol fingerprint is printed.
"""

from __future__ import annotations

import argparse
import json
import textwrap

from webshop_gym.error import ProtocolError
from webshop_gym.protocols import Protocol, get_protocol, protocol_names
from webshop_gym.protocols.decoding import decoding_text
from webshop_gym.protocols.steps import step_text

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``webshop-gym protocols [show NAME ...]``."""
    from webshop_gym.cli import argtypes as types

    sub = parser.add_subparsers(dest="protocols_command", metavar="{list,show}")
    sub.add_parser("list", help="one line per protocol (the same as `webshop-gym protocols`)",
                   description="One line per protocol: shop, goals, n, step cap, metrics, source; then the aliases.")
    show = sub.add_parser("show", help="print one protocol's card: every field, the goal ids, the fingerprint, the sources",
                          description="Print one protocol's card: every field, the goal ids or the rule, the digests, "
                                      "the citations.")
    show.add_argument("name", metavar="NAME", help=f"the protocol ({', '.join(protocol_names())})")
    show.add_argument("--seed", type=types.seed, metavar="S",
                      help="the protocol's seed (verl-agent: the run's env.seed; ragen: seed.val); default: the protocol's")
    show.add_argument("--validation", type=types.at_most(types.non_negative_int, 10_000), default=0, metavar="K",
                      help="the K-th validation of a run (verl-agent draws new goals each time; default 0; at most 10,000)")
    show.add_argument("--protocol-file", metavar="FILE", type=types.existing_file,
                      help="the protocol's goal-id file in its family's format (agentgym, seed-fairness, agentboard)")
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
    elif "ids" in indices:
        from webshop_gym.protocols.idlists import id_list

        shipped = id_list(indices["ids"]["list"])
        what = f"the {len(shipped.ids)} ids of the shipped list {shipped.name!r} ({shipped.cite()})"
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
    card = {"protocol": protocol.data, "definition_digest": protocol.definition_digest(),
            "test_train_overlap": _overlap(protocol, num_goals, args)}
    if protocol.needs_file and not args.protocol_file or (protocol.reads_goal_file and shop is None):
        card["resolution"] = None
    else:
        from webshop_gym.protocols.definition import goal_lookup

        lookup = goal_lookup(shop.goals) if protocol.reads_goal_file else None
        try:
            resolution = protocol.resolve(args.seed, args.validation, num_goals=num_goals, ids_file=args.protocol_file,
                                          goal_lookup=lookup)
        except ProtocolError as exc:  # the library's words name its argument; the command's name the flag
            raise ProtocolError(str(exc).replace("pass num_goals= (or a shop)", "give the shop: --shop DIR")) from None
        card["resolution"] = {
            "seed": resolution.seed, "validation": resolution.validation, "ids_digest": resolution.ids_digest(),
            "ids_file_sha256": resolution.ids_file_sha256, "notes": list(resolution.notes),
            "episodes": [e.as_dict() for e in resolution.episodes],
        }
        if shop is not None:
            card["fingerprint"] = protocol.fingerprint(resolution, shop)
            card["shop"] = shop.fingerprint()
    return card


def _overlap(protocol: Protocol, num_goals: int | None, args) -> dict | None:
    """How many of the goals the test can play are also train goals (``None``: no train, or unknown here)."""
    if protocol.train is None or (protocol.reads_file and args.protocol_file is None and protocol.needs_file):
        return None
    try:
        test = protocol.test_ids(args.seed, num_goals=num_goals, ids_file=args.protocol_file)
        train = protocol.train_ids(args.seed, num_goals=num_goals)
    except ProtocolError:  # a list that needs the shop's goal count (an open range on the full release)
        return None
    import numpy as np

    return {"test": int(len(test)), "train": int(len(train)), "both": int(len(np.intersect1d(test, train)))}


def _source_line(s: dict) -> str:
    where = f"{s['file']}:{s['line']}" if s.get("line") else s["file"]
    return f"    {s['field']}: {s['repo']} {where} @ {s['commit'][:12]}: {s['read']}"


def _decoding_line(p: dict) -> str:
    if p.get("decoding") is None:
        return "none fixed (eval records the decoding its hf: or openai: policy used)"
    cited = [s for s in p["sources"] if "decoding" in {f.strip() for f in s["field"].split(",")}]
    where = f" ({cited[-1]['file']}:{cited[-1]['line']})" if cited and cited[-1].get("line") else ""
    return (f"{decoding_text(p['decoding'])}{where} (eval's default for hf: and openai: policies; another is a "
            "deviation)")


def _print_card(protocol: Protocol, card: dict) -> None:
    p = protocol.data
    from webshop_gym.protocols.definition import prompt_text

    lines = [
        f"{p['name']} (version {p['version']}): {p['title']}",
        *([f"  also known as: {', '.join(p['aliases'])}"] if p.get("aliases") else []),
        *([f"  extends: {p['extends']} (the values below are merged; see its card for the rest)"] if p.get("extends") else []),
        f"  family: {p['family']}",
        f"  reports: {p['reports']}",
        f"  shop: {protocol.describe_shop()}",
        f"  goals: {p['goal_kind']}",
        "  seed: " + ("none (fixed goals)" if p.get("seed") is None else f"{p['seed']['name']} (default {p['seed']['default']})"),
        f"  test: {_rule(p['test'], protocol)}",
        "  train: " + ("not defined by the family" if p.get("train") is None else _rule(p["train"], protocol)),
        f"  price seed: {'each worker seed' if p.get('price_seed') == 'worker' else p.get('price_seed', 0)}",
        f"  step cap: {p['step_cap']} ({step_text(p)})",
        "  reward: " + ("the raw WebShop reward" if p["reward"]["transform"] == "raw" else
                        f"{p['reward']['success_value']:g} on success, else {p['reward']['failure_value']:g}"),
        f"  success: raw reward >= {p['success']['raw_at_least']:g}" + (" on a purchase" if p["success"].get("needs_purchase", True) else ""),
        "  metrics: " + ", ".join(f"{m.get('label', m['name'])} = mean {m['of']} x {m.get('scale', 1):g}"
                                  + (f" ({m['family_key']})" if m.get("family_key") else "") for m in p["metrics"]),
        f"  aggregate: mean over {p['aggregate']['over']}",
        f"  samples per goal: {p['samples_per_goal']}",
        f"  observation: {p['observation']['mode']} (the env's observation mode eval plays)",
        f"  prompt: {prompt_text(p['prompt'])} (eval's default --prompt for hf: and openai: policies)",
        f"  decoding: {_decoding_line(p)}",
        f"  definition digest: {card['definition_digest']}",
    ]
    overlap = card.get("test_train_overlap")
    if overlap:
        lines.append(f"  test and train: {overlap['both']:,} of the {overlap['test']:,} goals the test can play are also among "
                     f"the family's {overlap['train']:,} train goals")
    resolution = card["resolution"]
    if resolution is None:
        lines.append(f"  goal ids: read from your copy of the file: --protocol-file FILE "
                     f"({p['test']['indices']['file'].get('where')})"
                     + ("; its goals are matched to the shop's: give --shop DIR too" if protocol.reads_goal_file else ""))
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
        lines += [f"  note: {note}" for note in resolution.get("notes") or ()]
    if "fingerprint" in card:
        lines.append(f"  fingerprint: {card['fingerprint']} (shop catalog {card['shop']['catalog']})")
    else:
        lines.append("  fingerprint: give --shop DIR (it digests the definition, the goals and the shop's fingerprint)")
    lines.append("  sources (field: repository file:line @ commit: what was read):")
    lines += [_source_line(s) for s in p["sources"]]
    if p.get("decided_here"):
        lines.append("  decided here (no line of the family's code fixes these):")
        lines += [f"    {field}: {why}" for field, why in p["decided_here"].items()]
    if p.get("notes"):
        lines.append("  notes:")
        lines += [f"    - {note}" for note in p["notes"]]
    print("\n".join(_wrapped(lines)))


#: The widest line a card or the list prints: a longer one (a verl-agent card's 256 episodes) wraps, indented.
WIDTH = 100


def _wrapped(lines: list[str], width: int = WIDTH) -> list[str]:
    """Each line longer than ``width`` wrapped at spaces (never inside a word), its continuation indented 4 more."""
    out = []
    for line in lines:
        if len(line) <= width:
            out.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip(" ")) + 4)
        out += textwrap.wrap(line, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)
    return out


def run(args) -> int:
    """Run ``webshop-gym protocols`` (the list) or ``webshop-gym protocols show NAME`` (a card)."""
    if getattr(args, "protocols_command", None) != "show":
        protocols = [get_protocol(name) for name in protocol_names()]
        rows = [p.summary() for p in protocols]
        width = max(len(r["name"]) for r in rows)
        for p, r in zip(protocols, rows, strict=True):
            n = "?" if r["n"] is None else f"{r['n']}"
            print(f"{r['name']:<{width}}  shop {r['shop']:<4}  {r['goals']:<9}  n {n:>4}  cap {r['step_cap']:>3}  "
                  f"{'/'.join(r['metrics']):<8}  {r['source']}" + ("  [needs --protocol-file]" if p.needs_file else ""))
        if any(p.needs_file for p in protocols):
            print("[needs --protocol-file]: the goal ids are read from your copy of the family's file\n"
                  "    (eval and protocols show take --protocol-file FILE; the card says which file)")
        from webshop_gym.protocols.definition import alias_names

        aliases = alias_names()
        if aliases:
            print("aliases: " + ", ".join(f"{a} = {n}" for a, n in sorted(aliases.items())))
        return 0
    protocol = get_protocol(args.name)
    card = _card(protocol, args)
    if args.json:
        print(json.dumps(card, indent=1))
    else:
        _print_card(protocol, card)
    return 0
