"""``requestState`` of multi round-trip requests (2026-07-28), sealed with HMAC-SHA256.

When a handler needs answers it does not have, the server answers ``input_required``
with the questions and a ``requestState`` the client must echo on its retry. The state
carries what the retry needs and nothing else lives on the server: the answers gathered
in earlier rounds, the values the handler kept (``ctx.state``), an expiry, and a digest
binding it to the request (method, target, arguments) and, with authorization on, to the
principal that made it. The client can read it (base64 JSON) but not alter it: it is
authenticated with HMAC-SHA256 under the server's key, and a state that fails the check,
has expired, or belongs to another request (or another principal) is refused with
``-32602`` (the spec's "MUST reject state that fails verification"). The key is an
argument: the core draws no entropy (STYLE.md law 2).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from typing import Final

import msgspec

__all__ = ["InvalidRequestState", "SealedState", "binding_digest", "seal", "unseal"]

_DOMAIN: Final = b"mcp-sansio/request-state/v1\x00"
_MAC_BYTES: Final = 32


class InvalidRequestState(Exception):  # a verdict carried to the caller
    """A ``requestState`` was refused; the message says why (it never quotes the state)."""


class SealedState(msgspec.Struct, kw_only=True, array_like=True):
    """What a ``requestState`` holds.

    Attributes:
        binding: :func:`binding_digest` of the request it was minted for.
        expires_at: wall-clock seconds (POSIX time) after which it is refused.
        answers: answers of earlier rounds, by ``inputRequests`` key.
        state: what the handler kept in ``ctx.state``.
    """

    binding: str
    expires_at: float
    answers: dict[str, dict[str, object]]
    state: dict[str, object]


_encoder: Final = msgspec.json.Encoder(order="sorted")
_decoder: Final = msgspec.json.Decoder(SealedState)


def binding_digest(method: str, target: str, arguments: object, principal: str | None = None) -> str:
    """A digest naming one request: its method, target (tool or prompt name, or resource
    URI) and arguments (as canonical JSON, key order ignored), and who asked: the
    ``Principal.identity`` when authorization is on (the spec's "SHOULD include the
    authenticated principal, rejecting state presented by a different principal")."""
    body = _encoder.encode([method, target, arguments] if principal is None else
                           [method, target, arguments, principal])
    return base64.urlsafe_b64encode(hashlib.sha256(body).digest()[:18]).decode()


def seal(key: bytes, sealed: SealedState) -> str:
    """The ``requestState`` token for ``sealed``: ``base64url(payload).base64url(mac)``."""
    payload = _encoder.encode(sealed)
    mac = hmac.new(key, _DOMAIN + payload, hashlib.sha256).digest()
    return f"{_b64(payload)}.{_b64(mac)}"


def unseal(key: bytes, token: str, *, binding: str, now_wall: float, max_bytes: int) -> SealedState:
    """Verify ``token`` and return what it holds.

    Raises:
        InvalidRequestState: too large, malformed, not authentic, expired, or minted for
            another request.
    """
    if len(token) > max_bytes:
        raise InvalidRequestState(f"requestState is over {max_bytes} bytes")
    payload_text, dot, mac_text = token.partition(".")
    try:
        payload = _unb64(payload_text)
        mac = _unb64(mac_text)
    except (binascii.Error, ValueError) as exc:
        raise InvalidRequestState("requestState is malformed") from exc
    expected = hmac.new(key, _DOMAIN + payload, hashlib.sha256).digest()
    if not dot or len(mac) != _MAC_BYTES or not hmac.compare_digest(mac, expected):
        raise InvalidRequestState("requestState integrity check failed")
    sealed = _decoder.decode(payload)  # authentic: we wrote it
    if sealed.binding != binding:
        raise InvalidRequestState("requestState belongs to another request")
    if now_wall > sealed.expires_at:
        raise InvalidRequestState("requestState has expired")
    return sealed


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    raw = text.encode("ascii")  # non-ASCII: UnicodeEncodeError is a ValueError
    data = base64.urlsafe_b64decode(raw + b"=" * (-len(raw) % 4))
    if _b64(data).encode() != raw:
        raise ValueError("not canonical base64url")
    return data
