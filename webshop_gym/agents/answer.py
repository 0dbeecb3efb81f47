r"""Where a served model's answer enters: the body of a chat completion, read, checked and cleaned.

:func:`read_answer` is the one place every answer of :class:`~webshop_gym.agents.openai.OpenAIPolicy`
goes through, whatever carried it.  Everything it returns is safe to keep, send back and write:

* **Lone surrogates** (a broken ``\ud800`` escape in the JSON, or a surrogate's raw bytes, or any
  in a UTF-16 or UTF-32 body: Python decodes each into a string that cannot be encoded as UTF-8)
  become U+FFFD in every string of the answer: the content, the reasoning, the finish reason, each
  tool call's id, name and arguments, and in the JSON text of the arguments too (whose escapes
  the tools format decodes later).  Unchecked, one such answer errored the
  episode (its next request could not be encoded) or wrote a run that the viewer, ``report
  --csv`` and ``report --bundle`` could not read back.
* A body that is not JSON, has no choice or no message, or nests past the JSON parser's limit
  raises :class:`MalformedAnswer` (the turn is retried).
* ``usage`` counts that are no counts (negative, not integers, above :data:`MAX_USAGE`) are
  unknown (``None``), as the run file's readers require.

An error answer is read here too: :func:`status_message` is its one-line reason (as the ``openai``
client reads it) and :func:`retry_after` the wait its headers ask for.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from webshop_gym.utils.surrogates import clean_text, may_hold_surrogates

__all__ = ["MAX_USAGE", "Answer", "MalformedAnswer", "clean_json_text", "clean_text", "one_line", "read_answer",
           "retry_after", "status_message"]

#: A usage count above this is no real count (the field is recorded as unknown, as the run file's readers require).
MAX_USAGE = 10**12


class MalformedAnswer(Exception):
    """The body is no chat completion (the message is the one-line reason)."""


@dataclass
class Answer:
    """What one chat completion answered (every string cleaned)."""

    text: str  # the content ("" for none or a non-text content)
    non_text: bool  # the content was neither text nor text parts
    reasoning: str | None
    finish_reason: str | None
    tool_calls: list[dict] | None
    prompt_tokens: int | None
    completion_tokens: int | None


def read_answer(content: bytes) -> Answer:
    """The answer in a ``/chat/completions`` response body (see the module docstring).

    Raises:
        MalformedAnswer: the body is not a chat completion.
    """
    try:
        data = json.loads(content)
    except (ValueError, UnicodeDecodeError):
        raise MalformedAnswer(f"malformed response body (not JSON: {content[:60]!r})") from None
    except RecursionError:
        raise MalformedAnswer("malformed response body (JSON nested too deeply)") from None
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise MalformedAnswer("malformed response body (no choices)")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise MalformedAnswer("malformed response body (no message)")
    finish = choice.get("finish_reason")
    if may_hold_surrogates(content):
        message = _clean(message)
        finish = clean_text(finish) if isinstance(finish, str) else finish
    text, non_text = _text_of(message.get("content"))
    reasoning = message.get("reasoning_content")
    if reasoning is None:
        reasoning = message.get("reasoning")
    calls = message.get("tool_calls")
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return Answer(text=text, non_text=non_text, reasoning=reasoning if isinstance(reasoning, str) else None,
                  finish_reason=finish if isinstance(finish, str) else None,
                  tool_calls=[c for c in calls if isinstance(c, dict)] if isinstance(calls, list) and calls else None,
                  prompt_tokens=_count(usage.get("prompt_tokens")),
                  completion_tokens=_count(usage.get("completion_tokens")))


# In JSON text: an escaped backslash (kept), a surrogate pair's escapes (kept), or a lone
# surrogate's escape (replaced by the escape of U+FFFD).
_ESCAPE = re.compile(r"\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|(\\u[dD][89a-fA-F][0-9a-fA-F]{2})")


def clean_json_text(text: str) -> str:
    r"""JSON text whose lone-surrogate escapes (``\ud800``) are replaced by ``\ufffd``."""
    if "\\" not in text:
        return text
    return _ESCAPE.sub(lambda m: "\\ufffd" if m.group(1) else m.group(0), text)


def _clean(value, key: str = ""):
    """A decoded JSON value with every string cleaned (and tool-call arguments' JSON text too)."""
    if isinstance(value, str):
        value = clean_text(value)
        return clean_json_text(value) if key == "arguments" else value
    if isinstance(value, dict):
        return {clean_text(k) if isinstance(k, str) else k: _clean(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _text_of(content) -> tuple[str, bool]:
    """The answer's text and whether it was not text (``None`` content counts as empty text)."""
    if content is None:
        return "", False
    if isinstance(content, str):
        return content, False
    if isinstance(content, list):  # content parts
        parts = [p.get("text") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        if parts:
            return "".join(parts), False
    return "", True


def _count(value) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_USAGE
    return int(value) if ok else None


def status_message(status: int, content: bytes) -> str:
    """The one-line reason of an error answer, as the ``openai`` client reads it (either transport).

    The JSON body's ``error.message`` (or ``message``; vLLM sends ``{"object": "error", "message":
    ...}``), else the client's ``Error code: N`` (with the message when the body has one).
    """
    text = content.decode("utf-8", "replace").strip()
    fallback = f"Error code: {status}"
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        data: Any = text
    else:
        data = body.get("error", body) if isinstance(body, dict) else body
        message = data.get("message") if isinstance(data, dict) else None
        if isinstance(message, str) and message:
            fallback += f" - {message}"
    message = None
    if isinstance(data, dict):
        inner = data.get("error", data)
        message = inner.get("message") if isinstance(inner, dict) else inner
    return one_line(Exception(message or fallback))


def retry_after(headers) -> float | None:
    """Seconds a ``retry-after-ms`` / ``Retry-After`` header asks to wait (``None``: none or not a number)."""
    if headers is None:
        return None
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            continue
        if math.isfinite(seconds):
            return max(seconds, 0.0)
    return None


def one_line(exc: BaseException) -> str:
    """An exception (or anything) as one line of at most 200 characters."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:200]
