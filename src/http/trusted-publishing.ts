/**
 * Trusted publishing, as PyPI does it: a GitHub Actions OIDC token from a workflow a mod's owner
 * registered is exchanged for a short-lived upload credential for that mod alone, and create_upload
 * takes the credential in place of a session. The mod's ownership record is the authority: it lists
 * the trusted publishers and, in its history, the account that registered each one, which owns the
 * submissions the workflow makes.
 */
import { dirname, join } from "node:path";
import { decodeJwt } from "jose";
import type { Account } from "../accounts/account-record.ts";
import { effectiveRoles } from "../accounts/roles.ts";
import { type GitHubOidcClaims, verifyGitHubOidcToken } from "../accounts/github-oidc.ts";
import {
  findUploadCredential,
  issueUploadCredential,
  type UploadCredential,
} from "../accounts/upload-credentials.ts";
import type { Role } from "../config/portal-config.ts";
import { trustedPublishingSettings } from "../config/trusted-publishing.ts";
import {
  type ModOwnership,
  matchTrustedPublisher,
  maySubmit,
  type Principal,
  type TrustedPublisher,
} from "../contracts/ownership.ts";
import { SvcError } from "../errors.ts";
import { readOwnership } from "../submissions/ownership.ts";
import { type AppContext, accountsOf, storeOf } from "./context.ts";

export interface ExchangeResult {
  credential: string;
  credentialId: string;
  expiresAt: string;
  modId: string;
  ownerAccountId: string;
  trustedPublisher: TrustedPublisher;
}

function unknownPublisher(modId: string, claim: string, message: string): SvcError {
  return new SvcError("trusted_publisher_unknown", message, { details: { modId, claim } });
}

function ownershipOf(app: AppContext, modId: string): ModOwnership | null {
  const recordsDir = app.recordsDir ?? join(dirname(app.siteDir), "records");
  return readOwnership({ recordsDir, config: app.config }, modId);
}

/**
 * The trusted publisher the claims match, or a refusal naming the first claim no publisher of the
 * mod accepts (repository by id, then workflow file, then environment).
 */
function matchPublisher(modId: string, ownership: ModOwnership | null, claims: GitHubOidcClaims) {
  const registered = ownership?.trustedPublishers ?? [];
  if (registered.length === 0)
    throw unknownPublisher(modId, "mod_id", `mod ${modId} has no trusted publisher`);
  const byRepository = registered.filter((tp) => tp.repository.id === claims.repositoryId);
  if (byRepository.length === 0)
    throw unknownPublisher(
      modId,
      "repository_id",
      `no trusted publisher of ${modId} is repository id ${claims.repositoryId} (${claims.repository}); repositories are matched by id, so a re-created repository of the same name is another one`,
    );
  if (!byRepository.some((tp) => tp.workflow === claims.workflow))
    throw unknownPublisher(
      modId,
      "job_workflow_ref",
      `no trusted publisher of ${modId} in ${claims.repository} is the workflow file ${claims.workflow} (${claims.jobWorkflowRef})`,
    );
  const match = matchTrustedPublisher(ownership, claims);
  if (!match)
    throw unknownPublisher(
      modId,
      "environment",
      `the trusted publisher ${claims.repository} ${claims.workflow} of ${modId} needs a GitHub environment the job did not run in (environment ${claims.environment ?? "none"})`,
    );
  return match;
}

const sameRepository = (a: TrustedPublisher, b: TrustedPublisher) =>
  a.repository.id === b.repository.id && a.workflow === b.workflow && a.environment === b.environment;

/**
 * The portal account that registered the publisher, which owns what it submits. A publisher
 * registered by a GitHub login (no portal account) or by someone who no longer owns or collaborates
 * on the mod is refused: a submission always belongs to a current member's portal account.
 */
async function registrantOf(
  app: AppContext,
  modId: string,
  ownership: ModOwnership,
  publisher: TrustedPublisher,
) {
  const added = ownership.history.findLast(
    (change) =>
      change.action === "add_trusted_publisher" &&
      change.trustedPublisher !== undefined &&
      sameRepository(change.trustedPublisher, publisher),
  );
  const by: Principal | undefined = added?.by;
  const unlinked = (why: string) =>
    new SvcError(
      "trusted_publisher_unlinked",
      `the trusted publisher of ${modId} ${why}: an owner with a portal account must register it again`,
      {
        details: { modId, registeredBy: by ?? null },
      },
    );
  if (!by) throw unlinked("has no add_trusted_publisher entry in the ownership history");
  if (by.account === undefined)
    throw unlinked(`was registered by the GitHub login @${by.github}, not a portal account`);
  if (!maySubmit(ownership, [{ account: by.account }]))
    throw unlinked(`was registered by account ${by.account}, who no longer owns or collaborates on it`);
  const account = await accountsOf(app).getAccount(by.account);
  if (!account) throw unlinked(`was registered by account ${by.account}, which no longer exists`);
  return account;
}

/** exchange_trusted_publishing: verify, match, rate-limit, issue. Throws the refusal's SvcError. */
export async function exchangeOidcToken(
  app: AppContext,
  input: { modId: string; token: string },
): Promise<ExchangeResult> {
  const settings = trustedPublishingSettings(app.config);
  const claims = await verifyGitHubOidcToken(input.token, { ...settings, now: app.now });
  const accounts = accountsOf(app);
  // Counted only once the token verified: forged claims cannot spend another repository's budget.
  await accounts.consumeRateLimit("trustedPublishingRepository", `repository:${claims.repositoryId}`);
  const ownership = ownershipOf(app, input.modId);
  const publisher = matchPublisher(input.modId, ownership, claims);
  const owner = await registrantOf(app, input.modId, ownership!, publisher);
  await accounts.consumeRateLimit("trustedPublishingOwner", `account:${owner.id}`);
  const issued = await storeOf(app).transaction((tx) =>
    issueUploadCredential(
      tx,
      {
        modId: input.modId,
        ownerAccountId: owner.id,
        run: {
          actor: claims.actor,
          repository: claims.repository,
          repositoryId: claims.repositoryId,
          workflow: claims.workflow,
          environment: claims.environment,
          ref: claims.ref,
          jti: claims.jti,
          tokenExpiresAt: claims.expiresAt,
        },
        lifetimeSeconds: settings.credentialLifetimeSeconds,
      },
      { now: app.now(), random: accounts.dependencies.random },
    ),
  );
  if (!issued)
    throw new SvcError(
      "oidc_token_invalid",
      "this token was already exchanged (its jti is spent); request a new one",
      {
        details: { claim: "jti" },
      },
    );
  return {
    credential: issued.credential,
    credentialId: issued.id,
    expiresAt: issued.expiresAt,
    modId: input.modId,
    ownerAccountId: owner.id,
    trustedPublisher: publisher,
  };
}

/**
 * What a refused exchange claimed to be, for the audit log: the token's claims read without
 * verification (marked so), never the token itself.
 */
export function claimedRun(token: unknown): Record<string, unknown> {
  try {
    const payload = decodeJwt(String(token));
    const pick = (name: string) =>
      typeof payload[name] === "string" ? (payload[name] as string).slice(0, 200) : null;
    return {
      actor: pick("actor"),
      repository: pick("repository"),
      repositoryId: pick("repository_id"),
      workflow: pick("job_workflow_ref"),
    };
  } catch {
    return { actor: null, repository: null, repositoryId: null, workflow: null };
  }
}

/** A credential's caller: the registering owner, their roles, and who ran the workflow. */
export interface CredentialCaller {
  account: Account;
  roles: Role[];
  uploadCredential: UploadCredential;
  /** The submitter's identity for ownership checks: the owner's account and the workflow's actor. */
  identity: Principal[];
}

function invalidCredential(message: string): SvcError {
  return new SvcError("upload_credential_invalid", message);
}

/**
 * The caller an upload credential stands for, or upload_credential_invalid. Its trusted publisher
 * must still be registered and its owner still a member: removing either ends the credential at once.
 */
export async function verifyUploadCredential(app: AppContext, secret: string): Promise<CredentialCaller> {
  const found = await findUploadCredential(storeOf(app), secret, app.now());
  if (!found.ok)
    throw invalidCredential(
      found.reason === "used"
        ? "this upload credential was already used for an upload; exchange a new OIDC token"
        : found.reason === "expired"
          ? "this upload credential has expired; exchange a new OIDC token"
          : "unknown upload credential (send 'Authorization: Bearer svc_tp_...' from the exchange)",
    );
  const credential = found.credential;
  const ownership = ownershipOf(app, credential.modId);
  const owner: Principal = { account: credential.ownerAccountId };
  if (!matchTrustedPublisher(ownership, credential.run) || !maySubmit(ownership, [owner]))
    throw invalidCredential(
      `the trusted publisher or the owner this credential was issued for is no longer registered on ${credential.modId}`,
    );
  const account = await accountsOf(app).getAccount(credential.ownerAccountId);
  if (!account) throw invalidCredential("the account this credential was issued for no longer exists");
  return {
    account,
    roles: effectiveRoles(account.roles, account.verifiedAt !== null),
    uploadCredential: credential,
    identity: [owner, { github: credential.run.actor }],
  };
}
