"""Finding an MCP server's authorization server: RFC 9728, then RFC 8414 / OIDC Discovery.

Protected resource metadata is looked for at the ``resource_metadata`` URL of the
challenge, then the path-based and the root well-known URLs; its ``resource`` must cover
the MCP endpoint. The first authorization server it lists is looked up at the well-known
locations the MCP spec orders, and its metadata must name that very issuer (RFC 8414
section 3.3). Without protected resource metadata (a 2025-03-26 server) the MCP origin's
root metadata is used, and failing that the default ``/authorize``, ``/token`` and
``/register`` paths there.
"""

from __future__ import annotations

import msgspec

from mcp_sansio.errors import LocalProtocolError, RemoteProtocolError
from mcp_sansio.urls import Url, parse_url, same_origin

from .config import SigningKey, is_secure
from .metadata import (
    AuthorizationServerMetadata,
    ProtectedResourceMetadata,
    authorization_server_metadata_urls,
    decode,
    protected_resource_metadata_urls,
    quote_text,
    resource_covers,
)
from .requests import metadata_get
from .steps import AuthFailure, Failed, FetchMetadata, HttpResponse, MetadataKind

__all__ = ["AuthorizationServer", "Discovered", "Discovery", "canonical_uri", "origin_of"]

_NAMES = {MetadataKind.PROTECTED_RESOURCE: "protected resource metadata",
          MetadataKind.AUTHORIZATION_SERVER: "authorization server metadata"}


class AuthorizationServer(msgspec.Struct, frozen=True, kw_only=True):
    """An authorization server as far as a flow needs it.

    Attributes:
        lookup: the identifier its metadata was looked up for (the protected resource
            metadata's entry, or the MCP origin on the 2025-03-26 path).
        issuer: the ``issuer`` its metadata names (RFC 9207 checks, assertion audience).
        metadata: the metadata; ``None`` for the 2025-03-26 default endpoints.
        authorization_endpoint: where the browser goes, if the server has one.
        token_endpoint: the token endpoint.
        registration_endpoint: the RFC 7591 endpoint, if any.
        dpop: our DPoP key when the server accepts its algorithm, else ``None``.
    """

    lookup: str
    issuer: str
    metadata: AuthorizationServerMetadata | None
    authorization_endpoint: Url | None
    token_endpoint: Url
    registration_endpoint: Url | None
    dpop: SigningKey | None


class Discovered(msgspec.Struct, frozen=True, kw_only=True):
    """The outcome of a successful discovery."""

    server: AuthorizationServer
    resource_metadata: ProtectedResourceMetadata | None
    resource: str
    """The RFC 8707 ``resource``: as the metadata spells it, else the canonical server URI."""


class Discovery:
    """One discovery run: :meth:`begin`, then :meth:`receive` each answer until it is done."""

    def __init__(self, server_url: Url, *, hint: str | None, known: AuthorizationServer | None,
                 dpop_key: SigningKey | None, max_bytes: int) -> None:
        self.server_url = server_url
        self.kind = MetadataKind.PROTECTED_RESOURCE
        self._known = known
        self._dpop_key = dpop_key
        self._max_bytes = max_bytes
        self._candidates = protected_resource_metadata_urls(server_url)
        self._server_error = False  # a candidate answered 5xx or 429
        self._invalid = False  # a candidate answered 2xx with something undecodable
        self._prm: ProtectedResourceMetadata | None = None
        self._resource = canonical_uri(server_url)
        self._lookup = ""
        self._legacy = False
        hinted = _secure_url(hint) if hint is not None else None
        if hinted is not None:
            self._candidates = [hinted, *(url for url in self._candidates if url != hinted)]

    def begin(self) -> FetchMetadata:
        """The first request."""
        return FetchMetadata(request=metadata_get(self._candidates.pop(0)), kind=self.kind)

    def receive(self, response: HttpResponse) -> FetchMetadata | Failed | Discovered:
        """The next request, or the outcome, given the answer to the last request."""
        ok = 200 <= response.status < 300
        if not ok and (response.status >= 500 or response.status == 429):
            self._server_error = True
        if ok and self.kind is MetadataKind.PROTECTED_RESOURCE:
            try:
                prm = decode(ProtectedResourceMetadata, response.body, max_bytes=self._max_bytes)
            except RemoteProtocolError:
                self._invalid = True
            else:
                return self._use_resource_metadata(prm)
        elif ok:
            try:
                metadata = decode(AuthorizationServerMetadata, response.body, max_bytes=self._max_bytes)
            except RemoteProtocolError:
                self._invalid = True
            else:
                return self._use_server_metadata(metadata)
        return self._next()

    def _next(self) -> FetchMetadata | Failed | Discovered:
        if self._candidates:
            return FetchMetadata(request=metadata_get(self._candidates.pop(0)), kind=self.kind)
        name = _NAMES[self.kind]
        if self._server_error:
            return Failed(reason=AuthFailure.HTTP_ERROR, message=f"{name} requests failed with server errors")
        if self._invalid:
            return Failed(reason=AuthFailure.INVALID_METADATA, message=f"the {name} does not decode")
        if self.kind is MetadataKind.PROTECTED_RESOURCE:
            # No protected resource metadata: a 2025-03-26 server is its own authorization server.
            return self._use_issuer(origin_of(self.server_url), legacy=True)
        if not self._legacy:
            return Failed(reason=AuthFailure.METADATA_NOT_FOUND,
                          message=f"no metadata found for {self._lookup}")
        origin = self._lookup
        server = AuthorizationServer(lookup=origin, issuer=origin, metadata=None,
                                     authorization_endpoint=parse_url(origin + "/authorize"),
                                     token_endpoint=parse_url(origin + "/token"),
                                     registration_endpoint=parse_url(origin + "/register"), dpop=None)
        return Discovered(server=server, resource_metadata=None, resource=self._resource)

    def _use_resource_metadata(self, prm: ProtectedResourceMetadata) -> Failed | FetchMetadata | Discovered:
        resource = _url(prm.resource)
        if resource is None:
            return Failed(reason=AuthFailure.INVALID_METADATA, message="the metadata's resource is no URL")
        if not resource_covers(resource, self.server_url):
            return Failed(reason=AuthFailure.RESOURCE_MISMATCH,
                          message=f"the metadata is for {quote_text(prm.resource)}, not {self.server_url}")
        if not prm.authorization_servers:
            return Failed(reason=AuthFailure.INVALID_METADATA,
                          message="the metadata names no authorization server")
        self._prm, self._resource = prm, prm.resource
        return self._use_issuer(prm.authorization_servers[0], legacy=False)

    def _use_issuer(self, lookup: str, *, legacy: bool) -> Failed | FetchMetadata | Discovered:
        issuer = _url(lookup)
        if issuer is None or "?" in issuer.target:
            return Failed(reason=AuthFailure.INVALID_METADATA,
                          message=f"the authorization server {quote_text(lookup)} is no issuer URL")
        if not is_secure(issuer):
            return Failed(reason=AuthFailure.INSECURE_ENDPOINT,
                          message=f"the authorization server {lookup} is not https")
        if self._known is not None and self._known.lookup == lookup:
            return Discovered(server=self._known, resource_metadata=self._prm, resource=self._resource)
        self.kind = MetadataKind.AUTHORIZATION_SERVER
        self._lookup, self._legacy = lookup, legacy
        self._server_error = self._invalid = False
        urls = authorization_server_metadata_urls(issuer)
        self._candidates = urls[:1] if legacy else urls
        return self._next()

    def _use_server_metadata(self, metadata: AuthorizationServerMetadata) -> Failed | Discovered:
        issuer = metadata.issuer
        if issuer != self._lookup and not (self._legacy and self._same_origin_issuer(issuer)):
            return Failed(reason=AuthFailure.ISSUER_MISMATCH,
                          message=f"metadata for {self._lookup} names the issuer {quote_text(issuer)}")
        endpoints: dict[str, Url | None] = {}
        for name in ("authorization_endpoint", "token_endpoint", "registration_endpoint"):
            value: str | None = getattr(metadata, name)
            endpoints[name] = url = None if value is None else _url(value)
            if value is not None and url is None:
                return Failed(reason=AuthFailure.INVALID_METADATA, message=f"the {name} is no URL")
            if url is not None and not is_secure(url):
                return Failed(reason=AuthFailure.INSECURE_ENDPOINT, message=f"the {name} {url} is not https")
        token_endpoint = endpoints["token_endpoint"]
        if token_endpoint is None:
            return Failed(reason=AuthFailure.INVALID_METADATA, message="the metadata has no token_endpoint")
        key = self._dpop_key
        algorithms = metadata.dpop_signing_alg_values_supported or ()
        dpop = key if key is not None and key.alg in algorithms else None
        server = AuthorizationServer(lookup=self._lookup, issuer=metadata.issuer, metadata=metadata,
                                     authorization_endpoint=endpoints["authorization_endpoint"],
                                     token_endpoint=token_endpoint,
                                     registration_endpoint=endpoints["registration_endpoint"], dpop=dpop)
        return Discovered(server=server, resource_metadata=self._prm, resource=self._resource)

    def _same_origin_issuer(self, issuer: str) -> bool:
        """The one tolerance of RFC 8414 section 3.3, confined to the 2025-03-26 path.

        There the metadata comes from the MCP server's own origin and no issuer was known
        beforehand, so an issuer elsewhere on that origin (conformance 0.1.16 serves
        ``<origin>/oauth``) names no other party than the one already trusted.
        """
        url = _url(issuer)
        return url is not None and same_origin(url, self.server_url) and "?" not in url.target


def origin_of(url: Url) -> str:
    """``scheme://authority`` of ``url``."""
    return f"{url.scheme}://{url.authority}"


def canonical_uri(url: Url) -> str:
    """The canonical server URI (MCP spec): no fragment, and no slash for an empty path."""
    return origin_of(url) + ("" if url.target == "/" else url.target)


def _url(text: str) -> Url | None:
    try:
        return parse_url(text)
    except LocalProtocolError:
        return None


def _secure_url(text: str) -> Url | None:
    url = _url(text)
    return url if url is not None and is_secure(url) else None
