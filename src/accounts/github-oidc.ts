/**
 * GitHub Actions OIDC tokens, verified as PyPI, npm and crates.io verify them: RS256 only, a key
 * from the issuer's own JWKS (found through its discovery document and cached), the configured
 * issuer and audience, exp/nbf/iat within the clock tolerance, then the claims a trusted publisher
 * is matched on. Every refusal is oidc_token_invalid with details.claim naming what failed.
 */
import {
  createRemoteJWKSet,
  customFetch,
  decodeProtectedHeader,
  errors,
  type JWTPayload,
  type JWTVerifyGetKey,
  jwtVerify,
} from "jose";
import { SvcError } from "../errors.ts";

/** What a trusted publisher is matched on, from a verified token. */
export interface GitHubOidcClaims {
  /** The numeric repository id: names can be renamed, transferred or re-created; ids cannot. */
  repositoryId: number;
  /** owner/name, for messages and the audit log. */
  repository: string;
  /** The workflow file name under .github/workflows/ (from job_workflow_ref). */
  workflow: string;
  jobWorkflowRef: string;
  environment: string | null;
  ref: string;
  actor: string;
  jti: string;
  expiresAt: Date;
}

export interface OidcVerifierOptions {
  issuer: string;
  audience: string;
  clockToleranceSeconds: number;
  now: () => Date;
  /** For the discovery document and the JWKS; the default is the global fetch. */
  fetch?: typeof fetch;
}

/** GitHub signs with RS256; anything else (none, HS256 keyed with the public key, ES256) is refused. */
const ALGORITHMS = ["RS256"];
/** GitHub's tokens live minutes; an older iat is no GitHub Actions token. */
const MAX_TOKEN_AGE_SECONDS = 3600;
const ISSUER_TIMEOUT_MS = 5000;
const LOGIN = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/;
const REPOSITORY = /^[A-Za-z0-9-]{1,39}\/[A-Za-z0-9._-]{1,100}$/;
const JOB_WORKFLOW_REF =
  /^([A-Za-z0-9-]{1,39}\/[A-Za-z0-9._-]{1,100})\/\.github\/workflows\/([A-Za-z0-9._-]{1,100}\.ya?ml)@(.+)$/;

export function refuseToken(claim: string, message: string, extra: Record<string, unknown> = {}): SvcError {
  return new SvcError("oidc_token_invalid", message, { details: { claim, ...extra } });
}

function issuerUnavailable(issuer: string, why: string): SvcError {
  return new SvcError("oidc_issuer_unavailable", `the OIDC issuer ${issuer} could not be read: ${why}`, {
    details: { issuer },
  });
}

/** Key sets by issuer, for the life of the process: jose refetches on an unknown kid (after a cooldown). */
const keySets = new Map<string, Promise<JWTVerifyGetKey>>();

async function discoverKeySet(issuer: string, fetchImpl: typeof fetch): Promise<JWTVerifyGetKey> {
  const where = `${issuer}/.well-known/openid-configuration`;
  let document: { issuer?: unknown; jwks_uri?: unknown };
  try {
    const response = await fetchImpl(where, {
      redirect: "error",
      signal: AbortSignal.timeout(ISSUER_TIMEOUT_MS),
      headers: { accept: "application/json" },
    });
    if (!response.ok) throw new Error(`${where} answered ${response.status}`);
    document = (await response.json()) as typeof document;
  } catch (error) {
    throw issuerUnavailable(issuer, (error as Error).message);
  }
  if (document.issuer !== issuer)
    throw issuerUnavailable(issuer, `its discovery document names issuer ${String(document.issuer)}`);
  let jwksUri: URL;
  try {
    jwksUri = new URL(String(document.jwks_uri));
  } catch {
    throw issuerUnavailable(issuer, "its discovery document has no valid jwks_uri");
  }
  // The keys come from the issuer's own origin: a discovery document cannot send us elsewhere.
  if (jwksUri.origin !== new URL(issuer).origin)
    throw issuerUnavailable(issuer, `its jwks_uri ${jwksUri.href} is on another origin`);
  return createRemoteJWKSet(jwksUri, {
    timeoutDuration: ISSUER_TIMEOUT_MS,
    ...(fetchImpl !== globalThis.fetch ? { [customFetch]: fetchImpl } : {}),
  });
}

function keySetFor(issuer: string, fetchImpl: typeof fetch): Promise<JWTVerifyGetKey> {
  let found = keySets.get(issuer);
  if (!found) {
    found = discoverKeySet(issuer, fetchImpl);
    keySets.set(issuer, found);
    // A failed discovery is retried by the next exchange, not remembered.
    found.catch(() => keySets.delete(issuer));
  }
  return found;
}

function joseRefusal(error: unknown, options: OidcVerifierOptions): SvcError {
  if (error instanceof errors.JWTExpired)
    return refuseToken(
      error.claim,
      error.claim === "iat" ? "the token was issued too long ago" : "the token has expired (exp)",
    );
  if (error instanceof errors.JWTClaimValidationFailed) {
    const expected =
      error.claim === "aud"
        ? { expected: options.audience }
        : error.claim === "iss"
          ? { expected: options.issuer }
          : {};
    const what: Record<string, string> = {
      aud: `the token is for another audience: this portal accepts aud ${options.audience} (core.getIDToken(audience))`,
      iss: `the token is from another issuer: this portal accepts iss ${options.issuer}`,
      nbf: "the token is not valid yet (nbf is in the future)",
      iat: "the token's iat is in the future",
    };
    return refuseToken(error.claim, what[error.claim] ?? `claim ${error.claim}: ${error.reason}`, expected);
  }
  if (error instanceof errors.JOSEAlgNotAllowed)
    return refuseToken("alg", "the token is not signed with RS256, the only algorithm accepted");
  if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys)
    return refuseToken("kid", "the token's key id (kid) is not one of the issuer's published keys");
  if (error instanceof errors.JWSSignatureVerificationFailed)
    return refuseToken("signature", "the token's signature does not verify with the issuer's key");
  if (error instanceof errors.JWKSTimeout || error instanceof errors.JWKSInvalid)
    return issuerUnavailable(options.issuer, error.message);
  if (error instanceof errors.JOSEError)
    return refuseToken("token", `the token is not a valid JWT: ${error.message}`);
  if (error instanceof SvcError) return error;
  return issuerUnavailable(options.issuer, (error as Error).message);
}

function text(payload: JWTPayload, claim: string, pattern?: RegExp): string {
  const value = payload[claim];
  if (typeof value !== "string" || value === "" || value.length > 1000 || (pattern && !pattern.test(value)))
    throw refuseToken(claim, `the token has no valid ${claim} claim`);
  return value;
}

/** The claims a trusted publisher is matched on, from a payload whose signature and times verified. */
export function githubClaims(payload: JWTPayload): GitHubOidcClaims {
  const rawId = payload.repository_id;
  const idText = typeof rawId === "number" ? String(rawId) : rawId;
  if (typeof idText !== "string" || !/^[1-9][0-9]{0,15}$/.test(idText))
    throw refuseToken("repository_id", "the token has no valid repository_id claim");
  const repository = text(payload, "repository", REPOSITORY);
  const jobWorkflowRef = text(payload, "job_workflow_ref");
  const m = JOB_WORKFLOW_REF.exec(jobWorkflowRef);
  if (!m)
    throw refuseToken(
      "job_workflow_ref",
      `job_workflow_ref ${jobWorkflowRef} is not owner/repo/.github/workflows/<file>@<ref>`,
    );
  // A reusable workflow from another repository would put that repository here: its author is no
  // trusted publisher of this mod, so only the repository's own workflow files are accepted.
  if (m[1]!.toLowerCase() !== repository.toLowerCase())
    throw refuseToken(
      "job_workflow_ref",
      `job_workflow_ref ${jobWorkflowRef} is a workflow of another repository than ${repository}`,
    );
  const environment = payload.environment;
  if (environment !== undefined && (typeof environment !== "string" || environment.length > 255))
    throw refuseToken("environment", "the token's environment claim is not a string");
  return {
    repositoryId: Number(idText),
    repository,
    workflow: m[2]!,
    jobWorkflowRef,
    environment: environment ? environment : null,
    ref: text(payload, "ref"),
    actor: text(payload, "actor", LOGIN),
    jti: text(payload, "jti", /^[A-Za-z0-9._:-]{1,128}$/),
    expiresAt: new Date((payload.exp ?? 0) * 1000),
  };
}

/**
 * Verifies a token and returns its GitHub claims; throws oidc_token_invalid (naming the claim) or
 * oidc_issuer_unavailable (the issuer's keys could not be read).
 */
export async function verifyGitHubOidcToken(
  token: string,
  options: OidcVerifierOptions,
): Promise<GitHubOidcClaims> {
  if (typeof token !== "string" || token.length > 16_384 || token.split(".").length !== 3)
    throw refuseToken("token", "the token is not a compact JWT (header.payload.signature)");
  try {
    const alg = decodeProtectedHeader(token).alg;
    // Decided before any key is fetched: none or HS256 never reaches a key lookup.
    if (alg !== "RS256")
      throw refuseToken("alg", `the token is signed with ${String(alg)}; only RS256 is accepted`);
  } catch (error) {
    if (error instanceof SvcError) throw error;
    throw refuseToken("token", "the token's header is not valid JSON");
  }
  const keys = await keySetFor(options.issuer, options.fetch ?? globalThis.fetch);
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, keys, {
      algorithms: ALGORITHMS,
      issuer: options.issuer,
      audience: options.audience,
      clockTolerance: options.clockToleranceSeconds,
      currentDate: options.now(),
      maxTokenAge: MAX_TOKEN_AGE_SECONDS,
      requiredClaims: ["exp", "iat", "nbf"],
    }));
  } catch (error) {
    throw joseRefusal(error, options);
  }
  return githubClaims(payload);
}
