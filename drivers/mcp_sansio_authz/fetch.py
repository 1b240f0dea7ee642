"""Bounded HTTP for the verifiers: the stdlib's ``urllib`` with a timeout and a size cap.

A verifier runs off the event loop (a worker thread) or inline in the blocking driver, so
plain blocking I/O is right here; what matters is that it ends: every fetch has a
timeout, reads at most ``max_bytes`` (one more byte means the answer is refused), and only
``http``/``https`` URLs are fetched.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Mapping

__all__ = ["FetchError", "Response", "check_http_url", "http_request"]


class FetchError(Exception):
    """The request failed: no answer, a timeout, or an answer over the size cap. Its text
    names the URL and the failure, never a request body (which may hold a token)."""


class Response:
    """A status and a body of at most the cap."""

    __slots__ = ("body", "status")

    def __init__(self, status: int, body: bytes) -> None:
        self.status = status
        self.body = body


def check_http_url(url: str, what: str) -> str:
    """``url``, if it is an ``http(s)`` URL.

    Raises:
        ValueError: it is not.
    """
    if not url.startswith(("https://", "http://")):
        raise ValueError(f"{what} must be an http(s) URL, not {url!r}")
    return url


def http_request(url: str, *, timeout: float, max_bytes: int, data: bytes | None = None,
                 headers: Mapping[str, str] | None = None) -> Response:
    """GET ``url`` (POST ``data`` when given); the status and the body, any status.

    Raises:
        FetchError: no answer within ``timeout``, a network failure, or a body over
            ``max_bytes``.
    """
    request = urllib.request.Request(url, data=data, headers=dict(headers or {}),
                                     method="POST" if data is not None else "GET")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            status = answer.status
            body = answer.read(max_bytes + 1)
    except urllib.error.HTTPError as exc:
        status = exc.code
        try:
            body = exc.read(max_bytes + 1)
        except OSError:
            body = b""
        finally:
            exc.close()
    except (OSError, ValueError) as exc:  # URLError, timeouts, resets; a malformed URL
        raise FetchError(f"{url}: {type(exc).__name__}: {getattr(exc, 'reason', exc)}") from None
    if len(body) > max_bytes:
        raise FetchError(f"{url}: the answer exceeds {max_bytes} bytes")
    return Response(status, body)
