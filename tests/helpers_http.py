"""Raw HTTP requests for the body-limit tests: a body sent in chunks, stopping when the server answers."""

from __future__ import annotations

import json
import selectors
import socket
from urllib.parse import urlsplit


def post_chunked(url: str, path: str, chunk: bytes, chunks: int, timeout: float = 30.0) -> tuple[int, dict, int]:
    """POST ``chunks`` chunks of ``chunk`` (chunked transfer encoding, no length) until the server answers.

    Returns:
        The status, the JSON body (``{}`` when not JSON) and the bytes of body sent before the answer came.
    """
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=timeout)
    sent = 0
    # a selector, not select.select: a worker that has run many tests may hold descriptors past 1024
    answered = selectors.DefaultSelector()
    answered.register(sock, selectors.EVENT_READ)
    try:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n".encode())
        for _ in range(chunks):
            if answered.select(0):
                break  # the server has answered (or closed): stop sending
            try:
                sock.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += len(chunk)
        else:
            try:
                sock.sendall(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass
        data = b""
        while b"\r\n\r\n" not in data or len(data) < _expected(data):
            try:
                more = sock.recv(65536)
            except ConnectionResetError:
                break
            if not more:
                break
            data += more
    finally:
        answered.close()
        sock.close()
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    try:
        answer = json.loads(body)
    except ValueError:
        answer = {}
    return status, answer, sent


def _expected(data: bytes) -> int:
    head, sep, _ = data.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(head) + len(sep) + int(value)
    return len(data) + 1
