"""A policy served behind an OpenAI-compatible chat endpoint: vLLM, SGLang, llama.cpp, hosted APIs.

:class:`OpenAIPolicy` sends the prompt formats of :mod:`webshop_gym.agents.prompts` as chat
messages to ``POST {base_url}/chat/completions`` and parses the answers with the same parsers as
:class:`~webshop_gym.agents.hf.HFPolicy` (``closest`` too).  It needs the optional extra
``pip install 'webshop-gym[openai]'`` (the official ``openai`` client), imported only when a
policy is built.

* **Transport.** Requests go through the built-in pooled HTTP/1.1 client (``http_client="builtin"``,
  the default) or the official client (``"openai"``); both read and retry alike
  (:mod:`webshop_gym.agents.transport`), and every answer enters through
  :func:`~webshop_gym.agents.answer.read_answer`, which cleans it.
* **Retries are ours.** The client is built with ``max_retries=0``; 429, 408, 409, 5xx, timeouts,
  dropped connections and malformed bodies are retried here with exponential backoff and jitter
  (``Retry-After`` / ``retry-after-ms`` honoured), up to ``max_retries`` times, so every retry is
  counted.  Other 4xx answers (a bad request, a prompt longer than the context) are not retried.
  A turn whose calls all fail comes back with :attr:`Call.error` set: the evaluation records its
  episode as *errored*, never as a failure of the agent.
* **Accounting.** Each turn reports the server's ``usage`` (``None`` when it sends none), the
  wall time of the turn (retries and waits included), the requests and the retries.
* **Reasoning** sent apart (vLLM's and SGLang's ``reasoning_content``, ``reasoning``) is kept in
  :attr:`Call.reasoning`, never parsed as the answer and never shown to the model again.
* An empty or non-text answer parses as an invalid action for that turn.

Three ways to drive it: :meth:`OpenAIPolicy.adecide` plays one turn of one episode on the
caller's event loop (:mod:`webshop_gym.evaluation.in_flight` keeps up to ``concurrency`` episodes in
flight with it, all on one loop), :meth:`OpenAIPolicy.decide` is the same turn for a thread
(thread-safe across episodes; it runs on the policy's own event loop thread), and
:meth:`OpenAIPolicy.act_batch` is the batch-policy protocol of
:func:`~webshop_gym.evaluation.local.rollout` and :func:`~webshop_gym.evaluation.demos.make_demos` (the slots'
requests are sent together, ``concurrency`` at a time; a failed call there is an invalid action).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import threading
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from webshop_gym.agents.answer import (
    MalformedAnswer,
    one_line,
    read_answer,
    retry_after,
    status_message,
)
from webshop_gym.agents.batch import unbatch_infos
from webshop_gym.agents.grammar import find_blocks
from webshop_gym.agents.parse import ParsedAction
from webshop_gym.agents.prompts import PromptFormat, Turn, admissible_actions, make_prompt
from webshop_gym.agents.tools import ToolCalling, ToolConversation, tool_schemas
from webshop_gym.agents.transport import (
    HTTP_CLIENTS,
    HTTPTransport,
    LoopThread,
    OpenAITransport,
    TransportError,
    proxied,
)
from webshop_gym.error import DependencyNotInstalled, Error, InvalidArgument, close_match

__all__ = ["MAX_CONCURRENCY", "TOOLS_PROBE", "Call", "Decision", "OpenAIPolicy", "ServedModelError", "Session",
           "ToolsIgnored", "request_messages", "require_openai", "turn_request_messages"]

OPENAI_PIP = "pip install 'webshop-gym[openai]'"
#: The most requests in flight ``--concurrency`` allows.
MAX_CONCURRENCY = 1024
#: Longest server-directed wait (``Retry-After``) that is honoured; longer ones are capped.
MAX_RETRY_AFTER = 120.0
_RETRY_STATUS = (408, 409, 429)
#: ``--prompt tools``: answers without any tool call, from the first, after which the server is
#: taken to ignore the tools (the run stops, :class:`ToolsIgnored`).
TOOLS_PROBE = 8


class ServedModelError(Error):
    """The endpoint cannot be used: unreachable, the model is not served, the key is refused."""


class ToolsIgnored(ServedModelError):
    """``--prompt tools``: the server refuses the tools or answers without calling any (tool calling is off)."""


def require_openai():
    """Import and return the ``openai`` package or raise :class:`DependencyNotInstalled`."""
    try:
        import openai
    except ImportError as exc:
        raise DependencyNotInstalled(f"the served-model policy needs the openai client ({exc}); install it with "
                                     f"`{OPENAI_PIP}`") from exc
    return openai


@dataclass
class Call:
    """The outcome of one model turn (after every retry).

    Attributes:
        text: the answer's content (``""`` for an empty or non-text answer; ``None`` on error).
        reasoning: the reasoning the server sent apart, if any.
        prompt_tokens, completion_tokens: the server's ``usage`` of the successful request
            (``None``: not sent).
        latency_s: wall time of the turn, retries and waits included.
        requests: HTTP requests that reached the server: every attempt except those whose
            connection could not be opened (refused, or its connect or pool wait timed out), which
            sent nothing a server could answer or bill.
        retries: attempts repeated after a retryable failure (failed connections included).
        finish_reason: the choice's ``finish_reason``.
        error: why the turn failed (one line), ``None`` when it succeeded.
        status: the last answer's HTTP status (``None``: no answer).
    """

    text: str | None = None
    reasoning: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float = 0.0
    requests: int = 0
    retries: int = 0
    finish_reason: str | None = None
    error: str | None = None
    non_text: bool = False
    tool_calls: list[dict] | None = None
    status: int | None = None

    def usage(self) -> dict:
        """``{"prompt_tokens", "completion_tokens"}`` (``None`` where unknown)."""
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}


@dataclass
class Decision:
    """One turn: the action to take, how the answer was parsed, and the call."""

    action: str
    parsed: ParsedAction | None
    call: Call

    def model_record(self) -> dict | None:
        """The run file's ``model`` entry (``None`` when the call failed)."""
        if self.parsed is None:
            return None
        p = self.parsed
        return {"response": self.call.text, "action": p.action, "valid": bool(p.valid), "format_ok": bool(p.format_ok),
                "mapped": bool(p.mapped), "reason": p.reason}


@dataclass
class Session:
    """One episode's conversation: its earlier turns and the seed of its requests."""

    goal_index: int = -1
    seed: int = 0
    turns: list[Turn] = field(default_factory=list)
    max_steps: int | None = None  # the env's step cap (the tools' texts name it)
    conversation: ToolConversation | None = None  # the tools format's conversation


class OpenAIPolicy:
    """A chat model behind an OpenAI-compatible endpoint, acting in WebShop.

    Args:
        model: the served model's name (``--served-model-name`` of vLLM, SGLang's
            ``--served-model-name``, the hosted API's model id).
        base_url: the API's root (``http://127.0.0.1:8000/v1``); default ``$OPENAI_BASE_URL``,
            else the client's default (OpenAI's API).
        api_key: the key; default the variable ``api_key_env`` names (``OPENAI_API_KEY``); a
            local server without a key works (a placeholder is sent).
        api_key_env: the environment variable holding the key.
        prompt: a prompt format or its name (``think-answer``, ``react``, ``verl-agent``).
        max_new_tokens: ``max_tokens`` of each request.
        temperature: ``0`` is greedy; above 0 samples (with ``top_p`` and a per-request seed made
            from ``seed``, the goal and the step).
        top_p: nucleus mass (sent when sampling).
        seed: base seed of the sampling requests.
        timeout: the deadline of one request in seconds (connecting, interim heads, the whole answer).
        max_retries: retries of a failing turn (backoff ``backoff * 2**k`` seconds with jitter,
            at most ``max_backoff``; a ``Retry-After`` up to 120 s is honoured instead).
        closest: map an inadmissible answer to the closest admissible action.
        concurrency: requests in flight at most (the evaluation's episodes in flight, and the
            thread pool of :meth:`act_batch`), 1 to 1,024.
        stop: stop at the format's closing tag (``</answer>``); the tag is put back into the
            recorded answer when the server cut it off.
        request_options: extra fields of every request body (e.g. ``{"max_completion_tokens":
            256}`` for APIs that want it, or vLLM's ``{"top_k": 20}``).
        client: an ``openai.OpenAI`` client to use instead of building one (requests then go
            through it).
        backoff, max_backoff: the first retry's wait and the longest wait, in seconds.
        http_client: ``"builtin"`` (pooled asyncio HTTP/1.1; an endpoint behind an HTTP proxy
            goes through the ``openai`` client) or ``"openai"`` (the official client, one thread
            per request in flight); see :mod:`webshop_gym.agents.transport`.

    Example:
        >>> policy = OpenAIPolicy("qwen-webshop", base_url="http://127.0.0.1:8000/v1")  # doctest: +SKIP
        >>> evaluate(policy, split="test", out="runs/qwen.jsonl")  # doctest: +SKIP
    """

    name = "openai"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        prompt: str | PromptFormat = "think-answer",
        max_new_tokens: int = 256,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int = 0,
        timeout: float = 60.0,
        max_retries: int = 5,
        closest: bool = False,
        concurrency: int = 8,
        stop: bool = True,
        request_options: Mapping[str, Any] | None = None,
        client=None,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        http_client: str = "builtin",
    ):
        if not isinstance(model, str) or not model:
            raise ServedModelError(f"model must be a non-empty name, got {model!r}")
        _check_number("max_new_tokens", max_new_tokens, 1, integer=True)
        _check_number("temperature", temperature, 0.0)
        _check_number("top_p", top_p, 0.0, 1.0)
        _check_number("timeout", timeout, 0.0, strict_low=True)
        _check_number("max_retries", max_retries, 0, integer=True)
        _check_number("concurrency", concurrency, 1, MAX_CONCURRENCY, integer=True)
        _check_number("backoff", backoff, 0.0)
        _check_number("max_backoff", max_backoff, 0.0)
        if http_client not in HTTP_CLIENTS:
            raise InvalidArgument(f"http_client must be one of {', '.join(HTTP_CLIENTS)}, got {http_client!r}")
        self.model = model
        self.prompt = ToolCalling() if prompt == ToolCalling.name else make_prompt(prompt)
        self.max_new_tokens = int(max_new_tokens)
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.seed = int(seed)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.closest = bool(closest)
        self.concurrency = int(concurrency)
        self.stop = bool(stop)
        self.request_options = dict(request_options or {})
        self.backoff, self.max_backoff = float(backoff), float(max_backoff)
        self._rng = np.random.default_rng(self.seed)
        self._rng_lock = threading.Lock()
        given = client is not None
        if client is None:
            openai = require_openai()
            if api_key is None:
                if api_key_env != "OPENAI_API_KEY" and api_key_env not in os.environ:
                    raise ServedModelError(f"--api-key-env: the environment variable {api_key_env!r} is not set")
                api_key = os.environ.get(api_key_env) or "EMPTY"  # local servers take any key
            if base_url is None:
                base_url = os.environ.get("OPENAI_BASE_URL") or None
                if base_url is None:
                    raise ServedModelError("no endpoint: give base_url (--base-url URL) or set $OPENAI_BASE_URL; "
                                           "the API key is sent only to the endpoint given")
            base_url = check_base_url(base_url)
            client = openai.OpenAI(api_key=api_key, base_url=base_url, max_retries=0, timeout=self.timeout)
        self.client = client
        self.base_url = str(getattr(client, "base_url", base_url or "")).rstrip("/")
        if given or http_client == "openai" or proxied(self.base_url):
            self.http_client = "openai"
            self.transport: Any = OpenAITransport(client, self.concurrency, None if given else self.timeout)
        else:
            self.http_client = "builtin"
            headers = {name: value for name, value in (("OpenAI-Organization", getattr(client, "organization", None)),
                                                       ("OpenAI-Project", getattr(client, "project", None))) if value}
            self.transport = HTTPTransport(self.base_url, str(client.api_key), self.timeout, headers)
        self._loop = LoopThread("webshop-openai-loop")
        self._probe_lock = threading.Lock()
        self._answers_without_tools = 0  # --prompt tools: answers before the first tool call
        self._tool_called = False
        self._sessions: list[Session] = []
        self.last: list[ParsedAction | None] = []
        self.last_responses: list[str | None] = []
        self.last_calls: list[Call | None] = []

    def __repr__(self) -> str:
        return f"OpenAIPolicy({self.model!r}, base_url={self.base_url!r}, prompt={self.prompt.name!r})"

    @property
    def settings(self) -> dict:
        """What decides the answers (the run file's ``policy_settings``; ``--resume`` compares them)."""
        return {"model": self.model, "prompt": self.prompt.name, "max_new_tokens": self.max_new_tokens,
                "temperature": self.temperature, "top_p": self.top_p, "seed": self.seed, "closest": self.closest,
                "stop": self.stop, "request_options": self.request_options}

    @property
    def decoding(self) -> dict:
        """The decoding it plays, as a run records it (``evaluate`` of this object checks it against the protocol's).

        Temperature 0 is greedy; the new tokens are ``request_options``' ``max_completion_tokens`` when set.
        """
        sample = self.temperature > 0
        tokens = self.request_options.get("max_completion_tokens") or self.max_new_tokens
        return {"do_sample": sample, "temperature": self.temperature if sample else None,
                "top_p": self.top_p if sample else None, "max_new_tokens": int(tokens)}

    # -- the endpoint ------------------------------------------------------------------------------

    def check(self) -> list[str]:
        """Check that the endpoint answers and serves :attr:`model`; return the served models.

        Raises:
            ServedModelError: unreachable, the key is refused, or the model is not served (with a
                close match).  An endpoint without ``GET /models`` is taken on trust.
        """
        openai = require_openai()
        where = self.base_url or "the default endpoint"
        try:
            page = _within(self.client.models.list, self.timeout)
            served = [str(m.id) for m in getattr(page, "data", []) or []]
        except (openai.APITimeoutError, TimeoutError):
            raise ServedModelError(f"{where} did not answer within {self.timeout:g} s (--base-url, --timeout)") from None
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            raise ServedModelError(f"cannot reach {where} ({one_line(cause)}); is the server running? "
                                   "(--base-url or $OPENAI_BASE_URL)") from None
        except openai.AuthenticationError:
            raise ServedModelError(f"{where} refused the API key (status 401); set $OPENAI_API_KEY or "
                                   "--api-key-env NAME") from None
        except openai.NotFoundError:
            return []  # no model listing: taken on trust
        except openai.APIStatusError as exc:
            raise ServedModelError(f"{where} answered GET /models with status {exc.status_code}") from None
        if served and self.model not in served:

            hint = close_match(self.model, served)
            shown = ", ".join(served[:10]) + (" ..." if len(served) > 10 else "")
            raise ServedModelError(f"model {self.model!r} is not served at {where}; it serves: {shown}"
                                   + (f" (did you mean {hint!r}?)" if hint else ""))
        return served

    def close(self) -> None:
        """Close the connections, the policy's event loop thread and the HTTP client."""
        self._loop.close(self.release)
        self.transport.close()
        close = getattr(self.client, "close", None)
        if callable(close):
            close()

    async def release(self) -> None:
        """Close the connections opened from the running event loop (its owner calls it before closing the loop)."""
        self.transport.close(asyncio.get_running_loop())

    def _backoff(self, attempt: int) -> float:
        base = min(self.max_backoff, self.backoff * 2.0**attempt)
        with self._rng_lock:
            return base * (0.5 + 0.5 * float(self._rng.random()))

    def request_body(self, messages: list[dict], seed: int | None = None) -> dict:
        """The JSON body of one ``POST /chat/completions`` request."""
        body: dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": self.max_new_tokens,
                                "temperature": self.temperature}
        if self.temperature > 0:
            body["top_p"] = self.top_p
            if seed is not None:
                body["seed"] = int(seed) % 2**31
        if self.stop and self.prompt.stop:
            body["stop"] = list(self.prompt.stop)
        if isinstance(self.prompt, ToolCalling):
            body["tools"] = tool_schemas()
        body.update(self.request_options)
        if "max_completion_tokens" in self.request_options:
            body.pop("max_tokens", None)
        return body

    def complete(self, messages: list[dict], seed: int | None = None) -> Call:
        """One turn: send ``messages`` and retry what is worth retrying; never raises for the server's faults."""
        return self._loop.run(self.acomplete(messages, seed))

    async def acomplete(self, messages: list[dict], seed: int | None = None) -> Call:
        """:meth:`complete` on the running event loop."""
        call = Call()
        body = self.request_body(messages, seed)
        started = time.perf_counter()
        attempt = 0
        while True:
            call.requests += 1
            wait = None
            try:
                reply = await self.transport.post(body)
                call.status = reply.status
                if 200 <= reply.status < 300:
                    self._read(reply.content, call)
                    break
                reason = f"status {reply.status}: {status_message(reply.status, reply.content)}"
                if reply.status not in _RETRY_STATUS and reply.status < 500:
                    call.error = reason  # a bad request, a refused key, a prompt over the context: not retried
                    break
                wait = retry_after(reply.headers)
            except MalformedAnswer as exc:
                reason = str(exc)
            except TransportError as exc:
                if not exc.sent:  # its connection could not be opened: no server saw it
                    call.requests -= 1
                if exc.timeout:
                    reason = f"timed out after {self.timeout:g} s" if exc.sent else f"could not connect within {self.timeout:g} s"
                else:
                    reason = f"connection error ({one_line(exc)})"
            except Exception as exc:  # anything else the answer or the client raised: this turn fails, not the run
                call.error = f"unexpected {type(exc).__name__}: {one_line(exc)}"[:500]
                break
            if attempt >= self.max_retries:
                call.error = reason + (f" (after {attempt} retries)" if attempt else "")
                break
            delay = self._backoff(attempt) if wait is None else min(max(wait, 0.0), MAX_RETRY_AFTER)
            attempt += 1
            call.retries += 1
            await asyncio.sleep(delay)
        call.latency_s = time.perf_counter() - started
        return call

    def _read(self, content: bytes, call: Call) -> None:
        """Fill ``call`` from a response body (:func:`~webshop_gym.agents.answer.read_answer`, the one entry)."""
        answer = read_answer(content)
        call.non_text = answer.non_text
        call.reasoning = answer.reasoning
        call.finish_reason = answer.finish_reason
        text = answer.text
        if text and self.stop and call.finish_reason == "stop" and self.prompt.answer_tag:
            text = _close_answer(text, self.prompt.answer_tag)
        call.text = text
        call.tool_calls = answer.tool_calls
        call.prompt_tokens, call.completion_tokens = answer.prompt_tokens, answer.completion_tokens

    # -- one episode's turn ----------------------------------------------------------------------

    def new_session(self, info: Mapping[str, Any] | None = None, seed: int | None = None) -> Session:
        """A new episode's conversation."""
        goal = int(info["goal_index"]) if info and "goal_index" in info else -1
        return Session(goal, self.seed if seed is None else int(seed))

    def decide(self, session: Session, obs: str, info: Mapping[str, Any]) -> Decision:
        """Ask the model for the episode's next action (call from any thread; one turn per episode at a time)."""
        return self._loop.run(self.adecide(session, obs, info))

    async def adecide(self, session: Session, obs: str, info: Mapping[str, Any]) -> Decision:
        """:meth:`decide` on the running event loop (one turn per episode at a time).

        Raises:
            ToolsIgnored: ``--prompt tools`` and the first answers show that the server ignores
                the tools (see :meth:`_probe_tools`).
        """
        if isinstance(self.prompt, ToolCalling):
            return await self._decide_tools(session, obs, info)
        admissible = admissible_actions(info)
        messages = self.prompt.messages(obs, info, session.turns)
        call = await self.acomplete(messages, seed=session.seed + len(session.turns))
        if call.error is not None:
            return Decision("", None, call)
        text = call.text or ""
        parsed = self.prompt.parse_detailed(text, admissible, self.closest)
        if call.non_text or not text.strip():
            parsed = ParsedAction(parsed.action, False, False, False,
                                  "non-text answer" if call.non_text else "empty answer", parsed.thought)
        session.turns.append(_turn(obs, info, parsed.action, text))
        return Decision(parsed.action, parsed, call)

    async def _decide_tools(self, session: Session, obs: str, info: Mapping[str, Any]) -> Decision:
        """The tools format: the conversation TRL's rollout of :class:`WebShopToolEnv` would hold.

        The conversation is :class:`~webshop_gym.agents.tools.ToolConversation` (one definition,
        which the run viewer replays too).  Every tool call is one env step: the calls of one
        answer are stepped in order (one request, then a step per call), each followed by its
        ``tool`` message; a call of no known tool or without its string argument, and an answer
        without any tool call, are stepped as invalid actions (docs/agents.md).
        """
        if session.conversation is None:
            session.conversation = ToolConversation(session.max_steps)
        conversation = session.conversation
        if not conversation.observe(obs, info):  # the next call of the last answer: no request
            return self._step_tool_call(conversation, info, Call(requests=0))
        call = await self.acomplete(conversation.messages, seed=session.seed + len(session.turns))
        self._probe_tools(call, len(session.turns) + 1)
        if call.error is not None:
            return Decision("", None, call)
        call.text = conversation.answer(call.text, call.tool_calls or [], len(session.turns))
        session.turns.append(_turn(obs, info, "", call.text))
        if not conversation.queued:
            return Decision("", ParsedAction("", False, False, False, "no tool call"), call)
        return self._step_tool_call(conversation, info, call)

    def _probe_tools(self, call: Call, answers: int) -> None:
        """Stop a tools run whose server ignores the tools, from its first answers.

        Until some answer calls a tool: an answer refused with a 4xx status whose message names
        tools (vLLM without ``--enable-auto-tool-choice``: ``"auto" tool choice requires
        --enable-auto-tool-choice and --tool-call-parser to be set``) raises
        :class:`ToolsIgnored`, and so do :data:`TOOLS_PROBE` answers without any tool call once
        an episode has answered twice without one (``answers``: this episode's answers, this one
        included): a server that returns the calls as text (SGLang without
        ``--tool-call-parser``) or never shows the model the tools.  A model that writes a text
        before its first call, in every episode, goes on.
        """
        if self._tool_called:
            return
        where = self.base_url or "the endpoint"
        flags = ("start vLLM with --enable-auto-tool-choice --tool-call-parser PARSER, or SGLang with "
                 "--tool-call-parser PARSER (docs/agents.md, 'The tools format')")
        if call.error is not None:
            if call.status is not None and 400 <= call.status < 500 and "tool" in call.error.lower():
                raise ToolsIgnored(f"--prompt tools: the server at {where} refused the tools ({call.error[:160]}); "
                                   + flags)
            return
        with self._probe_lock:
            if call.tool_calls:
                self._tool_called = True
                return
            self._answers_without_tools += 1
            seen = self._answers_without_tools
        if seen >= TOOLS_PROBE and answers >= 2:
            example = " ".join((call.text or "").split())[:80]
            raise ToolsIgnored(f"--prompt tools: the server at {where} ignores the tools: none of the first {seen} "
                               f"answers called one (the last: {example!r}); " + flags)

    def _step_tool_call(self, conversation: ToolConversation, info: Mapping[str, Any], call: Call) -> Decision:
        step = conversation.next_call(info)
        if step.error is not None:
            return Decision("", ParsedAction("", False, False, False, f"bad tool call: {step.error}"), call)
        if call.requests == 0:
            call.text = json.dumps({"tool_calls": [step.tool_call]}, ensure_ascii=False)
        return Decision(step.action, ParsedAction(step.action, step.valid, True, False,
                                                  "" if step.valid else "not admissible"), call)

    # -- the Policy protocol (one slot) and the batch protocol ---------------------------------------

    def reset(self, info: dict[str, Any] | None = None) -> None:
        """Start a new episode in slot 0 (single-env use)."""
        self._sessions[:1] = [self.new_session(info)]

    def act(self, obs: str, info: dict[str, Any]) -> str:
        """Return the action for one env (slot 0)."""
        return self.act_batch([obs], [info])[0]

    def act_batch(self, observations: Sequence[str], infos) -> list[str]:
        """One action per slot (``""`` for idle slots and for turns whose calls failed).

        A slot whose ``info["steps"] == 0`` starts a new conversation.  Afterwards :attr:`last`
        holds each slot's :class:`~webshop_gym.agents.parse.ParsedAction`, :attr:`last_responses`
        the raw answers and :attr:`last_calls` the :class:`Call` records.
        """
        n = len(observations)
        infos = unbatch_infos(infos, n)
        while len(self._sessions) < n:
            self._sessions.append(Session())
        active = [i for i, info in enumerate(infos) if not info.get("idle") and "instruction" in info]
        for i in active:
            if infos[i].get("steps") == 0 and not infos[i].get("turn"):  # (a turn asked again: same episode)
                self._sessions[i] = self.new_session(infos[i])
        decisions = self._loop.run(self._decide_all([(self._sessions[i], observations[i], infos[i]) for i in active]))
        actions = [""] * n
        self.last, self.last_responses, self.last_calls = [None] * n, [None] * n, [None] * n
        for i, decision in zip(active, decisions):
            actions[i] = decision.action
            self.last[i], self.last_responses[i], self.last_calls[i] = decision.parsed, decision.call.text, decision.call
        return actions

    async def _decide_all(self, turns: list[tuple]) -> list[Decision]:
        """The turns' decisions, ``concurrency`` requests at a time."""
        limit = asyncio.Semaphore(self.concurrency)

        async def one(turn: tuple) -> Decision:
            async with limit:
                return await self.adecide(*turn)

        return list(await asyncio.gather(*(one(turn) for turn in turns)))


def _turn(obs: str, info: Mapping[str, Any], action: str, text: str | None) -> Turn:
    """An answered turn as the next prompts show it: the page, the action, the answer, what was admissible."""
    return Turn(obs, action, text, tuple(admissible_actions(info)))


def request_messages(prompt: str, states: Sequence[tuple[str, Mapping[str, Any]]], answers: Sequence[Mapping],
                     k: int, max_steps: int | None = None) -> list[dict]:
    """The messages :class:`OpenAIPolicy` sent for the answer behind action ``k + 1`` of an episode, rebuilt.

    Run files do not store prompts; this rebuilds one from what they log, with the policy's own
    code: the prompt format's :meth:`~webshop_gym.agents.prompts.PromptFormat.messages` with the
    earlier turns, or, for ``tools``, the :class:`~webshop_gym.agents.tools.ToolConversation`
    replayed answer by answer (a step that stepped a later call of an earlier answer gets the
    messages of the request that produced that answer).

    Args:
        prompt: the prompt format's name (the run line's ``prompt``).
        states: ``(observation, info)`` of states 0 ... ``k`` (state ``j``: after ``j``
            actions), the info as the policy was handed it (``slim_info``: ``instruction``,
            ``valid_actions``, ``steps``, ``invalid_action``, ...).
        answers: the ``model`` record of each action before ``k + 1`` (``response``, ``action``).
        k: the action's index; ``k == len(answers)`` gives the request made at the last state (an
            errored episode's request that failed).
        max_steps: the episode's step cap (the tools' texts name it).

    Raises:
        ValueError: a logged tools answer is not the JSON the policy records.
    """
    if k < 0 or k >= len(states):
        raise ValueError(f"no state {k}: {len(states)} states given")
    if prompt != ToolCalling.name:
        turns = [_turn(states[j][0], states[j][1], str(answers[j].get("action") or ""),
                       answers[j].get("response") or "") for j in range(k)]
        obs, info = states[k]
        return make_prompt(prompt).messages(obs, info, turns)
    conversation = ToolConversation(max_steps)
    last: list[dict] = []
    asked = 0
    for j in range(k + 1):
        obs, info = states[j]
        if conversation.observe(obs, info):
            last = list(conversation.messages)
            if j == k:
                break
            content, calls = _logged_tool_answer(answers[j].get("response"), j)
            conversation.answer(content, calls, asked)
            asked += 1
        elif j == k:
            break
        if conversation.queued:
            conversation.next_call(info)
    return last


def turn_request_messages(prompt: str, states: Sequence[tuple[str, Mapping[str, Any]]], answers: Sequence[Mapping],
                          silent: Sequence[Mapping], k: int) -> list[dict]:
    """:func:`request_messages` of a run whose replies were turns (RAGEN's; :mod:`~webshop_gym.agents.turns`).

    One request per turn: the request behind action ``k + 1`` is its turn's, made on the page
    before the turn's first action, with every earlier turn (those without an action too) in
    its history, as :class:`OpenAIPolicy`'s session kept them.

    Args:
        prompt: the prompt format's name (not ``tools``).
        states: ``(observation, info)`` of states 0 ... ``k``.
        answers: the ``model`` record of each logged action (its ``turn``, ``part``, and on a
            turn's first action its ``response``), at least up to action ``k + 1``.
        silent: the episode's ``turns_without_action`` (``turn``, ``after_step``, ``model``).
        k: the action's index; ``k == len(answers)``: the request after the last turn (an
            errored episode's failed request).
    """
    replies = [(int(a["turn"]), j, a.get("response") or "") for j, a in enumerate(answers) if a.get("part") == 0]
    replies += [(int(t["turn"]), int(t["after_step"]), (t.get("model") or {}).get("response") or "") for t in silent]
    replies.sort()
    target = int(answers[k]["turn"]) if k < len(answers) else len(replies)
    if not 0 <= k < len(states) or any(j >= len(states) for t, j, _ in replies if t <= target):
        raise ValueError(f"no state {k}: {len(states)} states given")
    fmt = make_prompt(prompt)
    turns = []
    for _, j, response in (r for r in replies if r[0] < target):
        obs, info = states[j]  # the session recorded the policy's own parse of the whole reply on its page
        action = fmt.parse_detailed(response, admissible_actions(info)).action
        turns.append(_turn(obs, info, action, response))
    first = next((j for t, j, _ in replies if t == target), k)
    obs, info = states[first]
    return fmt.messages(obs, info, turns)


def _logged_tool_answer(response, j: int) -> tuple[str | None, list[dict]]:
    """The text and tool calls of a tools answer as the run file records it (:meth:`ToolConversation.answer`)."""
    try:
        data = json.loads(response) if isinstance(response, str) else None
    except ValueError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("tool_calls"), list) or "content" not in data:
        raise ValueError(f"the answer of action {j + 1} is not a recorded tools answer")
    return data["content"], [c for c in data["tool_calls"] if isinstance(c, dict)]


# -- helpers ----------------------------------------------------------------------------------------


def _within(function, seconds: float):
    """``function()`` in a worker thread, given ``seconds`` in all (httpx bounds each read, not the call).

    Raises:
        TimeoutError: it did not return in time (the thread ends on its own).
    """
    pool = ThreadPoolExecutor(1, thread_name_prefix="webshop-openai-check")
    try:
        return pool.submit(function).result(timeout=seconds)
    except FutureTimeout:
        raise TimeoutError from None
    finally:
        pool.shutdown(wait=False)


def _check_number(name: str, value, low=None, high=None, integer: bool = False, strict_low: bool = False) -> None:

    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok and integer:
        ok = isinstance(value, int)
    if ok and low is not None:
        ok = value > low if strict_low else value >= low
    if ok and high is not None:
        ok = value <= high
    if not ok:
        what = "an integer" if integer else "a number"
        bounds = (f" > {low}" if strict_low else f" >= {low}") if low is not None else ""
        bounds += f" and <= {high}" if high is not None else ""
        raise InvalidArgument(f"{name} must be {what}{bounds}, got {value!r}")


def check_base_url(url: str) -> str:
    """An API root as given (``http(s)://host[:port]/path``), or :class:`InvalidArgument` in one line.

    An empty URL is refused rather than read as "the default endpoint": the API key goes only to
    the endpoint the user named.
    """
    text = str(url).strip()
    try:
        parts = urllib.parse.urlsplit(text)
        port = parts.port  # raises for a port out of range or not a number
        host = parts.hostname
    except ValueError as exc:
        raise InvalidArgument(f"base_url {url!r} is not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not host:
        raise InvalidArgument(f"base_url {url!r} is not an http(s) URL with a host, e.g. http://127.0.0.1:8000/v1")
    del port
    return text


def _close_answer(text: str, tag: str) -> str:
    """Put back the closing tag a stop sequence cut off (the answer block is open at the end)."""
    blocks = find_blocks(text, tag)
    if blocks and not blocks[-1].closed:
        return text + f"</{tag}>"
    return text
