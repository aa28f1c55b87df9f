/**
 * Which delivery-queue key a webhook is serialised under, or null when the app does nothing with it
 * (then nothing is recorded). Read at acknowledgement time, from the payload alone: everything
 * about one pull request shares its key, a validation run has its own until its report names the
 * pull request, and each release of a mod repository has one.
 */
import type { WorkflowRunPayload } from "./handle.ts";
import { STATUS_MARKER } from "./comments.ts";

/** Work derived from a validation run, queued under its pull request's key. */
export const VALIDATION_OUTCOME_EVENT = "svc.validation_outcome";

export function pullRequestKey(repository: string, number: number): string {
  return `pr:${repository.toLowerCase()}#${number}`;
}

/** The fields of a webhook payload the queue keys and the failure report read (unchecked JSON). */
export interface Payload {
  action?: string;
  repository?: { full_name?: string };
  pull_request?: { number?: number };
  issue?: { number?: number; pull_request?: unknown };
  comment?: { body?: string; user?: { login?: string; type?: string } | null };
  changes?: { body?: { from?: string } };
  sender?: { login?: string };
  workflow_run?: WorkflowRunPayload;
  release?: { tag_name?: string };
  installation?: { id?: number };
  /** A VALIDATION_OUTCOME_EVENT job. */
  installationId?: number;
}

/**
 * Which queue key a portal-app event is serialised under, or null when the app does nothing with
 * it (then nothing is recorded). Everything about one pull request shares its key; a validation
 * run has its own until its report names the pull request (see VALIDATION_OUTCOME_EVENT).
 */
export function portalSerialKey(portalRepository: string) {
  const isPortal = (p: Payload) =>
    typeof p.repository?.full_name === "string" &&
    p.repository.full_name.toLowerCase() === portalRepository.toLowerCase();
  return (event: string, payload: unknown): string | null => {
    const p = payload as Payload;
    if (!p || typeof p !== "object" || !isPortal(p)) return null;
    const number = (n: unknown) =>
      Number.isInteger(n) ? pullRequestKey(portalRepository, n as number) : null;
    switch (event) {
      case "pull_request":
        return ["opened", "reopened", "synchronize", "closed"].includes(p.action ?? "")
          ? number(p.pull_request?.number)
          : null;
      case "pull_request_review":
        return p.action === "submitted" ? number(p.pull_request?.number) : null;
      case "issue_comment":
        if (p.action === "edited" && p.issue?.pull_request && isForeignStatusEdit(p))
          return number(p.issue?.number);
        return p.action === "created" &&
          p.issue?.pull_request &&
          typeof p.comment?.body === "string" &&
          p.comment.body.trimStart().startsWith("/svc")
          ? number(p.issue?.number)
          : null;
      case "workflow_run":
        return p.action === "completed" && Number.isInteger(p.workflow_run?.id)
          ? `run:${portalRepository.toLowerCase()}#${p.workflow_run?.id}`
          : null;
      default:
        return null;
    }
  };
}

/**
 * An edit of an app's comment that holds (or held) a stored state, by another account: anyone with
 * write access can edit the app's comments. The app's own edits (sender = the comment's author) are
 * not recorded; neither is any edit of a person's comment, whose marker never counts anyway.
 */
function isForeignStatusEdit(p: Payload): boolean {
  const author = p.comment?.user;
  if (author?.type !== "Bot" || !author.login || p.sender?.login === author.login) return false;
  return (
    (p.comment?.body ?? "").startsWith(STATUS_MARKER) ||
    (p.changes?.body?.from ?? "").startsWith(STATUS_MARKER)
  );
}

/** Release intake: one key per release; the portal's own releases (artifact store, staging) never count. */
export function intakeSerialKey(portalRepository: string) {
  return (event: string, payload: unknown): string | null => {
    const p = payload as Payload;
    if (event !== "release" || p?.action !== "published") return null;
    const fullName = p.repository?.full_name;
    if (typeof fullName !== "string" || fullName.toLowerCase() === portalRepository.toLowerCase())
      return null;
    return `release:${fullName.toLowerCase()}@${String(p.release?.tag_name ?? "")}`;
  };
}
