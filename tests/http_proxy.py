"""A TCP proxy that cuts one response short, for the stream-resumption tests.

It forwards every connection from ``127.0.0.1:LISTEN`` to ``127.0.0.1:TARGET`` byte for
byte. The first connection whose request bytes contain ``MARKER`` is cut once its
response has passed ``CUT_AFTER`` bytes beyond the end of the response head: exactly
that many body bytes reach the client, then both sides are closed, as when a network
path drops mid-answer. Each request head it forwards (the request line and the
lower-cased header names) and the cut are appended as JSON lines to ``LOG``.

Usage: ``python http_proxy.py LISTEN TARGET CUT_AFTER MARKER LOG``.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
from pathlib import Path

HEAD_END = b"\r\n\r\n"


class Proxy:
    """The proxy's shared state: where to forward, when to cut, where to log."""

    def __init__(self, target: int, cut_after: int, marker: bytes, log: Path) -> None:
        self.target = target
        self.cut_after = cut_after
        self.marker = marker
        self.log = log
        self.lock = threading.Lock()
        self.cut_done = False

    def record(self, entry: dict[str, object]) -> None:
        """Append ``entry`` to the log."""
        with self.lock, self.log.open("a") as out:
            out.write(json.dumps(entry) + "\n")

    def claim_cut(self) -> bool:
        """Whether this connection is the one to cut (only the first asks successfully)."""
        with self.lock:
            if self.cut_done:
                return False
            self.cut_done = True
            return True


class Link:
    """One proxied connection: a thread per direction."""

    def __init__(self, proxy: Proxy, client: socket.socket) -> None:
        self.proxy = proxy
        self.client = client
        self.server = socket.create_connection(("127.0.0.1", proxy.target))
        self.marked = threading.Event()  # the request carried the marker
        self.cut = False

    def run(self) -> None:
        """Forward both ways until either side closes."""
        threading.Thread(target=self.upstream, daemon=True).start()
        self.downstream()

    def upstream(self) -> None:
        """Client to server; log each request head and note whether the marker passed."""
        seen = b""  # the tail of what the client sent, to find the marker in
        head = b""  # the request head being read
        body_left = 0  # bytes of the current request's body still to come
        while data := _recv(self.client):
            seen = (seen + data)[-65536:]
            if self.proxy.marker in seen:
                self.marked.set()  # before the request goes on, so before its response
            rest = data
            while rest:
                if body_left:
                    taken = min(body_left, len(rest))
                    body_left -= taken
                    rest = rest[taken:]
                    continue
                head += rest
                end = head.find(HEAD_END)
                if end < 0:
                    break
                lines = head[:end].decode("latin-1").split("\r\n")
                head, rest = b"", head[end + len(HEAD_END) :]
                fields = dict(line.split(":", 1) for line in lines[1:])
                fields = {name.strip().lower(): value.strip() for name, value in fields.items()}
                self.proxy.record({"request": lines[0], "headers": sorted(fields)})
                body_left = int(fields.get("content-length", "0"))
            if not _send(self.server, data):
                break
        _shut(self.server)

    def downstream(self) -> None:
        """Server to client, cutting the marked response ``cut_after`` bytes into its body."""
        response = b""  # the marked response so far, until the cut is placed
        remaining: int | None = None  # bytes of it still to pass before the cut
        while data := _recv(self.server):
            if remaining is None and self.marked.is_set() and not self.proxy.cut_done:
                response += data
                end = response.find(HEAD_END)
                if end >= 0 and self.proxy.claim_cut():
                    remaining = end + len(HEAD_END) + self.proxy.cut_after - (len(response) - len(data))
            if remaining is None:
                if not _send(self.client, data):
                    break
                continue
            piece = data[:remaining]
            _send(self.client, piece)
            remaining -= len(piece)
            if remaining <= 0:
                self.proxy.record({"cut": True})
                break
        for sock in (self.client, self.server):
            _shut(sock)
            sock.close()


def _recv(sock: socket.socket) -> bytes:
    try:
        return sock.recv(65536)
    except OSError:
        return b""


def _send(sock: socket.socket, data: bytes) -> bool:
    try:
        sock.sendall(data)
    except OSError:
        return False
    return True


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def main() -> None:
    """Accept connections until killed."""
    listen, target, cut_after = (int(arg) for arg in sys.argv[1:4])
    proxy = Proxy(target, cut_after, sys.argv[4].encode(), Path(sys.argv[5]))
    server = socket.create_server(("127.0.0.1", listen))
    while True:
        client, _ = server.accept()
        link = Link(proxy, client)
        threading.Thread(target=link.run, daemon=True).start()


if __name__ == "__main__":
    main()
