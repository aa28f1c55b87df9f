/**
 * Who may publish a mod (svc.mod-ownership.v1, an entry of records/owners/{shard}.json): owners and
 * collaborators, the source repository release intake accepts, the trusted publishers whose OIDC
 * tokens may be exchanged for an upload credential. Pure functions only: the catalog reads and
 * writes the record, the submission paths ask these questions of it.
 */

/** A portal account or a GitHub user: exactly one of the two. */
export type Principal = { account: string; github?: never } | { github: string; account?: never };

export interface RepositoryRef {
  /** owner/name when it was recorded (display only: the id is what is compared). */
  fullName: string;
  id: number;
}

export interface TrustedPublisher {
  repository: RepositoryRef;
  /** The workflow file name under .github/workflows/. */
  workflow: string;
  /** A GitHub environment the job must run in, or null for any. */
  environment: string | null;
}

export type OwnershipAction =
  | "claim"
  | "add_collaborator"
  | "remove_collaborator"
  | "add_trusted_publisher"
  | "remove_trusted_publisher"
  | "set_source_repository"
  | "transfer";

export interface OwnershipChange {
  at: string;
  action: OwnershipAction;
  by: Principal;
  subject?: Principal;
  trustedPublisher?: TrustedPublisher;
  repository?: RepositoryRef | null;
  owners?: Principal[];
  reason?: string;
  submissionId?: string;
}

export interface ModOwnership {
  schema: "svc.mod-ownership.v1";
  modId: string;
  owners: Principal[];
  collaborators: Principal[];
  sourceRepository: RepositoryRef | null;
  trustedPublishers: TrustedPublisher[];
  claimedAt: string;
  updatedAt: string;
  history: OwnershipChange[];
}

/** The public part of ownership, mirrored in the mod's detail document. */
export type PublicOwnership = Pick<
  ModOwnership,
  "owners" | "collaborators" | "sourceRepository" | "trustedPublishers"
>;

export function publicOwnership(ownership: ModOwnership): PublicOwnership {
  return {
    owners: ownership.owners,
    collaborators: ownership.collaborators,
    sourceRepository: ownership.sourceRepository,
    trustedPublishers: ownership.trustedPublishers,
  };
}

/** GitHub logins are case-insensitive; account ids are compared exactly. */
export function samePrincipal(a: Principal, b: Principal): boolean {
  if (a.account !== undefined) return a.account === b.account;
  return b.github !== undefined && a.github!.toLowerCase() === b.github.toLowerCase();
}

export function describePrincipal(principal: Principal): string {
  return principal.account !== undefined ? `account ${principal.account}` : `@${principal.github}`;
}

/**
 * The principals one person acts as: their portal account and, when the account is linked or the
 * submission came from GitHub, their GitHub login.
 */
export type Identity = readonly Principal[];

export function isOwner(ownership: ModOwnership, identity: Identity): boolean {
  return ownership.owners.some((owner) => identity.some((p) => samePrincipal(owner, p)));
}

/** Whether this person may submit a release of the mod: an owner or a collaborator. */
export function maySubmit(ownership: ModOwnership | null, identity: Identity): boolean {
  if (ownership === null) return true;
  return [...ownership.owners, ...ownership.collaborators].some((member) =>
    identity.some((p) => samePrincipal(member, p)),
  );
}

/** No owner or collaborator approves a release of their own mod (nor the submitter, checked apart). */
export function mayReview(ownership: ModOwnership | null, identity: Identity): boolean {
  return ownership === null || !maySubmit(ownership, identity);
}

/** A new ownership record: the first accepted submission claims the mod id for its submitter. */
export function claimOwnership(input: {
  modId: string;
  owner: Principal;
  at: string;
  sourceRepository?: RepositoryRef | null;
  submissionId?: string;
}): ModOwnership {
  return {
    schema: "svc.mod-ownership.v1",
    modId: input.modId,
    owners: [input.owner],
    collaborators: [],
    sourceRepository: input.sourceRepository ?? null,
    trustedPublishers: [],
    claimedAt: input.at,
    updatedAt: input.at,
    history: [
      {
        at: input.at,
        action: "claim",
        by: input.owner,
        ...(input.sourceRepository ? { repository: input.sourceRepository } : {}),
        ...(input.submissionId ? { submissionId: input.submissionId } : {}),
      },
    ],
  };
}

/** Whether release intake accepts a release from this repository (by id, never by name). */
export function acceptsRepository(ownership: ModOwnership | null, repositoryId: number): boolean {
  return ownership?.sourceRepository == null || ownership.sourceRepository.id === repositoryId;
}

/** The trusted publisher an OIDC token's claims match, or null. */
export function matchTrustedPublisher(
  ownership: ModOwnership | null,
  claims: { repositoryId: number; workflow: string; environment: string | null },
): TrustedPublisher | null {
  return (
    ownership?.trustedPublishers.find(
      (tp) =>
        tp.repository.id === claims.repositoryId &&
        tp.workflow === claims.workflow &&
        (tp.environment === null || tp.environment === claims.environment),
    ) ?? null
  );
}
