import { SOURCE_SCHEMA_BASE, schemaRegistry } from "../../contracts/schemas.ts";
import type { CheckOutcome, WorkflowCheck } from "../types.ts";
import { failuresOf, passed } from "./common.ts";

const ID = "public_smoke";

export const publicSmoke = {
  id: ID,
  scope: "workflow",
  required: true,
  description:
    "Public smoke fetches JSON endpoints, downloads artifacts, verifies hashes and runs manager URL readers.",
  reasons: {
    smoke_failed: {
      meaning: "The post-publish smoke report shows a failed step.",
      fix: "See the failed steps in the log; fix the deployment and rerun svc smoke.",
    },
    smoke_report_unavailable: {
      meaning: "No post-publish smoke report (svc.post-publish-smoke.v1) was supplied or it is malformed.",
      fix: "Run the public smoke after publication.",
    },
  },
  run: checkPublicSmoke,
} as const satisfies WorkflowCheck;

const { failed } = failuresOf(publicSmoke);

interface SmokeReport {
  passed: boolean;
  baseUrl: string;
  routes: Array<{ path: string; ok: boolean; errors?: string[] }>;
  artifacts: Array<{ url: string; ok: boolean; errors?: string[] }>;
  managerParse: { ok: boolean; errors: string[] };
  ruleFailures: Array<{ rule: string; message: string }>;
}

/** Workflow-level: did the post-publish smoke (svc.post-publish-smoke.v1) pass? */
export function checkPublicSmoke(report: unknown): CheckOutcome {
  if (report === null || report === undefined) {
    return failed("smoke_report_unavailable", ["no post-publish smoke report was supplied"]);
  }
  const result = schemaRegistry(SOURCE_SCHEMA_BASE).validate<SmokeReport>("post-publish-smoke", report);
  if (!result.ok) {
    return failed(
      "smoke_report_unavailable",
      result.issues.slice(0, 20).map((i) => `report${i.path}: ${i.message}`),
    );
  }
  const r = result.value;
  const log = [
    ...r.routes.filter((x) => !x.ok).map((x) => `route ${x.path}: ${(x.errors ?? ["failed"]).join("; ")}`),
    ...r.artifacts
      .filter((x) => !x.ok)
      .map((x) => `artifact ${x.url}: ${(x.errors ?? ["failed"]).join("; ")}`),
    ...(r.managerParse.ok ? [] : [`manager reader: ${r.managerParse.errors.join("; ") || "failed"}`]),
    ...r.ruleFailures.map((f) => `rule ${f.rule}: ${f.message}`),
  ];
  if (!r.passed || log.length > 0)
    return failed("smoke_failed", log.length ? log : ["the report says passed: false"]);
  return passed(ID, [
    `${r.baseUrl}: ${r.routes.length} route(s) and ${r.artifacts.length} artifact(s) verified, manager reader ok`,
  ]);
}
