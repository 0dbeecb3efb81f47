"""``webshop-gym serve``: the play UI, the reference site's URLs and AgentGym's API on one port.

Every flag is checked by the parser (``webshop_gym.cli.argtypes``): a bad value is one line and
exit status 2 before anything loads.  The app is served by uvicorn through the ASGI front of
:mod:`webshop_gym.server.asgi` (the AgentGym API answered on the event loop, its steps batched;
every other page by Flask on ``--threads`` threads); ``--dev`` serves the Flask app alone with
Werkzeug's development server, as ``flask run`` would (the AgentGym API then steps each request
alone).  The URL is printed only once the port is bound (``--port 0`` picks a free port and prints
it).  Flask and uvicorn are imported only when the command runs, so ``webshop-gym --help`` works
without them.
"""

from __future__ import annotations

import argparse
import sys

from webshop_gym.cli import argtypes as types
from webshop_gym.utils.heap import freeze_loaded

__all__ = ["add_arguments", "config_from_args", "run"]

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``serve`` flags to ``parser``."""
    from webshop_gym.cli.app import add_shop_arguments

    add_shop_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1", type=types.host, metavar="ADDRESS",
                        help="address to bind: an IP address or a host name that resolves "
                             "(default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=types.port, default=3000,
                        help="port (default 3000, the reference site's; 0: any free port, printed at start)")
    parser.add_argument("--max-steps", type=types.at_most(types.non_negative_int, types.MAX_STEPS), default=15,
                        metavar="N", help="play UI: actions per episode before it ends with reward 0 "
                                          f"(default 15; 0: no cap; at most {types.MAX_STEPS:,})")
    parser.add_argument("--session-ttl", type=types.seconds, default=3600, metavar="SECONDS",
                        help="play UI: idle seconds after which a session expires (default 3600; 0: never; "
                             f"at most {types.MAX_SECONDS:,})")
    parser.add_argument("--max-sessions", type=types.at_most(types.positive_int, types.MAX_SESSIONS), default=1000,
                        metavar="N", help="play UI: sessions alive at once; the least recently used is evicted "
                                          f"beyond (default 1000; at most {types.MAX_SESSIONS:,})")
    parser.add_argument("--log-dir", metavar="DIR", type=types.output_dir,
                        help="play UI: one JSONL trajectory log per session in DIR (replay with `webshop-gym replay`)")
    parser.add_argument("--log-fsync", action="store_true", help="fsync every log line (survives a machine crash)")
    parser.add_argument("--images", action="store_true", help="show product images (loaded from their remote URLs)")
    parser.add_argument("--show-attrs", action="store_true", help="show the Attributes tab on item pages")
    parser.add_argument("--seed", type=types.seed, help="seed of random goals (default: fresh entropy)")
    parser.add_argument("--agentgym-max-envs", type=types.at_most(types.positive_int, types.MAX_SESSIONS),
                        default=1024, metavar="N", help="AgentGym API (/agentgym): environments alive at once "
                                                        f"(default 1024; at most {types.MAX_SESSIONS:,})")
    parser.add_argument("--agentgym-env-ttl", type=types.seconds, default=3600, metavar="SECONDS",
                        help="AgentGym API: idle seconds after which an environment may be evicted to make room "
                             f"(default 3600; 0: never; at most {types.MAX_SECONDS:,})")
    parser.add_argument("--threads", type=types.at_most(types.positive_int, types.MAX_THREADS), default=8, metavar="N",
                        help="threads that run the play UI's, the site's and the viewer's requests (default 8; at most "
                             f"{types.MAX_THREADS}; the simulator itself runs on one thread)")
    parser.add_argument("--dev", action="store_true",
                        help="serve the Flask app with Werkzeug's development server instead of uvicorn "
                             "(the AgentGym API then steps each request alone)")
    parser.add_argument("--runs", metavar="DIR", type=types.existing_dir,
                        help="also show the run files (webshop-gym eval --out DIR/NAME.jsonl) of DIR at /runs")


def config_from_args(args: argparse.Namespace) -> dict:
    """The :func:`~webshop_gym.server.create_app` config of parsed ``serve`` arguments."""
    return {
        "SHOP": args.shop,
        "GOALS": args.goals,
        "HUMAN_GOALS": args.human_goals,
        "PRICE_SEED": args.price_seed,
        "MAX_STEPS": args.max_steps or None,
        "SESSION_TTL": args.session_ttl or None,
        "MAX_SESSIONS": args.max_sessions,
        "LOG_DIR": args.log_dir,
        "LOG_FSYNC": args.log_fsync,
        "IMAGES": args.images,
        "SHOW_ATTRS": args.show_attrs,
        "SEED": args.seed,
        "AGENTGYM_MAX_ENVS": args.agentgym_max_envs,
        "AGENTGYM_ENV_TTL": args.agentgym_env_ttl or None,
        "RUNS": args.runs,
    }


class _Listener:
    """A bound HTTP server (uvicorn with the ASGI front, or Werkzeug) with the port it really got."""

    def __init__(self, app, host: str, port: int, threads: int, dev: bool):
        self.dev = dev
        if dev:
            from werkzeug.serving import make_server

            self._server = make_server(host, port, app, threaded=True)
            self.port = int(self._server.server_port)
        else:
            try:
                import uvicorn  # noqa: F401  (the server extra's ASGI server, imported only to serve)
            except ImportError as exc:
                from webshop_gym.error import DependencyNotInstalled

                raise DependencyNotInstalled(
                    "serving needs uvicorn (pip install 'webshop-gym[server]'), or use --dev for Werkzeug's server"
                ) from exc
            from webshop_gym.server.asgi import Front, Listener

            self._server = Listener(Front(app, threads=threads), host, port)
            self.port = self._server.port

    def serve(self) -> None:
        if self.dev:
            self._server.serve_forever()
        else:
            self._server.serve()

    def close(self) -> None:
        if self.dev:
            self._server.server_close()
        else:
            self._server.close()


def run(args: argparse.Namespace) -> int:
    """Build the app, bind the port, print the URL and serve until interrupted."""
    from webshop_gym.server import create_app

    app = create_app(config_from_args(args))
    store = app.extensions["webshop_gym"]
    listener = None
    try:
        try:  # bind first: a port in use fails before the warm-up
            listener = _Listener(app, args.host, args.port, args.threads, args.dev)
        except OSError as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            raise _BindError(f"cannot listen on {args.host}:{args.port}: {reason}") from exc
        store.warm_up()
        freeze_loaded()  # the shop's objects out of the collector: no full-collection stalls while serving
        goals = store.shop.goals
        host = f"[{args.host}]" if ":" in args.host else args.host
        base = f"http://{host}:{listener.port}"
        print(f"webshop-gym: {len(store.shop.catalog)} products, {len(goals)} {goals.kind} goals"
              + (f", logs in {args.log_dir}" if args.log_dir else "")
              + (" (Werkzeug development server)" if args.dev else ""))
        print(f"webshop-gym: reference site at {base}/<session> (e.g. {base}/fixed_0), "
              f"AgentGym API at {base}/agentgym")
        try:  # from the line that says it serves, a stop signal is the server's normal end
            print(f"webshop-gym: play at {base}/  (Ctrl+C to stop)", flush=True)
            if args.runs:
                print(f"webshop-gym: runs of {args.runs} at {base}/runs/", flush=True)
            if args.host not in LOCAL_HOSTS:
                print("webshop-gym: warning: the server has no authentication; anyone who can reach "
                      f"{args.host}:{listener.port} can play and read game pages", file=sys.stderr)
            listener.serve()  # uvicorn returns on Ctrl+C and SIGTERM (utils/serving.py)
        except KeyboardInterrupt:  # Werkzeug's server on Ctrl+C; a signal before uvicorn took over
            pass
        print("webshop-gym: stopped", flush=True)  # one place: one line, whatever stopped it
    finally:
        if listener is not None:
            listener.close()
        store.close()
        if "webshop_gym_runs" in app.extensions:
            app.extensions["webshop_gym_runs"].close()
    return 0


class _BindError(OSError):
    """The port could not be bound (in use, not allowed, unknown host)."""
