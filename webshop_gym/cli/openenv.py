"""``webshop-gym openenv``: serve WebShop as an OpenEnv environment (``pip install 'webshop-gym[openenv]'``).

Every flag is checked by the parser (one line, exit status 2, before anything loads); OpenEnv,
FastAPI and uvicorn are imported only when the command runs, so ``webshop-gym --help`` works
without them.  The URL is printed once the port is bound (``--port 0`` picks a free one).
"""

from __future__ import annotations

import argparse
import sys

from webshop_gym.cli import argtypes as types
from webshop_gym.error import Error

__all__ = ["BindError", "add_arguments", "add_parser", "run"]

HELP = "serve WebShop as an OpenEnv environment (WebSocket /ws; pip install 'webshop-gym[openenv]')"
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


class BindError(Error, OSError):
    """The port could not be bound (in use, not allowed, unknown host)."""


def _max_envs(text: str) -> int:
    from webshop_gym.integrations.openenv.app import MAX_ENVS

    value = types.positive_int(text)
    if value > MAX_ENVS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_ENVS:,}, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``openenv`` flags to ``parser``."""
    from webshop_gym.cli.app import add_shop_arguments
    from webshop_gym.integrations.openenv.app import (
        DEFAULT_IDLE_TIMEOUT,
        DEFAULT_MAX_ENVS,
        MAX_ENVS,
    )

    add_shop_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1", metavar="HOST", type=types.host,
                        help="address to bind (default 127.0.0.1: this machine only; 0.0.0.0 in a container)")
    parser.add_argument("--port", type=types.port, default=8000, metavar="PORT",
                        help="port (default 8000, OpenEnv's; 0: any free port, printed at start)")
    parser.add_argument("--max-envs", type=_max_envs, default=DEFAULT_MAX_ENVS, metavar="N",
                        help=f"WebSocket sessions alive at once, 1-{MAX_ENVS:,} (default {DEFAULT_MAX_ENVS}); "
                             "one more gets OpenEnv's CAPACITY_REACHED error frame")
    parser.add_argument("--idle-timeout", type=types.seconds, default=DEFAULT_IDLE_TIMEOUT,
                        metavar="SECONDS",
                        help=f"evict sessions idle this long and close their socket (default {DEFAULT_IDLE_TIMEOUT:g}; 0: never; "
                             f"at most {types.MAX_SECONDS:,})")
    parser.add_argument("--max-steps", type=types.at_most(types.non_negative_int, types.MAX_STEPS), default=15,
                        metavar="N", help=f"actions per episode before it is truncated (default 15; 0: no cap; at most {types.MAX_STEPS:,})")
    parser.add_argument("--seed-goals", action="store_true",
                        help="reset(seed=s) plays goal s (with split: the split's s-th goal) instead of a goal drawn "
                             "with seed s; for trainers that name tasks by seed (verifiers' OpenEnv taskset)")
    parser.add_argument("--observation-mode", default="text", choices=["text", "text_rich", "html", "url"],
                        help="what the observation's text field holds (default text)")


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register the ``openenv`` subcommand on ``subparsers`` (an ``add_subparsers()`` result)."""
    parser = subparsers.add_parser("openenv", help=HELP, description=HELP[0].upper() + HELP[1:] + ".")
    add_arguments(parser)
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Load the shop, bind the port, print the URL and serve until interrupted."""
    from webshop_gym.integrations.openenv.app import create_app, serve

    app = create_app(args.shop, goals=args.goals, human_goals=args.human_goals, price_seed=args.price_seed,
                     max_envs=args.max_envs, max_steps=args.max_steps or None,
                     idle_timeout=args.idle_timeout or None, observation_mode=args.observation_mode,
                     seed_goals=args.seed_goals, progress=True)
    shop = app.state.webshop_pool.shop
    host = f"[{args.host}]" if ":" in args.host else args.host

    def ready(port: int) -> None:
        print(f"webshop-gym openenv: {len(shop.catalog)} products, {len(shop.goals)} {shop.goals.kind} goals, "
              f"up to {args.max_envs} sessions")
        print(f"webshop-gym openenv: serving at http://{host}:{port} (WebSocket ws://{host}:{port}/ws; "
              "Ctrl+C to stop)", flush=True)
        if args.host not in LOCAL_HOSTS:
            print(f"webshop-gym openenv: warning: no authentication; anyone who can reach {args.host}:{port} "
                  "can open sessions", file=sys.stderr)

    try:
        serve(app, args.host, args.port, ready=ready)
    except OSError as exc:
        raise BindError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from exc
    except KeyboardInterrupt:
        pass
    print("webshop-gym openenv: stopped", flush=True)
    return 0
