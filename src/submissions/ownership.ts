/**
 * Who may upload, approve and manage a mod on the local portal, over its ownership record
 * (svc.mod-ownership.v1, an entry of records/owners/{shard}.json): the refusals the submission paths raise, the
 * claim a moderator sees, and the owner and admin changes of the ownership routes. The publisher
 * stays the authority at publication (it refuses a stranger and claims an unclaimed mod id); these
 * checks answer earlier, before a byte is stored or a decision recorded.
 */
import { appendAuditEvent } from "../accounts/audit.ts";
import type { RandomBytes } from "../accounts/secrets.ts";
import { changeOwnership } from "../catalog/ownership-change.ts";
import type { PublisherOptions } from "../catalog/publisher.ts";
import { loadOwnership } from "../catalog/records.ts";
import type { Role } from "../config/portal-config.ts";
import {
  describePrincipal,
  isOwner,
  type ModOwnership,
  mayReview,
  maySubmit,
  type OwnershipChange,
  type Principal,
  type RepositoryRef,
  samePrincipal,
  type TrustedPublisher,
} from "../contracts/ownership.ts";
import { schemaRegistry } from "../contracts/schemas.ts";
import { SvcError } from "../errors.ts";
import type { Store } from "../store/store.ts";

/** The schema's caps (mod-ownership.schema.json), refused as conflicts before the schema would. */
export const MAX_OWNERS = 16;
export const MAX_COLLABORATORS = 64;
export const MAX_TRUSTED_PUBLISHERS = 16;

const MOD_ID = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

/**
 * How a submission's uploader stands to the mod (svc.upload-submission.v1 `ownership`): new_mod
 * while the mod id is unclaimed (publishing it makes `owners`, the uploader, its owner), owner or
 * collaborator of a claimed mod, or not_permitted once someone else's release claimed it first (its
 * publication will be refused).
 */
export type SubmissionClaim = "new_mod" | "owner" | "collaborator" | "not_permitted";

export interface SubmissionOwnership {
  claim: SubmissionClaim;
  owners: Principal[];
}

/** Someone signed in, with their effective roles (the submission port's caller has this shape). */
export interface OwnershipCaller {
  account: { id: string };
  roles: readonly Role[];
}

const accountPrincipal = (accountId: string): Principal => ({ account: accountId });

export function isModId(value: string): boolean {
  return value.length >= 2 && value.length <= 64 && MOD_ID.test(value);
}

/** The mod's ownership record in these records, or null while the mod id is unclaimed. */
export function readOwnership(records: Pick<PublisherOptions, "recordsDir" | "config">, modId: string) {
  if (!isModId(modId)) return null;
  return loadOwnership(records.recordsDir, modId, schemaRegistry(records.config.baseUrl));
}

export function submissionOwnership(ownership: ModOwnership | null, accountId: string): SubmissionOwnership {
  const uploader = [accountPrincipal(accountId)];
  if (ownership === null) return { claim: "new_mod", owners: uploader };
  const claim: SubmissionClaim = isOwner(ownership, uploader)
    ? "owner"
    : maySubmit(ownership, uploader)
      ? "collaborator"
      : "not_permitted";
  return { claim, owners: ownership.owners };
}

/** "1 portal account", "2 portal accounts and 1 GitHub login": who owns a mod, without naming them. */
export function describeOwnerKinds(owners: readonly Principal[]): string {
  const accounts = owners.filter((o) => o.account !== undefined).length;
  const logins = owners.length - accounts;
  const parts = [
    accounts > 0 ? `${accounts} portal account${accounts === 1 ? "" : "s"}` : null,
    logins > 0 ? `${logins} GitHub login${logins === 1 ? "" : "s"}` : null,
  ].filter(Boolean);
  return parts.join(" and ");
}

/** An upload of a claimed mod by someone who neither owns nor collaborates on it is refused. */
export function assertMayUpload(ownership: ModOwnership | null, modId: string, accountId: string): void {
  if (ownership === null || maySubmit(ownership, [accountPrincipal(accountId)])) return;
  throw new SvcError(
    "forbidden",
    `mod ${modId} belongs to another account: it is claimed by ${describeOwnerKinds(ownership.owners)}, and only its owners and collaborators may upload its releases (an owner adds collaborators; an admin transfers a mod)`,
    { details: { modId, claim: "not_permitted" } },
  );
}

/**
 * No owner or collaborator makes a release of their own mod public: approve, and unhide (which
 * undoes another moderator's hide), are refused. The uploader is refused every decision elsewhere.
 */
export function assertMayDecide(
  ownership: ModOwnership | null,
  modId: string,
  accountId: string,
  decision: string,
): void {
  if (decision !== "approve" && decision !== "unhide") return;
  if (mayReview(ownership, [accountPrincipal(accountId)])) return;
  throw new SvcError(
    "forbidden",
    `an owner or collaborator of mod ${modId} cannot ${decision} its releases: another moderator decides`,
    { details: { modId, decision } },
  );
}

/** A change an owner asks for (an admin: collaborators and transfer). */
export type OwnershipRequest =
  | { action: "add_collaborator" | "remove_collaborator"; subject: Principal }
  | { action: "add_trusted_publisher" | "remove_trusted_publisher"; trustedPublisher: TrustedPublisher }
  | { action: "set_source_repository"; repository: RepositoryRef | null }
  | { action: "transfer"; owners: Principal[]; reason: string };

/** The audit action of each change (target type mod, target id the mod id). */
export const OWNERSHIP_AUDIT: Record<OwnershipRequest["action"], string> = {
  add_collaborator: "mod.collaborator_added",
  remove_collaborator: "mod.collaborator_removed",
  add_trusted_publisher: "mod.trusted_publisher_added",
  remove_trusted_publisher: "mod.trusted_publisher_removed",
  set_source_repository: "mod.source_repository_set",
  transfer: "mod.transferred",
};

function unclaimed(modId: string): SvcError {
  return new SvcError(
    "not_found",
    `mod ${modId} has no owners yet: its first published release claims it, and only then can its ownership change`,
    { details: { modId } },
  );
}

const sameTrustedPublisher = (a: TrustedPublisher, b: TrustedPublisher): boolean =>
  a.repository.id === b.repository.id && a.workflow === b.workflow && a.environment === b.environment;

/**
 * The record after a request, pure: refusals are thrown (not_found for what is not there, conflict
 * for what already is or would pass a cap). Permissions are the caller's business.
 */
export function applyOwnershipRequest(
  current: ModOwnership | null,
  modId: string,
  request: OwnershipRequest,
  by: Principal,
  at: string,
): ModOwnership {
  if (request.action === "transfer") {
    const entry: OwnershipChange = {
      at,
      action: "transfer",
      by,
      owners: request.owners,
      reason: request.reason,
    };
    // An admin may give an unclaimed mod id its owners (a name reserved for its known author).
    if (current === null)
      return {
        schema: "svc.mod-ownership.v1",
        modId,
        owners: request.owners,
        collaborators: [],
        sourceRepository: null,
        trustedPublishers: [],
        claimedAt: at,
        updatedAt: at,
        history: [entry],
      };
    return {
      ...current,
      owners: request.owners,
      // A new owner needs no collaborator entry beside it.
      collaborators: current.collaborators.filter((c) => !request.owners.some((o) => samePrincipal(o, c))),
      history: [...current.history, entry],
    };
  }
  if (current === null) throw unclaimed(modId);
  const entry: OwnershipChange = { at, action: request.action, by };
  switch (request.action) {
    case "add_collaborator": {
      const who = describePrincipal(request.subject);
      if (current.owners.some((o) => samePrincipal(o, request.subject)))
        throw new SvcError("conflict", `${who} already owns ${modId}`, { details: { modId } });
      if (current.collaborators.some((c) => samePrincipal(c, request.subject)))
        throw new SvcError("conflict", `${who} is already a collaborator of ${modId}`, {
          details: { modId },
        });
      if (current.collaborators.length >= MAX_COLLABORATORS)
        throw new SvcError("conflict", `a mod has at most ${MAX_COLLABORATORS} collaborators`, {
          details: { modId, max: MAX_COLLABORATORS },
        });
      return {
        ...current,
        collaborators: [...current.collaborators, request.subject],
        history: [...current.history, { ...entry, subject: request.subject }],
      };
    }
    case "remove_collaborator": {
      if (!current.collaborators.some((c) => samePrincipal(c, request.subject)))
        throw new SvcError(
          "not_found",
          `${describePrincipal(request.subject)} is not a collaborator of ${modId}`,
          { details: { modId } },
        );
      return {
        ...current,
        collaborators: current.collaborators.filter((c) => !samePrincipal(c, request.subject)),
        history: [...current.history, { ...entry, subject: request.subject }],
      };
    }
    case "add_trusted_publisher": {
      if (current.trustedPublishers.some((tp) => sameTrustedPublisher(tp, request.trustedPublisher)))
        throw new SvcError("conflict", `this trusted publisher is already registered for ${modId}`, {
          details: { modId },
        });
      if (current.trustedPublishers.length >= MAX_TRUSTED_PUBLISHERS)
        throw new SvcError("conflict", `a mod has at most ${MAX_TRUSTED_PUBLISHERS} trusted publishers`, {
          details: { modId, max: MAX_TRUSTED_PUBLISHERS },
        });
      return {
        ...current,
        trustedPublishers: [...current.trustedPublishers, request.trustedPublisher],
        history: [...current.history, { ...entry, trustedPublisher: request.trustedPublisher }],
      };
    }
    case "remove_trusted_publisher": {
      if (!current.trustedPublishers.some((tp) => sameTrustedPublisher(tp, request.trustedPublisher)))
        throw new SvcError(
          "not_found",
          `no trusted publisher of ${modId} has this repository id, workflow and environment`,
          { details: { modId } },
        );
      return {
        ...current,
        trustedPublishers: current.trustedPublishers.filter(
          (tp) => !sameTrustedPublisher(tp, request.trustedPublisher),
        ),
        history: [...current.history, { ...entry, trustedPublisher: request.trustedPublisher }],
      };
    }
    case "set_source_repository":
      return {
        ...current,
        sourceRepository: request.repository,
        history: [...current.history, { ...entry, repository: request.repository }],
      };
  }
}

/**
 * Owners change collaborators, trusted publishers and the source repository; an admin may change
 * collaborators too, and only an admin transfers. Trusted publishers and the source repository stay
 * an owner's alone: an exchanged upload credential belongs to the owner who registered the publisher.
 */
function assertMayChange(
  current: ModOwnership | null,
  modId: string,
  request: OwnershipRequest,
  caller: OwnershipCaller,
): void {
  const admin = caller.roles.includes("admin");
  if (request.action === "transfer") {
    if (!admin) throw new SvcError("forbidden", "only an admin transfers a mod", { details: { modId } });
    return;
  }
  if (current === null) throw unclaimed(modId);
  if (isOwner(current, [accountPrincipal(caller.account.id)])) return;
  const collaborators = request.action === "add_collaborator" || request.action === "remove_collaborator";
  if (collaborators && admin) return;
  throw new SvcError(
    "forbidden",
    collaborators
      ? `only an owner of mod ${modId} (or an admin) changes its collaborators`
      : `only an owner of mod ${modId} changes its trusted publishers and source repository`,
    { details: { modId } },
  );
}

export interface OwnershipDeps {
  store: Store;
  now: () => Date;
  random: RandomBytes;
  /** The records and site this process publishes into. */
  publisher: PublisherOptions;
}

/**
 * One ownership change: the accounts it names must exist; the permission and the change are decided
 * under the publish lock on the freshly read record, committed with the mod's detail document, and
 * then audited.
 */
export async function changeModOwnership(
  deps: OwnershipDeps,
  caller: OwnershipCaller,
  modId: string,
  request: OwnershipRequest,
): Promise<ModOwnership> {
  if (!isModId(modId)) throw new SvcError("not_found", `no mod ${modId}`);
  const named =
    request.action === "add_collaborator"
      ? [request.subject]
      : request.action === "transfer"
        ? request.owners
        : [];
  await assertAccountsExist(deps.store, named);
  const by = accountPrincipal(caller.account.id);
  let before = null as ModOwnership | null;
  const result = await changeOwnership(deps.publisher, modId, (current, at) => {
    assertMayChange(current, modId, request, caller);
    before = current;
    return applyOwnershipRequest(current, modId, request, by, at);
  });
  await deps.store.transaction((tx) =>
    appendAuditEvent(
      tx,
      {
        actorAccountId: caller.account.id,
        action: OWNERSHIP_AUDIT[request.action],
        targetType: "mod",
        targetId: modId,
        metadata: auditMetadata(before, request),
      },
      { now: deps.now(), random: deps.random },
    ),
  );
  return result.ownership;
}

function auditMetadata(before: ModOwnership | null, request: OwnershipRequest): Record<string, unknown> {
  switch (request.action) {
    case "add_collaborator":
    case "remove_collaborator":
      return { subject: request.subject };
    case "add_trusted_publisher":
    case "remove_trusted_publisher":
      return { trustedPublisher: request.trustedPublisher };
    case "set_source_repository":
      return { before: before?.sourceRepository ?? null, after: request.repository };
    case "transfer":
      return { before: before?.owners ?? null, after: request.owners, reason: request.reason };
  }
}

async function assertAccountsExist(store: Store, principals: readonly Principal[]): Promise<void> {
  const ids = principals.flatMap((p) => (p.account !== undefined ? [p.account] : []));
  if (ids.length === 0) return;
  const found = await store.query<{ id: string }>("SELECT id FROM accounts WHERE id = ANY($1::text[])", [
    ids,
  ]);
  const known = new Set(found.rows.map((r) => r.id));
  const missing = ids.filter((id) => !known.has(id));
  if (missing.length > 0)
    throw new SvcError("not_found", `no account ${missing.join(", ")}`, { details: { accounts: missing } });
}
