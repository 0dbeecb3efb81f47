"""`eval --policy openai:MODEL` against the local test server: requests/s against the ideal, and where the CPU goes.

The test server (tests/openai_server.py, its own process: one asyncio loop) answers every request
after a fixed latency (default 200 ms) with a scripted policy (3 turns per episode: search, open,
buy).  For each number of requests in flight (default 8, 64 and 256), the 500 test goals are
evaluated with `evaluate(OpenAIPolicy(..., http_client=C), out=...)`, the code path of `eval
--policy openai:scripted --concurrency N --out RUN.jsonl`, once per HTTP client C (`builtin`, the
default, and `openai`, the official client).  A first evaluation warms the process up (the search
cache of these goals' queries, the imports) and is not timed.

* ideal = in flight / latency requests per second (every slot always waiting on the server,
  zero overhead); "% of ideal" = measured requests/s / ideal.
* CPU per turn: this process (the evaluation and its HTTP client) and the test server's process.
* `--profile` samples both processes with py-spy (when it is on PATH) and splits this process's
  CPU by what runs: the HTTP client (the transport or the `openai` client with httpx and
  pydantic), the event loop, prompts, answers (decode + parse), the engine step, the run file and
  the loop's own bookkeeping.
* The load average (1 minute) is read after each row: other work on the machine takes CPU from
  both processes, and the figures are only comparable at a similar load.
* `--clients aiohttp httpx` put well-kept asyncio HTTP libraries in the built-in client's place
  (:class:`LibraryTransport`, here only: the same `post(body) -> Reply` contract, one session per
  event loop, a pool as large as the requests in flight, the body encoded as the built-in client
  does) to measure them side by side (issue 55); `--rounds K` alternates the clients K times in
  one sitting, so that a noisy machine weighs on each alike.

    python benchmarks/served_eval.py [--latency 0.2] [--goals 500] [--concurrency 8 64 256]
                                     [--clients builtin openai aiohttp httpx] [--rounds 1] [--profile] [--loop-only]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import save, start_chat_server, table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

#: py-spy's frames by what they run: the first rule that matches a frame, from the innermost frame out.
CATEGORIES = (
    ("http client", ("agents/transport.py", "/openai/", "/httpx", "/httpcore", "/h11/", "/pydantic", "/anyio/",
                     "/ssl.py", "concurrent/futures", "/threading.py")),
    ("event loop", ("asyncio/", "/selectors.py")),
    ("prompt", ("agents/prompts.py", "agents/tools.py")),
    ("answer (decode + parse)", ("agents/answer.py", "agents/parse.py", "agents/grammar.py")),
    ("run file", ("webshop_gym/runs/",)),
    ("engine step", ("webshop_gym/engine.py", "webshop_gym/core/", "webshop_gym/render/", "webshop_gym/search/",
                     "webshop_gym/reward/", "webshop_gym/shop.py", "webshop_gym/data/")),
    ("loop", ("webshop_gym/evaluation/", "agents/openai.py", "webshop_gym/analysis/")),
)


#: Innermost frames that wait rather than run (py-spy counts a thread in ``epoll_wait`` as running).
WAITS = ("select (selectors.py", "wait (threading.py", "_worker (concurrent/futures/thread.py")


def categorize(raw: Path) -> dict[str, float]:
    """Shares of py-spy's samples (``--format raw``) by :data:`CATEGORIES` (``other``: none matched; waits left out)."""
    counts: Counter = Counter()
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        frames = stack.split(";")
        if any(wait in frames[-1] for wait in WAITS):
            continue
        name = next((c for f in reversed(frames) for c, marks in CATEGORIES if any(m in f for m in marks)), "other")
        counts[name] += int(n)
    total = sum(counts.values()) or 1
    return {name: counts[name] / total for name in [c for c, _ in CATEGORIES] + ["other"]}


#: The clients a policy can use (``--http-client``), and those measured here in the built-in one's place.
LIBRARIES = ("aiohttp", "httpx")


class LibraryTransport:
    """``POST {base_url}/chat/completions`` through aiohttp's or httpx's asyncio client, read as the built-in one reads.

    One session per event loop (made on first use there, closed by :meth:`close` on that loop), its
    connection pool as large as the requests in flight, ``timeout`` the total of one request.
    """

    def __init__(self, library: str, base_url: str, timeout: float, concurrency: int):
        import weakref

        self.library = library
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.timeout = timeout
        self.concurrency = concurrency
        self.headers = {"Authorization": "Bearer EMPTY", "Content-Type": "application/json",
                        "Accept": "application/json"}
        self.sessions: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def _session(self, loop):
        session = self.sessions.get(loop)
        if session is None:
            if self.library == "aiohttp":
                import aiohttp

                session = aiohttp.ClientSession(
                    connector=aiohttp.TCPConnector(limit=self.concurrency, limit_per_host=self.concurrency),
                    timeout=aiohttp.ClientTimeout(total=self.timeout))
            else:
                import httpx

                session = httpx.AsyncClient(timeout=self.timeout, limits=httpx.Limits(
                    max_connections=self.concurrency, max_keepalive_connections=self.concurrency))
            self.sessions[loop] = session
        return session

    async def post(self, body: dict):
        import asyncio

        from webshop_gym.agents.transport import Reply, TransportError, encode

        session = self._session(asyncio.get_running_loop())
        data = encode(body)
        try:
            if self.library == "aiohttp":
                async with session.post(self.url, data=data, headers=self.headers) as response:
                    content = await response.read()
                    return Reply(response.status, {k.lower(): v for k, v in response.headers.items()}, content)
            response = await session.post(self.url, content=data, headers=self.headers)
            return Reply(response.status_code, response.headers, response.content)
        except asyncio.TimeoutError:
            raise TransportError("timed out", timeout=True) from None
        except Exception as exc:  # the library's connection errors
            raise TransportError(f"{type(exc).__name__}: {exc}") from None

    async def release(self) -> None:
        """Close the running loop's session (the policy's ``release``, awaited before the loop ends)."""
        import asyncio

        session = self.sessions.pop(asyncio.get_running_loop(), None)
        if session is not None:
            await (session.close() if self.library == "aiohttp" else session.aclose())

    def close(self, loop=None) -> None:
        """Nothing left: each loop's session was closed on it (:meth:`release`)."""


def make_policy(url: str, concurrency: int, client: str):
    from webshop_gym.agents import OpenAIPolicy

    policy = OpenAIPolicy("scripted", base_url=url, concurrency=concurrency, timeout=60, max_retries=3,
                          http_client="builtin" if client in LIBRARIES else client)
    if client in LIBRARIES:
        policy.transport = LibraryTransport(client, policy.base_url, 60.0, concurrency)
        policy.release = policy.transport.release
    return policy


def run_once(url: str, shop, goals: int, concurrency: int, latency: float, client: str, server_pid: int,
             profile: Path | None) -> dict:
    import psutil

    from webshop_gym.evaluation.local import evaluate

    policy = make_policy(url, concurrency, client)
    server, me = psutil.Process(server_pid), psutil.Process()
    spies = []
    if profile is not None:
        for pid, name in ((os.getpid(), "eval"), (server_pid, "server")):
            spies.append(subprocess.Popen(["py-spy", "record", "--nonblocking", "-r", "250", "-f", "raw", "-o",
                                           str(profile / f"{name}.txt"), "--pid", str(pid)],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(1.0)
    server_cpu0, cpu0 = sum(server.cpu_times()[:2]), sum(me.cpu_times()[:2])
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        result = evaluate(policy, shop=shop, split="test", num_goals=goals, concurrency=concurrency,
                          out=Path(folder) / "run.jsonl", keep_episodes=False)
        wall = time.perf_counter() - started
    cpu = sum(me.cpu_times()[:2]) - cpu0
    server_cpu = sum(server.cpu_times()[:2]) - server_cpu0
    policy.close()
    for spy in spies:
        spy.send_signal(signal.SIGINT)
        spy.wait(timeout=60)
    turns = result["counts"]["steps"]
    ideal = concurrency / latency
    row = {"in_flight": concurrency, "client": client, "goals": goals, "requests": result["requests"],
           "wall_s": round(wall, 2), "requests_per_s": round(result["requests"] / wall, 1), "ideal_per_s": ideal,
           "pct_of_ideal": round(100 * result["requests"] / wall / ideal, 1),
           "max_in_flight": result["requests_max_in_flight"], "errored": result["errored"],
           "eval_cpu_ms_per_turn": round(1000 * cpu / turns, 3),
           "server_cpu_ms_per_turn": round(1000 * server_cpu / turns, 3),
           "load_average": round(os.getloadavg()[0], 2)}
    if profile is not None:
        shares = categorize(profile / "eval.txt")
        row["eval_cpu_split_ms_per_turn"] = {k: round(v * 1000 * cpu / turns, 3) for k, v in shares.items()}
    return row


def loop_only(shop, goals: int, concurrency: int) -> dict:
    """Our part alone: the same loop with a policy that answers at once (the scripted answer, no HTTP)."""
    sys.path.insert(0, str(ROOT))
    from tests.openai_server import scripted_answer
    from webshop_gym.agents.openai import Call, Decision, Session
    from webshop_gym.agents.prompts import Turn, admissible_actions, make_prompt
    from webshop_gym.evaluation.local import evaluate

    class Instant:
        name, model = "instant", "instant"
        prompt = make_prompt("think-answer")
        settings = {"model": "instant"}

        def new_session(self, info, seed=0):
            return Session(int(info["goal_index"]), seed)

        async def adecide(self, session, obs, info):
            messages = self.prompt.messages(obs, info, session.turns)
            text = scripted_answer(messages)
            admissible = admissible_actions(info)
            parsed = self.prompt.parse_detailed(text, admissible)
            session.turns.append(Turn(obs, parsed.action, text, tuple(admissible)))
            return Decision(parsed.action, parsed, Call(text=text, prompt_tokens=1, completion_tokens=1, requests=1))

        def decide(self, session, obs, info):  # never called (adecide is); evaluate knows a served policy by it
            raise AssertionError("the loop awaits adecide")

    evaluate(Instant(), shop=shop, num_goals=goals, concurrency=concurrency, keep_episodes=False)  # warm
    with tempfile.TemporaryDirectory() as folder:
        cpu0, started = time.process_time(), time.perf_counter()
        result = evaluate(Instant(), shop=shop, num_goals=goals, concurrency=concurrency, keep_episodes=False,
                          out=Path(folder) / "run.jsonl")
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu0
    turns = result["counts"]["steps"]
    return {"in_flight": concurrency, "goals": goals, "turns": turns, "wall_s": round(wall, 2),
            "cpu_ms_per_turn": round(1000 * cpu / turns, 3), "turns_per_s": round(turns / wall)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the server takes per request (default 0.2)")
    parser.add_argument("--goals", type=int, default=500, help="test goals per evaluation (default 500)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 64, 256], help="requests in flight")
    parser.add_argument("--clients", nargs="+", default=["builtin", "openai"],
                        choices=["builtin", "openai", *LIBRARIES],
                        help="HTTP clients to measure (default builtin openai; aiohttp, httpx in builtin's place)")
    parser.add_argument("--rounds", type=int, default=1, help="times each client is measured, alternating (default 1)")
    parser.add_argument("--profile", action="store_true", help="split the CPU with py-spy (must be on PATH)")
    parser.add_argument("--name", default="served_eval")
    parser.add_argument("--loop-only", action="store_true",
                        help="only our part: the loop with a policy that answers at once (no server, no HTTP)")
    args = parser.parse_args()
    if args.profile and shutil.which("py-spy") is None:
        parser.error("--profile needs py-spy on PATH (pip install py-spy)")
    from webshop_gym import load_shop
    from webshop_gym.agents import OpenAIPolicy

    shop = load_shop(progress=False)
    if args.loop_only:
        rows = [loop_only(shop, args.goals, c) for c in args.concurrency]
        load = os.getloadavg()[0]
        print(f"our part alone (prompt, parse, engine, run file, the loop; no HTTP), load average {load:.2f} on "
              f"{os.cpu_count()} cores")
        print(table(rows, ["in_flight", "goals", "turns", "wall_s", "turns_per_s", "cpu_ms_per_turn"]))
        print(f"wrote {save(args.name + '_loop', {'rows': rows, 'load_average': load})}")
        return
    proc, url = start_chat_server(args.latency)
    rows = []
    try:
        from webshop_gym.evaluation.local import evaluate

        warm = OpenAIPolicy("scripted", base_url=url, concurrency=64)
        evaluate(warm, shop=shop, split="test", num_goals=args.goals, concurrency=64, keep_episodes=False)
        warm.close()
        with tempfile.TemporaryDirectory() as spy_folder:
            for c in args.concurrency:
                for round_, client in [(r, x) for r in range(args.rounds) for x in args.clients]:
                    folder = Path(spy_folder) / f"{client}-{c}-{round_}" if args.profile else None
                    if folder is not None:
                        folder.mkdir()
                    row = run_once(url, shop, args.goals, c, args.latency, client, proc.pid, folder)
                    rows.append(row)
                    print(f"{c} in flight, {client}: {row['requests_per_s']} requests/s, {row['pct_of_ideal']}% of "
                          f"the ideal (load average {row['load_average']})", flush=True)
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    conditions = (f"test server in its own process (one asyncio loop), {args.latency * 1000:.0f} ms per request, "
                  f"{args.goals} test goals of 3 turns, text observations, the run file written; "
                  f"{os.cpu_count()} cores shared by both processes (load average after each row)")
    print(conditions)
    side = []
    for c in args.concurrency:
        line = {"in_flight": c, "ideal_requests_per_s": round(c / args.latency)}
        for client in args.clients:  # the best of the rounds: what the client can reach, noise aside
            mine = [row for row in rows if row["in_flight"] == c and row["client"] == client]
            best = max(mine, key=lambda row: row["requests_per_s"])
            line[f"{client}_requests_per_s"] = best["requests_per_s"]
            line[f"{client}_pct"] = best["pct_of_ideal"]
            line[f"{client}_load"] = best["load_average"]
        side.append(line)
    columns = ["in_flight", "ideal_requests_per_s"]
    for client in args.clients:
        columns += [f"{client}_requests_per_s", f"{client}_pct", f"{client}_load"]
    print(table(side, columns))
    print()
    print("CPU per turn (ms):")
    print(table(rows, ["in_flight", "client", "eval_cpu_ms_per_turn", "server_cpu_ms_per_turn", "load_average"]))
    if args.profile:
        print()
        print("this process's CPU per turn by what runs (ms; py-spy):")
        names = [c for c, _ in CATEGORIES] + ["other"]
        print(table([{"in_flight": r["in_flight"], "client": r["client"], **r["eval_cpu_split_ms_per_turn"]}
                     for r in rows], ["in_flight", "client", *names]))
    path = save(args.name, {"conditions": conditions, "latency_s": args.latency, "rows": rows, "side_by_side": side})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
