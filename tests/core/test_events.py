"""Failure events turn into the same exception types in every driver."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_sansio import (
    ConnectError,
    ConnectionClosed,
    ErrorData,
    FailureReason,
    InitializeFailed,
    McpSansioError,
    MessageTooLarge,
    PaginationError,
    RemoteProtocolError,
    RequestCancelled,
    RequestError,
    RequestFailed,
    RequestTimeout,
    SendQueueFull,
    SessionExpired,
    UnsupportedProtocolVersion,
)
from mcp_sansio.errors import HttpError, InsufficientScope, ProxyError, Unauthorized

EXCEPTION_FOR: dict[FailureReason, type[McpSansioError]] = {
    FailureReason.ERROR_RESPONSE: RemoteProtocolError,  # without an error object to carry
    FailureReason.TIMEOUT: RequestTimeout,
    FailureReason.CANCELLED: RequestCancelled,
    FailureReason.CONNECTION_LOST: ConnectionClosed,
    FailureReason.CONNECT_FAILED: ConnectError,
    FailureReason.SESSION_EXPIRED: SessionExpired,
    FailureReason.PROTOCOL_ERROR: RemoteProtocolError,
    FailureReason.MESSAGE_TOO_LARGE: MessageTooLarge,
    FailureReason.INVALID_RESULT: RemoteProtocolError,
    FailureReason.PAGINATION: PaginationError,
    FailureReason.UNSUPPORTED_VERSION: RemoteProtocolError,
    FailureReason.HTTP_ERROR: HttpError,
    FailureReason.AUTHORIZATION_REQUIRED: Unauthorized,
    FailureReason.INSUFFICIENT_SCOPE: InsufficientScope,
    FailureReason.PROXY_ERROR: ProxyError,
    FailureReason.SEND_QUEUE_FULL: SendQueueFull,
}


def _failed(reason: FailureReason, **fields: Any) -> RequestFailed:
    return RequestFailed(request_id=1, method="m", reason=reason, message="msg", **fields)


def test_every_reason_has_an_exception() -> None:
    assert set(EXCEPTION_FOR) == set(FailureReason)


@pytest.mark.parametrize("reason", list(FailureReason))
def test_request_failure_converts_by_reason(reason: FailureReason) -> None:
    exc = _failed(reason).to_exception()
    assert type(exc) is EXCEPTION_FOR[reason]
    assert "msg" in str(exc)


def test_error_response_converts_to_request_error() -> None:
    exc = _failed(FailureReason.ERROR_RESPONSE, error=ErrorData(code=-32001, message="no", data={"a": 1}))
    converted = exc.to_exception()
    assert isinstance(converted, RequestError)
    assert (converted.code, converted.message, converted.data) == (-32001, "no", {"a": 1})
    assert str(converted) == "no (JSON-RPC error -32001)"


def test_connection_lost_carries_the_exit_status_and_stderr() -> None:
    exc = _failed(FailureReason.CONNECTION_LOST).to_exception(returncode=1, stderr_tail="a\n\nboom  \n")
    assert isinstance(exc, ConnectionClosed)
    assert (exc.returncode, exc.stderr_tail) == (1, "a\n\nboom  \n")
    assert str(exc) == "msg (exit status 1); stderr: boom"


def test_connect_failure_carries_where_and_why() -> None:
    detail = {"host": "h.test", "port": "8443", "cause": "Connection refused", "stage": "connect",
              "errno": "111"}
    exc = _failed(FailureReason.CONNECT_FAILED, detail=detail).to_exception()
    assert isinstance(exc, ConnectError) and isinstance(exc, ConnectionClosed)
    assert (exc.host, exc.port, exc.cause, exc.errno) == ("h.test", 8443, "Connection refused", 111)


def test_connect_failure_without_an_errno_has_none() -> None:
    detail = {"host": "h.test", "port": "443", "cause": "certificate verify failed", "stage": "tls",
              "errno": ""}
    exc = _failed(FailureReason.CONNECT_FAILED, detail=detail).to_exception()
    assert isinstance(exc, ConnectError) and exc.errno is None


def test_connection_closed_without_details_is_just_the_message() -> None:
    assert str(ConnectionClosed("gone")) == "gone"
    assert str(ConnectionClosed("gone", stderr_tail="   \n")) == "gone"


def test_http_failures_carry_status_and_detail() -> None:
    http = _failed(FailureReason.HTTP_ERROR, status=502, detail={"body": "bad gateway"}).to_exception()
    assert isinstance(http, HttpError)
    assert (http.status, http.body_excerpt) == (502, "bad gateway")
    auth = _failed(FailureReason.AUTHORIZATION_REQUIRED, status=401, detail={"scope": "x"}).to_exception()
    assert isinstance(auth, Unauthorized)
    assert (auth.status, auth.params) == (401, {"scope": "x"})
    proxy = _failed(FailureReason.PROXY_ERROR, status=407).to_exception()
    assert isinstance(proxy, ProxyError)
    assert proxy.status == 407


def test_http_failures_without_detail_default_their_fields() -> None:
    http = _failed(FailureReason.HTTP_ERROR).to_exception()
    assert isinstance(http, HttpError)
    assert (http.status, http.body_excerpt) == (0, "")


def test_unsupported_version_at_initialize_carries_both_sides() -> None:
    event = InitializeFailed(reason=FailureReason.UNSUPPORTED_VERSION, message="no",
                             offered="2025-11-25", received=("1.0",))
    exc = event.to_exception()
    assert isinstance(exc, UnsupportedProtocolVersion)
    assert (exc.offered, exc.received) == ("2025-11-25", ("1.0",))


@pytest.mark.parametrize("reason", [r for r in FailureReason if r is not FailureReason.UNSUPPORTED_VERSION])
def test_initialize_failure_converts_like_a_request_failure(reason: FailureReason) -> None:
    exc = InitializeFailed(reason=reason, message="msg").to_exception(returncode=2)
    assert type(exc) is EXCEPTION_FOR[reason]


def test_request_timeout_is_a_timeout_error() -> None:
    assert issubclass(RequestTimeout, TimeoutError)


def test_message_too_large_records_its_limit() -> None:
    assert MessageTooLarge("big", limit=10).limit == 10
    assert MessageTooLarge("big").limit is None


def test_every_exception_is_an_mcp_sansio_error() -> None:
    assert all(issubclass(tp, McpSansioError) for tp in EXCEPTION_FOR.values())


def test_a_handshake_timeout_carries_the_stderr_tail() -> None:
    failed = InitializeFailed(reason=FailureReason.TIMEOUT, message="slow")
    exc = failed.to_exception(returncode=None, stderr_tail="loading model\nstill loading\n")
    assert isinstance(exc, RequestTimeout) and isinstance(exc, TimeoutError)
    assert exc.stderr_tail == "loading model\nstill loading\n"
    assert str(exc) == "slow; stderr: still loading"
