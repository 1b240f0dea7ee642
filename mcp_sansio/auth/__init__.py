"""OAuth 2.1 authorization for MCP clients, as a pure planner (MCP authorization spec 2025-11-25).

:class:`OAuthFlow` turns the MCP server's refusals into steps for the host: metadata
fetches, client registration, a browser redirect, token requests, and finally a token or
a reason for failing. See :mod:`mcp_sansio.auth.flow` for the whole contract.
"""

from .config import (
    AuthorizationCodeGrant,
    ClientCredentials,
    ClientCredentialsGrant,
    Grant,
    IdJagGrant,
    JwtBearerGrant,
    OAuthConfig,
    Signer,
    SigningKey,
)
from .flow import OAuthFlow
from .jose import b64url, client_assertion, dpop_proof, pkce_challenge, sign_jwt
from .metadata import (
    AuthorizationServerMetadata,
    ProtectedResourceMetadata,
    RegistrationResponse,
    TokenResponse,
)
from .state import Phase
from .steps import (
    ENTROPY_BYTES,
    AuthFailure,
    AuthorizationPending,
    Authorized,
    AuthStep,
    AuthStepBase,
    ExchangeCode,
    Failed,
    FetchMetadata,
    Fresh,
    Headers,
    HttpRequestPlan,
    HttpResponse,
    HttpStep,
    MetadataKind,
    Redirect,
    RefreshToken,
    Register,
    RequestToken,
    Token,
)
from .tokens import JWT_BEARER, TOKEN_EXCHANGE

__all__ = [
    "ENTROPY_BYTES",
    "JWT_BEARER",
    "TOKEN_EXCHANGE",
    "AuthFailure",
    "AuthStep",
    "AuthorizationCodeGrant",
    "AuthorizationServerMetadata",
    "Authorized",
    "ClientCredentials",
    "ClientCredentialsGrant",
    "ExchangeCode",
    "Failed",
    "FetchMetadata",
    "Fresh",
    "Grant",
    "Headers",
    "HttpRequestPlan",
    "HttpResponse",
    "HttpStep",
    "IdJagGrant",
    "JwtBearerGrant",
    "MetadataKind",
    "OAuthConfig",
    "OAuthFlow",
    "AuthorizationPending",
    "Phase",
    "ProtectedResourceMetadata",
    "Redirect",
    "RefreshToken",
    "Register",
    "RequestToken",
    "RegistrationResponse",
    "Signer",
    "SigningKey",
    "AuthStepBase",
    "Token",
    "TokenResponse",
    "b64url",
    "client_assertion",
    "dpop_proof",
    "pkce_challenge",
    "sign_jwt",
]
