"""The stdio server a client under test starts in hostile-server mode: it joins its stdin
and stdout to the fuzzer's Unix socket (``python -m mcp_sansio_fuzz.relay SOCKET``), so the
fuzzer, in its own process, plays the server. It exits when either side closes."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading


def _up(sock: socket.socket) -> None:
    """stdin to the socket, then half-close it."""
    try:
        while chunk := os.read(0, 1 << 16):
            sock.sendall(chunk)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_WR)


def main() -> None:
    """Relay until the fuzzer or the client hangs up."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(sys.argv[1])
    threading.Thread(target=_up, args=(sock,), daemon=True).start()
    try:
        while chunk := sock.recv(1 << 16):
            view = memoryview(chunk)
            while view:
                view = view[os.write(1, view) :]
    except OSError:
        pass


if __name__ == "__main__":
    main()
