"""Argument types for the command line: bad values are rejected by the parser itself.

Each function takes the raw string and returns the parsed value or raises
``argparse.ArgumentTypeError`` with a short reason, which argparse prints as one line
(``webshop-gym eval: error: argument --num-envs: must be a positive integer, got '0'``) and
exits with status 2.  No subcommand ever sees an out-of-range count, port, fraction or path.
"""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

__all__ = [
    "at_most",
    "existing_dir",
    "host",
    "model_dir",
    "existing_file",
    "fraction",
    "non_negative_float",
    "non_negative_int",
    "output_dir",
    "output_file",
    "port",
    "positive_float",
    "positive_int",
    "probability",
    "seconds",
    "seed",
    "temperature",
]

MAX_SEED = 2**63 - 1

# Upper bounds of the numeric flags (each flag's --help names its bound; docs/cli.md lists them).
MAX_COUNT = 2**31 - 1
"""Counts that only select (``--num-goals``, ``--num-products``, ``--goal``): rows are int32."""
MAX_ENVS = 65_536
"""Parallel slots of ``eval`` and ``demos`` (each slot holds an episode's state and pages)."""
MAX_WORKERS = 256
"""Worker processes of ``eval``."""
MAX_STEPS = 1_000
"""Steps per episode (the reference plays 15)."""
MAX_PRODUCTS = 10_000_000
"""Products of ``data synth`` (about 2.2 kB of JSON each: 22 GB; the disk is checked too)."""
MAX_SESSIONS = 100_000
"""``serve``: play sessions and AgentGym envs alive at once (engine slots made at start, ~1.2 kB each)."""
MAX_THREADS = 256
"""``serve``: request threads."""
MAX_SECONDS = 31_536_000
"""Time-outs in seconds (one year)."""
MAX_TOKENS = 1_048_576
MAX_RETRIES = 100
"""Retries of one failing model request (``eval --max-retries``)."""
MAX_PRICE = 1_000_000
"""USD per million tokens (``--price-input``, ``--price-output``)."""
"""Token counts of ``hf:`` policies."""


def _int(text: str, what: str, low: int | None = None, high: int | None = None) -> int:
    """Parse an integer in ``[low, high]``; ``what`` describes the expected value for the error."""
    try:
        value = int(text, 10)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
    if (low is not None and value < low) or (high is not None and value > high):
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
    return value


def _float(text: str, what: str, ok) -> float:
    """Parse a finite number for which ``ok(value)`` holds; ``what`` describes it for the error."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
    if not math.isfinite(value) or not ok(value):
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1 (counts: environments, goals, products, steps)."""
    return _int(text, "a positive integer", low=1)


def at_most(parse, high: int):
    """``parse`` (an integer type of this module) with an upper bound ``high``.

    The lower bound's message stays ``parse``'s; above ``high`` it is ``must be at most HIGH``.
    """

    def bounded(text: str) -> int:
        value = parse(text)
        if value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high:,}, got {text!r}")
        return value

    bounded.__name__ = f"{parse.__name__}_at_most_{high}"
    return bounded


def non_negative_int(text: str) -> int:
    """An integer >= 0 (0 usually means "none" or "off", as each flag's help says)."""
    return _int(text, "an integer >= 0", low=0)


def seed(text: str) -> int:
    """A seed: an integer in [0, 2**63)."""
    return _int(text, "an integer seed in [0, 2**63)", low=0, high=MAX_SEED)


def port(text: str) -> int:
    """A TCP port in [0, 65535]; 0 asks the operating system for a free one."""
    return _int(text, "a port number in 0-65535 (0: any free port)", low=0, high=65535)


def non_negative_float(text: str) -> float:
    """A finite number >= 0."""
    return _float(text, "a finite number >= 0", lambda x: x >= 0)


def seconds(text: str) -> float:
    """A duration in seconds: a finite number in [0, one year]."""
    return _float(text, f"a finite number >= 0 (seconds, at most {MAX_SECONDS:,})", lambda x: 0 <= x <= MAX_SECONDS)


def timeout(text: str) -> float:
    """A timeout in seconds: a number in (0, one year]."""
    return _float(text, f"a number of seconds > 0 and at most {MAX_SECONDS:,}", lambda x: 0 < x <= MAX_SECONDS)


def base_url(text: str) -> str:
    """An OpenAI-compatible API's root: an http(s) URL with a host (checked, never sent before)."""
    from webshop_gym.agents.openai import (
        check_base_url,  # served runs' module: not loaded by other commands
    )
    from webshop_gym.error import InvalidArgument

    try:
        return check_base_url(text)
    except InvalidArgument as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def price(text: str) -> float:
    """A price in USD per million tokens: a number in [0, 1,000,000]."""
    return _float(text, f"a price >= 0 and at most {MAX_PRICE:,} (USD per million tokens)", lambda x: 0 <= x <= MAX_PRICE)


def temperature(text: str) -> float:
    """A sampling temperature: a number in (0, 100]."""
    return _float(text, "a number > 0 and at most 100", lambda x: 0 < x <= 100)


def positive_float(text: str) -> float:
    """A finite number > 0."""
    return _float(text, "a finite number > 0", lambda x: x > 0)


def probability(text: str) -> float:
    """A number in [0, 1]."""
    return _float(text, "a number in [0, 1]", lambda x: 0.0 <= x <= 1.0)


def fraction(text: str) -> float:
    """A number in [0, 1): a share that leaves something over."""
    return _float(text, "a number in [0, 1)", lambda x: 0.0 <= x < 1.0)


def existing_file(text: str) -> str:
    """A path to an existing, readable regular file."""
    path = Path(text).expanduser()
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a directory, expected a file")
    if not path.is_file():
        if path.exists():  # a device, a FIFO, a socket: no file whose size and content are fixed
            raise argparse.ArgumentTypeError(f"{text!r} is not a regular file (a device, pipe or socket), expected a file")
        raise argparse.ArgumentTypeError(f"file {text!r} does not exist")
    if not os.access(path, os.R_OK):
        raise argparse.ArgumentTypeError(f"file {text!r} is not readable")
    return str(path)


def existing_dir(text: str) -> str:
    """A path to an existing directory."""
    path = Path(text).expanduser()
    if path.is_file():
        raise argparse.ArgumentTypeError(f"{text!r} is a file, expected a directory")
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"directory {text!r} does not exist")
    return str(path)


def _make_parent(folder: Path) -> None:
    """The one rule of every output flag: missing folders are created, below the working directory only.

    A relative path (or any path inside the working directory) gets its missing folders, as
    ``mkdir -p`` would; elsewhere the folder must exist, so a mistyped absolute path never leaves
    folders behind in odd places.
    """
    if folder.is_dir():
        return
    cwd = Path.cwd().resolve()
    if not folder.resolve().is_relative_to(cwd):
        raise argparse.ArgumentTypeError(
            f"folder {str(folder)!r} does not exist (missing folders are created only below the working directory)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot create folder {str(folder)!r} ({exc.strerror or exc})") from None


def output_file(text: str) -> str:
    """A file to write: not a directory; its missing folders are created below the working directory."""
    if text == "":
        raise argparse.ArgumentTypeError("must be a file path, got ''")
    path = Path(text).expanduser()
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a directory, expected a file to write")
    parent = path.parent if str(path.parent) else Path(".")
    _make_parent(parent)
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise argparse.ArgumentTypeError(f"{text!r} is not writable")
    return str(path)


def output_dir(text: str) -> str:
    """A directory to write into: existing, or created (with missing parents) below the working directory."""
    if text == "":
        raise argparse.ArgumentTypeError("must be a directory path, got ''")
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a file, expected a directory")
    parent = path if path.is_dir() else path.parent
    _make_parent(parent)
    if not os.access(parent, os.W_OK):
        raise argparse.ArgumentTypeError(f"{text!r} is not writable")
    return str(path)


def new_dir(text: str) -> str:
    """A directory a command creates itself: its missing parents are created below the working directory."""
    if text == "":
        raise argparse.ArgumentTypeError("must be a directory path, got ''")
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a file, expected a directory")
    parent = path.parent if str(path.parent) else Path(".")
    _make_parent(parent)
    if not os.access(parent, os.W_OK):
        raise argparse.ArgumentTypeError(f"{str(parent)!r} is not writable")
    return str(path)


def http_url(text: str) -> str:
    """A plain http(s) URL with a host (a mirror's base folder)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"{text!r} is not an http:// or https:// URL with a host")
    return text


def host(text: str) -> str:
    """An address to bind: an IPv4/IPv6 literal or a host name that resolves (checked now, offline too)."""
    import ipaddress
    import socket

    name = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    try:
        ipaddress.ip_address(name)
        return name
    except ValueError:
        pass
    labels = name.rstrip(".").split(".")
    if not name or len(name) > 253 or not all(
        0 < len(label) <= 63 and label.replace("-", "").isalnum() and label.isascii() and not label.startswith("-")
        for label in labels
    ) or labels[-1].isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is neither an IP address nor a host name")
    try:
        socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise argparse.ArgumentTypeError(f"cannot resolve host {text!r} ({getattr(exc, 'strerror', None) or exc})") from None
    return name


MODEL_WEIGHTS = ("*.safetensors", "pytorch_model*.bin", "*.safetensors.index.json", "pytorch_model.bin.index.json")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json", "vocab.txt")


def model_dir(text: str) -> str:
    """A local Hugging Face model folder: ``config.json``, a tokenizer and weights (nothing is downloaded)."""
    path = Path(text).expanduser()
    if not text or not path.is_dir():
        raise argparse.ArgumentTypeError(
            f"hf:PATH needs a local model folder (nothing is downloaded); {text!r} is not a directory")
    missing = []
    if not (path / "config.json").is_file():
        missing.append("config.json")
    if not any((path / name).is_file() for name in TOKENIZER_FILES):
        missing.append("a tokenizer (tokenizer.json or tokenizer_config.json)")
    if not any(any(path.glob(pattern)) for pattern in MODEL_WEIGHTS):
        missing.append("weights (*.safetensors or pytorch_model*.bin)")
    if missing:
        raise argparse.ArgumentTypeError(
            f"model folder {text!r} lacks " + ", ".join(missing)
            + ": write one with model.save_pretrained(PATH) and tokenizer.save_pretrained(PATH)")
    return str(path)
