"""The OS error of a failed socket as the core wants it (shared by every driver).

A driver hands the core a :class:`~mcp_sansio.connections.SocketFailure` (where the
socket failed, the OS's or TLS library's words, the errno) instead of an exception or a
string, and the core decides what the failure means. This module only reads exceptions.
"""

from __future__ import annotations

import os
import socket
import ssl

from mcp_sansio.connections import SocketFailure, SocketStage

__all__ = ["socket_failure"]


def socket_failure(exc: BaseException, stage: SocketStage) -> SocketFailure:
    """Describe ``exc`` for the core.

    Args:
        exc: what connecting, reading or writing raised. anyio's "All connection
            attempts failed" is read through to its last cause.
        stage: where the driver was; a TLS error or a failed name lookup says better.

    Returns:
        The failure, with the OS's own text for an errno (not asyncio's "Connect call
        failed ..." wording), so every driver reports the same words.
    """
    exc = _last_cause(exc)
    if isinstance(exc, ssl.SSLError | ssl.CertificateError):
        stage = SocketStage.TLS
    elif isinstance(exc, socket.gaierror):
        stage = SocketStage.RESOLVE
    errno = exc.errno if isinstance(exc, OSError) and isinstance(exc.errno, int) else None
    if isinstance(exc, ssl.SSLCertVerificationError):
        cause = f"certificate verify failed: {exc.verify_message}"
    elif isinstance(exc, ssl.SSLError):
        cause = str(getattr(exc, "reason", None) or exc)  # the library's short name, when it gave one
    elif errno is not None and errno > 0 and stage is not SocketStage.RESOLVE:
        cause = os.strerror(errno)
    elif isinstance(exc, OSError) and exc.strerror:
        cause = exc.strerror
    else:
        cause = str(exc) or type(exc).__name__
    return SocketFailure(stage=stage, cause=cause, errno=errno)


def _last_cause(exc: BaseException) -> BaseException:
    """The exception that says why: anyio raises a summary ``from`` the real one, or from
    a group of one per address tried."""
    cause = exc.__cause__
    while isinstance(cause, BaseExceptionGroup) and cause.exceptions:
        cause = cause.exceptions[-1]
    return cause if isinstance(cause, OSError) else exc
