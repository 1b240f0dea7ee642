"""The shared listener: what a batch of accepted connections says of each client."""

from __future__ import annotations

import socket
import time

from mcp_sansio_base.listening import accept_ready, listen


def test_a_batch_says_which_clients_sent_bytes_and_drops_those_already_gone() -> None:
    [listener] = listen("127.0.0.1", 0)
    port = listener.getsockname()[1]
    try:
        quiet = socket.create_connection(("127.0.0.1", port))
        talking = socket.create_connection(("127.0.0.1", port))
        talking.sendall(b"POST /mcp HTTP/1.1\r\n")
        gone = socket.create_connection(("127.0.0.1", port))
        gone.close()
        time.sleep(0.2)  # every handshake, byte and FIN is in by now (loopback)
        accepted = accept_ready(listener)
        try:
            peers = {sock.getpeername()[1]: sending for sock, _, sending in accepted}
            assert peers == {quiet.getsockname()[1]: False, talking.getsockname()[1]: True}
        finally:
            for sock, _, _ in accepted:
                sock.close()
            quiet.close()
            talking.close()
    finally:
        listener.close()
