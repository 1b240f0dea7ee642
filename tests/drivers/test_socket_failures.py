"""``socket_failure``: what each driver's exceptions become for the core (no driver, no I/O)."""

from __future__ import annotations

import errno
import socket
import ssl

import pytest

from mcp_sansio.connections import SocketFailure, SocketStage
from mcp_sansio_base.failures import socket_failure


def _chained(summary: OSError, cause: BaseException) -> OSError:
    summary.__cause__ = cause
    return summary


@pytest.mark.parametrize(("exc", "stage", "expected"), [
    # asyncio words a refusal its own way: the OS's words replace them.
    (ConnectionRefusedError(errno.ECONNREFUSED, "Connect call failed ('127.0.0.1', 1)"), SocketStage.CONNECT,
     SocketFailure(stage=SocketStage.CONNECT, cause="Connection refused", errno=errno.ECONNREFUSED)),
    # anyio: a summary raised from the attempts (the last one is what the caller sees).
    (_chained(OSError("All connection attempts failed"), ExceptionGroup("attempts", [
        OSError(errno.ENETUNREACH, "x"), OSError(errno.ECONNREFUSED, "y")])), SocketStage.CONNECT,
     SocketFailure(stage=SocketStage.CONNECT, cause="Connection refused", errno=errno.ECONNREFUSED)),
    (socket.gaierror(socket.EAI_NONAME, "Name or service not known"), SocketStage.CONNECT,
     SocketFailure(stage=SocketStage.RESOLVE, cause="Name or service not known", errno=socket.EAI_NONAME)),
    (ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number"), SocketStage.CONNECT,
     SocketFailure(stage=SocketStage.TLS, cause="[SSL: WRONG_VERSION_NUMBER] wrong version number", errno=1)),
    (ConnectionResetError(errno.ECONNRESET, "reset"), SocketStage.TRANSFER,
     SocketFailure(stage=SocketStage.TRANSFER, cause="Connection reset by peer", errno=errno.ECONNRESET)),
    (TimeoutError("timed out"), SocketStage.CONNECT,
     SocketFailure(stage=SocketStage.CONNECT, cause="timed out")),
    (ConnectionResetError(), SocketStage.TLS,
     SocketFailure(stage=SocketStage.TLS, cause="ConnectionResetError")),
])
def test_exceptions_become_the_stage_the_os_words_and_the_errno(
    exc: BaseException, stage: SocketStage, expected: SocketFailure
) -> None:
    assert socket_failure(exc, stage) == expected


def test_a_certificate_that_does_not_verify_says_why() -> None:
    exc = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] ...")
    exc.verify_message = "self-signed certificate"
    assert socket_failure(exc, SocketStage.CONNECT) == SocketFailure(
        stage=SocketStage.TLS, cause="certificate verify failed: self-signed certificate", errno=1)
