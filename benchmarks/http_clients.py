"""The HTTP clients a served evaluation could use, alone: CPU per chat-completions request and requests/s.

Each client sends the same request body (a 3-turn think-answer prompt, ~3 KB) N times with C
requests in flight to the test server (tests/openai_server.py in its own process, a fixed latency,
default 200 ms), and reads the answer's JSON.  Nothing else runs in the client's process, so its
CPU per request is the client's own cost:

* builtin: the package's client (``webshop_gym.agents.transport.HTTPTransport``, one asyncio loop);
* openai-threads: the official client's synchronous call, one thread per request in flight (as
  ``--http-client openai`` sends them, with the body as ``extra_body``);
* openai-async: ``openai.AsyncOpenAI`` on one asyncio loop, its pool as large as C;
* httpx-async: ``httpx.AsyncClient.post`` with the body already encoded, its pool as large as C.

    python benchmarks/http_clients.py [--in-flight 64 256] [--requests 3000] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import save, start_chat_server, table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CLIENTS = ("builtin", "openai-threads", "openai-async", "httpx-async")


def _body() -> dict:
    sys.path.insert(0, str(ROOT))
    from webshop_gym.agents.prompts import Turn, make_prompt

    page = "WebShop [SEP] Instruction: [SEP] i need red running shoes, and price lower than 50.00 dollars [SEP] " + \
        " [SEP] ".join(f"B0{k:08d} [SEP] Running shoe model {k} for men and women [SEP] ${20 + k}.99" for k in range(10))
    info = {"instruction": "i need red running shoes, and price lower than 50.00 dollars", "steps": 2,
            "valid_actions": ["click[back to search]", "click[next >]", *(f"click[b0{k:08d}]" for k in range(10))]}
    turns = [Turn(page, "search[red running shoes]", "<think>search</think><answer>search[red running shoes]</answer>",
                  ("search[<query>]",))] * 2
    messages = make_prompt("think-answer").messages(page, info, turns)
    return {"model": "scripted", "messages": messages, "max_tokens": 128, "temperature": 0.0, "stop": ["</answer>"]}


async def _builtin(url: str, body: dict, n: int, c: int) -> None:
    from webshop_gym.agents.transport import HTTPTransport

    transport = HTTPTransport(url, "EMPTY", 60.0)
    limit = asyncio.Semaphore(c)

    async def one():
        async with limit:
            reply = await transport.post(body)
            json.loads(reply.content)

    await asyncio.gather(*(one() for _ in range(n)))
    transport.close(asyncio.get_running_loop())


def _openai_threads(url: str, body: dict, n: int, c: int) -> None:
    import openai

    client = openai.OpenAI(api_key="EMPTY", base_url=url, max_retries=0, timeout=60)
    extra = {k: v for k, v in body.items() if k != "model"}

    def one(_):
        raw = client.chat.completions.with_raw_response.create(model="scripted", messages=[], extra_body=extra)
        json.loads(raw.http_response.content)

    with ThreadPoolExecutor(c) as pool:
        list(pool.map(one, range(n)))
    client.close()


async def _openai_async(url: str, body: dict, n: int, c: int) -> None:
    import httpx
    import openai

    client = openai.AsyncOpenAI(api_key="EMPTY", base_url=url, max_retries=0, timeout=60,
                                http_client=openai.DefaultAsyncHttpxClient(
                                    limits=httpx.Limits(max_connections=c, max_keepalive_connections=c)))
    extra = {k: v for k, v in body.items() if k != "model"}
    limit = asyncio.Semaphore(c)

    async def one():
        async with limit:
            raw = await client.chat.completions.with_raw_response.create(model="scripted", messages=[], extra_body=extra)
            json.loads(raw.http_response.content)

    await asyncio.gather(*(one() for _ in range(n)))
    await client.close()


async def _httpx_async(url: str, body: dict, n: int, c: int) -> None:
    import httpx

    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "Authorization": "Bearer EMPTY"}
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=c, max_keepalive_connections=c), timeout=60) as client:
        limit = asyncio.Semaphore(c)

        async def one():
            async with limit:
                response = await client.post(url + "/chat/completions", content=data, headers=headers)
                json.loads(response.content)

        await asyncio.gather(*(one() for _ in range(n)))


def measure(client: str, url: str, n: int, c: int, latency: float) -> dict:
    body = _body()
    import httpx  # noqa: F401 - imported before the clock starts
    import openai  # noqa: F401

    from webshop_gym.agents import transport  # noqa: F401
    runs = {"builtin": lambda: asyncio.run(_builtin(url, body, n, c)),
            "openai-threads": lambda: _openai_threads(url, body, n, c),
            "openai-async": lambda: asyncio.run(_openai_async(url, body, n, c)),
            "httpx-async": lambda: asyncio.run(_httpx_async(url, body, n, c))}
    cpu0, started = time.process_time(), time.perf_counter()
    runs[client]()
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu0
    return {"client": client, "in_flight": c, "requests": n, "requests_per_s": round(n / wall, 1),
            "pct_of_ideal": round(100 * n / wall / (c / latency), 1), "cpu_ms_per_request": round(1000 * cpu / n, 3),
            "load_average": round(os.getloadavg()[0], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--in-flight", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--clients", nargs="+", default=list(CLIENTS), choices=CLIENTS)
    parser.add_argument("--name", default="http_clients")
    parser.add_argument("--one", nargs=2, metavar=("CLIENT", "IN_FLIGHT"), help=argparse.SUPPRESS)  # a child run
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:  # each client in a fresh process: no pool, thread or import of another client counts
        print(json.dumps(measure(args.one[0], args.url, args.requests, int(args.one[1]), args.latency)))
        return
    server, url = start_chat_server(args.latency)
    rows = []
    try:
        for c in args.in_flight:
            for client in args.clients:
                out = subprocess.run([sys.executable, __file__, "--one", client, str(c), "--url", url, "--requests",
                                      str(args.requests), "--latency", str(args.latency)],
                                     capture_output=True, text=True, check=True)
                rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
                print(f"{client}, {c} in flight: {rows[-1]['cpu_ms_per_request']} ms of CPU per request", flush=True)
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    conditions = (f"the test server in its own process, {args.latency * 1000:.0f} ms per request, a ~3 KB think-answer "
                  f"body, {args.requests} requests per row, each client in a fresh process; {os.cpu_count()} cores "
                  "shared (load average after each row)")
    print(conditions)
    print(table(rows, ["client", "in_flight", "requests_per_s", "pct_of_ideal", "cpu_ms_per_request", "load_average"]))
    print(f"wrote {save(args.name, {'conditions': conditions, 'rows': rows})}")


if __name__ == "__main__":
    main()
