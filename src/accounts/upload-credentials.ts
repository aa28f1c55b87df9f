/**
 * Trusted publishing's upload credentials: what a verified GitHub Actions OIDC token is exchanged
 * for. Random, shown once, stored as a SHA-256 only, compared in constant time; good for one mod,
 * a few minutes and one accepted upload.
 */
import type { SqlExecutor } from "../store/store.ts";
import { AUDIT_ACTIONS, appendAuditEvent } from "./audit.ts";
import { constantTimeEqual, hashSecret, newId, newSecretToken, type RandomBytes } from "./secrets.ts";
import { assertUploadsAllowed } from "./upload-suspensions.ts";

/** Recognisable to secret scanners, and never the shape of an API key (svc_ + 38 base62). */
export const UPLOAD_CREDENTIAL_PREFIX = "svc_tp_";
const CREDENTIAL_PATTERN = /^svc_tp_[A-Za-z0-9_-]{43}$/;

/** The workflow run a credential was issued to, from its verified OIDC claims. */
export interface TrustedPublisherRun {
  actor: string;
  repository: string;
  repositoryId: number;
  /** The workflow file name under .github/workflows/. */
  workflow: string;
  environment: string | null;
  ref: string;
  jti: string;
  tokenExpiresAt: Date;
}

export interface UploadCredential {
  id: string;
  modId: string;
  ownerAccountId: string;
  run: Omit<TrustedPublisherRun, "jti" | "tokenExpiresAt">;
  expiresAt: string;
}

interface CredentialRow {
  id: string;
  credential_hash: string;
  mod_id: string;
  owner_account_id: string;
  actor: string;
  repository: string;
  repository_id: string | number;
  workflow: string;
  environment: string | null;
  ref: string;
  expires_at: Date;
  used_at: Date | null;
}

export function isWellFormedUploadCredential(value: string): boolean {
  return CREDENTIAL_PATTERN.test(value);
}

/**
 * Stores a new credential and its audit event in the caller's transaction. Returns null when the
 * token was exchanged before (its jti is taken): a replayed token gets nothing. An owner whose
 * uploads are suspended gets no credential (account_suspended), and the token stays unspent.
 */
export async function issueUploadCredential(
  tx: SqlExecutor,
  input: { modId: string; ownerAccountId: string; run: TrustedPublisherRun; lifetimeSeconds: number },
  deps: { now: Date; random: RandomBytes },
): Promise<{ credential: string; id: string; expiresAt: string } | null> {
  await assertUploadsAllowed(tx, input.ownerAccountId);
  const credential = `${UPLOAD_CREDENTIAL_PREFIX}${newSecretToken(deps.random)}`;
  const id = newId("tpc", deps.random);
  const expiresAt = new Date(deps.now.getTime() + input.lifetimeSeconds * 1000).toISOString();
  const { run } = input;
  // Rows whose credential and token have both expired only keep a replay from mattering: gone.
  await tx.query(
    "DELETE FROM upload_credentials WHERE expires_at < $1::timestamptz AND token_expires_at < $1::timestamptz",
    [deps.now.toISOString()],
  );
  const inserted = await tx.query(
    `INSERT INTO upload_credentials (id, credential_hash, mod_id, owner_account_id, token_jti, token_expires_at,
       actor, repository, repository_id, workflow, environment, ref, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6::timestamptz, $7, $8, $9, $10, $11, $12, $13::timestamptz, $14::timestamptz)
     ON CONFLICT (token_jti) DO NOTHING`,
    [
      id,
      hashSecret(credential),
      input.modId,
      input.ownerAccountId,
      run.jti,
      run.tokenExpiresAt.toISOString(),
      run.actor,
      run.repository,
      run.repositoryId,
      run.workflow,
      run.environment,
      run.ref,
      deps.now.toISOString(),
      expiresAt,
    ],
  );
  if (inserted.rowCount === 0) return null;
  await appendAuditEvent(
    tx,
    {
      actorAccountId: input.ownerAccountId,
      action: AUDIT_ACTIONS.trustedPublishingExchanged,
      targetType: "mod",
      targetId: input.modId,
      metadata: {
        credentialId: id,
        expiresAt,
        actor: run.actor,
        repository: run.repository,
        repositoryId: run.repositoryId,
        workflow: run.workflow,
        environment: run.environment,
        ref: run.ref,
      },
    },
    deps,
  );
  return { credential, id, expiresAt };
}

export type CredentialLookup =
  | { ok: true; credential: UploadCredential }
  | { ok: false; reason: "unknown" | "used" | "expired" };

/** The credential a secret names, if it is still good: unused and unexpired. */
export async function findUploadCredential(
  db: SqlExecutor,
  secret: string,
  now: Date,
): Promise<CredentialLookup> {
  if (!isWellFormedUploadCredential(secret)) return { ok: false, reason: "unknown" };
  const hash = hashSecret(secret);
  const row = (
    await db.query<CredentialRow>(
      `SELECT id, credential_hash, mod_id, owner_account_id, actor, repository, repository_id, workflow,
              environment, ref, expires_at, used_at
       FROM upload_credentials WHERE credential_hash = $1`,
      [hash],
    )
  ).rows[0];
  if (!row || !constantTimeEqual(row.credential_hash, hash)) return { ok: false, reason: "unknown" };
  if (row.used_at !== null) return { ok: false, reason: "used" };
  if (new Date(row.expires_at).getTime() <= now.getTime()) return { ok: false, reason: "expired" };
  return {
    ok: true,
    credential: {
      id: row.id,
      modId: row.mod_id,
      ownerAccountId: row.owner_account_id,
      run: {
        actor: row.actor,
        repository: row.repository,
        repositoryId: Number(row.repository_id),
        workflow: row.workflow,
        environment: row.environment,
        ref: row.ref,
      },
      expiresAt: new Date(row.expires_at).toISOString(),
    },
  };
}

/**
 * Takes the credential for one upload: false when another request took it first or it expired
 * meanwhile. Taken before the submission is recorded, so two uploads never share one credential.
 */
export async function claimUploadCredential(db: SqlExecutor, id: string, now: Date): Promise<boolean> {
  const claimed = await db.query(
    `UPDATE upload_credentials SET used_at = $2::timestamptz
     WHERE id = $1 AND used_at IS NULL AND expires_at > $2::timestamptz`,
    [id, now.toISOString()],
  );
  return claimed.rowCount === 1;
}

/** A refused upload gives the credential back, so the workflow may retry within its lifetime. */
export async function releaseUploadCredential(db: SqlExecutor, id: string): Promise<void> {
  await db.query("UPDATE upload_credentials SET used_at = NULL WHERE id = $1 AND submission_id IS NULL", [
    id,
  ]);
}

/** The accepted upload's submission, recorded with the credential and in the audit log. */
export async function completeUploadCredential(
  tx: SqlExecutor,
  credential: UploadCredential,
  submissionId: string,
  deps: { now: Date; random: RandomBytes },
): Promise<void> {
  await tx.query("UPDATE upload_credentials SET submission_id = $2 WHERE id = $1", [
    credential.id,
    submissionId,
  ]);
  await appendAuditEvent(
    tx,
    {
      actorAccountId: credential.ownerAccountId,
      action: AUDIT_ACTIONS.trustedPublishingUploaded,
      targetType: "submission",
      targetId: submissionId,
      metadata: { credentialId: credential.id, modId: credential.modId, ...credential.run },
    },
    deps,
  );
}
