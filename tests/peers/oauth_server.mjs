// A real OAuth 2.1 authorization server for the end-to-end authorization tests: oidc-provider
// (npm), which nobody here wrote. `node oauth_server.mjs PORT RESOURCE` listens on
// 127.0.0.1:PORT with issuer http://127.0.0.1:PORT and issues JWT access tokens (RFC 9068,
// signed with a key made for this run and published at /jwks) whose audience is the resource
// indicator asked for (RFC 8707; RESOURCE when none is: the tests give "urn:no-default", no
// http(s) URI, so a client that names no resource gets invalid_target), with the scopes
// mcp:tools and mcp:admin.
//
// Clients, besides dynamic registration (open, no initial access token):
//   cc-client / cc-secret          confidential, client_credentials, client_secret_basic
//   cc-post / cc-post-secret       confidential, client_credentials, client_secret_post
//   short-lived / short-secret     confidential, client_credentials, tokens live 1 s
//   "odd:client id" / "p@ss:w/rd+%= ~"   the same as cc-client, with characters HTTP Basic must encode
//   public-client                  public (PKCE S256), native: http://127.0.0.1:<any port>/callback
//   short-public                   the same, whose access tokens live 1 s (its refresh tokens an hour)
//   rs-client / rs-secret          a resource server's own client, for token introspection (RFC 7662)
//
// The user's part of the authorization code flow is automatic: the interaction route logs in
// the fixed user "test-user" and grants what was asked, so a browser that follows redirects
// (keeping cookies) comes back to the redirect URI with a code.
//
// Access tokens are JWTs, except for the resources made opaque by POST /test/opaque
// {"resource": URI}: those are random strings the resource server must introspect
// (oidc-provider does not introspect JWTs).
//
// POST /test/mint {"claims": {...}, "header": {...}, "key": "provider" | "foreign"} signs a
// token for the refusal tests: with the provider's own key (an expired token) or with a key
// that is in no key set (an unknown kid); GET /test/jwks-fetches says how often the key set was
// fetched (a resource server must not fetch it for every unknown kid). The line "listening" on
// stdout means ready. (The /test routes exist for the tests only.)
//
// oidc-provider serves its metadata at both /.well-known/openid-configuration and RFC 8414's
// /.well-known/oauth-authorization-server.
import http from "node:http";
import { generateKeyPair, exportJWK, SignJWT } from "jose";
import Provider, { errors } from "oidc-provider";

const [portArg, resource] = process.argv.slice(2);
const port = Number(portArg);
if (!Number.isInteger(port) || !resource) {
  console.error("usage: node oauth_server.mjs PORT RESOURCE");
  process.exit(2);
}
const issuer = `http://127.0.0.1:${port}`;
const SCOPES = "mcp:tools mcp:admin";
const USER = "test-user";

async function signingKey(kid) {
  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  return { ...(await exportJWK(privateKey)), kid, alg: "RS256", use: "sig" };
}
const providerJwk = await signingKey("as-key-1");
const foreignJwk = await signingKey("not-in-any-jwks");
const opaque = new Set(); // resources whose tokens are opaque

const provider = new Provider(issuer, {
  jwks: { keys: [providerJwk] },
  cookies: { keys: ["test-only-cookie-key"] },
  scopes: ["openid", "offline_access", ...SCOPES.split(" ")],
  clients: [
    { client_id: "cc-client", client_secret: "cc-secret", grant_types: ["client_credentials"],
      response_types: [], redirect_uris: [], token_endpoint_auth_method: "client_secret_basic" },
    { client_id: "cc-post", client_secret: "cc-post-secret", grant_types: ["client_credentials"],
      response_types: [], redirect_uris: [], token_endpoint_auth_method: "client_secret_post" },
    { client_id: "short-lived", client_secret: "short-secret", grant_types: ["client_credentials"],
      response_types: [], redirect_uris: [], token_endpoint_auth_method: "client_secret_basic" },
    { client_id: "public-client", application_type: "native", token_endpoint_auth_method: "none",
      grant_types: ["authorization_code", "refresh_token"], response_types: ["code"],
      redirect_uris: ["http://127.0.0.1/callback"] },
    { client_id: "odd:client id", client_secret: "p@ss:w/rd+%= ~", grant_types: ["client_credentials"],
      response_types: [], redirect_uris: [], token_endpoint_auth_method: "client_secret_basic" },
    { client_id: "rs-client", client_secret: "rs-secret", grant_types: ["client_credentials"],
      response_types: [], redirect_uris: [], token_endpoint_auth_method: "client_secret_basic" },
    { client_id: "short-public", application_type: "native", token_endpoint_auth_method: "none",
      grant_types: ["authorization_code", "refresh_token"], response_types: ["code"],
      redirect_uris: ["http://127.0.0.1/callback"] },
  ],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    registration: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: (ctx, client, oneOf) => oneOf ?? resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, indicator) => {
        if (!/^https?:\/\//.test(indicator)) throw new errors.InvalidTarget();
        if (opaque.has(indicator)) return { scope: SCOPES, audience: indicator, accessTokenFormat: "opaque" };
        return { scope: SCOPES, audience: indicator, accessTokenFormat: "jwt", jwt: { sign: { alg: "RS256" } } };
      },
    },
  },
  ttl: {
    ClientCredentials: (ctx, token, client) => (client.clientId === "short-lived" ? 1 : 600),
    AccessToken: (ctx, token, client) => (client.clientId === "short-public" ? 1 : 600),
    AuthorizationCode: () => 60,
    Grant: () => 3600,
    Interaction: () => 600,
    Session: () => 3600,
    RefreshToken: () => 3600,
    IdToken: () => 600,
  },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  findAccount: async (ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
});

// The user: logs in at once, then consents to whatever the client asked for.
async function interaction(req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session } = details;
  if (prompt.name === "login") {
    await provider.interactionFinished(req, res, { login: { accountId: USER } },
                                       { mergeWithLastSubmission: false });
    return;
  }
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  const missing = prompt.details;
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scopes.join(" "));
  }
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: details.grantId ? {} : { grantId } },
                                     { mergeWithLastSubmission: true });
}

async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString() || "{}");
}

// A token signed as the test asks: the provider's key (with its kid) or the foreign one.
async function mint(req, res) {
  const { claims = {}, header = {}, key = "provider" } = await readJson(req);
  const jwk = key === "foreign" ? foreignJwk : providerJwk;
  const token = await new SignJWT(claims)
    .setProtectedHeader({ alg: "RS256", typ: "at+jwt", kid: jwk.kid, ...header })
    .sign(jwk);
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({ token }));
}

const callback = provider.callback();
let jwksFetches = 0;
const server = http.createServer(async (req, res) => {
  try {
    const path = new URL(req.url, issuer).pathname;
    if (path === "/jwks") jwksFetches += 1;
    if (path === "/test/jwks-fetches") {
      res.writeHead(200, { "content-type": "application/json" });
      return res.end(JSON.stringify({ fetches: jwksFetches }));
    }
    if (path.startsWith("/interaction/")) return await interaction(req, res);
    if (path === "/test/mint" && req.method === "POST") return await mint(req, res);
    if (path === "/test/opaque" && req.method === "POST") {
      opaque.add((await readJson(req)).resource);
      res.writeHead(204);
      return res.end();
    }
    return callback(req, res);
  } catch (err) {
    console.error(err);
    if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
    res.end(String(err));
  }
});
server.listen(port, "127.0.0.1", () => console.log("listening"));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
