"""Server-side token verifiers (driver side: they fetch): ``JwtVerifier`` checks JWT access
tokens with the authorization server's JWKS (PyJWT), ``IntrospectionVerifier`` asks its
RFC 7662 introspection endpoint. Give one to ``AuthSettings(verifier=...)``; any object
with ``verify(token) -> Principal | TokenRejected | VerifierUnavailable`` will do
(``mcp_sansio.server.TokenVerifier``).
"""

from .fetch import FetchError
from .jwks import JwksCache, JwksUnavailable
from .verifiers import DEFAULT_ALGORITHMS, IntrospectionVerifier, JwtVerifier, scopes_of

__all__ = ["DEFAULT_ALGORITHMS", "FetchError", "IntrospectionVerifier", "JwksCache", "JwksUnavailable",
           "JwtVerifier", "scopes_of"]
