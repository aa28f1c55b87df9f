import type { CheckOutcome, WorkflowCheck } from "../types.ts";
import { failuresOf, passed } from "./common.ts";

const ID = "backend_readiness";

export const backendReadiness = {
  id: ID,
  scope: "workflow",
  required: true,
  description:
    "Auth, storage, workers, moderation, publishing, audit and public smoke are ready before uploads go live.",
  reasons: {
    backend_not_ready: {
      meaning: "The readiness document reports blockers or services that are not live.",
      fix: "Resolve the listed blockers before uploads go live.",
    },
    readiness_unavailable: {
      meaning: "The readiness document is missing or malformed.",
      fix: "Regenerate readiness.json with svc build.",
    },
  },
  run: checkBackendReadiness,
} as const satisfies WorkflowCheck;

const { failed } = failuresOf(backendReadiness);

interface ReadinessLike {
  schema?: unknown;
  overallStatus?: unknown;
  liveBackend?: unknown;
  releaseBlockers?: Array<{ id?: unknown; summary?: unknown }>;
  gates?: Array<{ id?: unknown; title?: unknown; status?: unknown; remaining?: unknown }>;
}

/** Workflow-level: may uploads go live? Reads readiness.json (svc.production-readiness.v1). */
export function checkBackendReadiness(readiness: unknown): CheckOutcome {
  const doc = readiness as ReadinessLike | null;
  if (
    !doc ||
    typeof doc !== "object" ||
    doc.schema !== "svc.production-readiness.v1" ||
    !Array.isArray(doc.gates)
  ) {
    return failed("readiness_unavailable", [
      "readiness.json is missing or is not svc.production-readiness.v1",
    ]);
  }
  const log: string[] = [];
  if (doc.overallStatus !== "release_ready")
    log.push(`overallStatus is ${JSON.stringify(doc.overallStatus)}`);
  if (doc.liveBackend !== true) log.push("liveBackend is false");
  for (const b of doc.releaseBlockers ?? []) log.push(`blocker ${String(b.id)}: ${String(b.summary)}`);
  for (const g of doc.gates) {
    if (g.status !== "ready") log.push(`gate ${String(g.id)} ${String(g.title)} is ${String(g.status)}`);
  }
  if (log.length > 0) return failed("backend_not_ready", log);
  return passed(ID, ["every gate is ready, there are no blockers and the backend is live"]);
}
