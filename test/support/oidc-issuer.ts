/**
 * A loopback stand-in for GitHub Actions' OIDC issuer (a fake of the network edge, named as one):
 * its discovery document, its JWKS (an RSA key pair made at test time) and the runner's token
 * request endpoint (ACTIONS_ID_TOKEN_REQUEST_URL), which signs a token for the asked audience.
 */
import { generateKeyPairSync, randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import { exportJWK, type JWTPayload, SignJWT } from "jose";
import { listen } from "../../src/http/server.ts";

export interface OidcIssuer {
  /** http://127.0.0.1:PORT: the iss of every token and the portal's configured issuer. */
  issuer: string;
  kid: string;
  /** The RSA public key as PEM: what a key-confusion attack signs HS256 tokens with. */
  publicKeyPem: string;
  /** A GitHub Actions token for these claims (defaults filled in), RS256 with the JWKS's key. */
  sign(
    claims?: Partial<GitHubClaims> & JWTPayload,
    options?: { kid?: string; privateKey?: KeyObjectLike },
  ): Promise<string>;
  /** ACTIONS_ID_TOKEN_REQUEST_URL and _TOKEN for a runner; `claims` are what the next tokens carry. */
  runner: { url: string; token: string; claims: Partial<GitHubClaims> & JWTPayload };
  /** Audiences the runner endpoint was asked for. */
  requestedAudiences: string[];
  stop(): Promise<void>;
}

type KeyObjectLike = ReturnType<typeof generateKeyPairSync>["privateKey"];

export interface GitHubClaims {
  aud: string;
  repository: string;
  repository_id: string;
  repository_owner: string;
  job_workflow_ref: string;
  ref: string;
  actor: string;
  environment: string;
  event_name: string;
  sha: string;
}

export function githubClaims(overrides: Partial<GitHubClaims> = {}): GitHubClaims {
  return {
    aud: "http://127.0.0.1",
    repository: "ada/quick-travel",
    repository_id: "424242",
    repository_owner: "ada",
    job_workflow_ref: "ada/quick-travel/.github/workflows/release.yml@refs/tags/v1.0.0",
    ref: "refs/tags/v1.0.0",
    actor: "ada",
    environment: "release",
    event_name: "release",
    sha: "a".repeat(40),
    ...overrides,
  };
}

/** A second key pair, not in the issuer's JWKS: a token it signs must not verify. */
export function strangerKey(): KeyObjectLike {
  return generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey;
}

export async function startOidcIssuer(): Promise<OidcIssuer> {
  const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const kid = "test-key-1";
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: "RS256", use: "sig" };
  const requestedAudiences: string[] = [];
  const runnerToken = `runner-${randomUUID()}`;
  let issuer = "";
  const runner = { url: "", token: runnerToken, claims: {} as Partial<GitHubClaims> & JWTPayload };

  const sign: OidcIssuer["sign"] = async (claims = {}, options = {}) => {
    const now = Math.floor(Date.now() / 1000);
    const { iss, iat, nbf, exp, jti, ...rest } = claims;
    return new SignJWT({ ...githubClaims(), ...rest })
      .setProtectedHeader({ alg: "RS256", typ: "JWT", kid: options.kid ?? kid })
      .setIssuer(iss ?? issuer)
      .setIssuedAt(iat ?? now)
      .setNotBefore(nbf ?? now - 5)
      .setExpirationTime(exp ?? now + 300)
      .setJti(jti ?? randomUUID())
      .sign(options.privateKey ?? privateKey);
  };

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", issuer);
    const json = (status: number, body: unknown) =>
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    if (url.pathname === "/.well-known/openid-configuration")
      return json(200, {
        issuer,
        jwks_uri: `${issuer}/.well-known/jwks`,
        id_token_signing_alg_values_supported: ["RS256"],
      });
    if (url.pathname === "/.well-known/jwks") return json(200, { keys: [jwk] });
    if (url.pathname === "/runner/token") {
      if (req.headers.authorization !== `Bearer ${runnerToken}`)
        return json(401, { message: "bad runner token" });
      const audience = url.searchParams.get("audience") ?? "";
      requestedAudiences.push(audience);
      void sign({ ...runner.claims, aud: audience }).then((value) => json(200, { value }));
      return;
    }
    json(404, { message: "not found" });
  });
  const { port } = await listen(server, 0, "127.0.0.1");
  issuer = `http://127.0.0.1:${port}`;
  runner.url = `${issuer}/runner/token?api-version=2.0`;
  return {
    issuer,
    kid,
    publicKeyPem: publicKey.export({ type: "spki", format: "pem" }).toString(),
    sign,
    runner,
    requestedAudiences,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
