/**
 * Real webhook payloads (@octokit/webhooks-examples), deep-copied so a test may adjust them. Their
 * repository, Codertocat/Hello-World, stands for the portal repository.
 */
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const EXAMPLES = require("@octokit/webhooks-examples/api.github.com/index.json") as Array<{
  name: string;
  examples: Array<Record<string, unknown>>;
}>;

/** The portal repository: the one the webhook examples come from. */
export const PORTAL = "Codertocat/Hello-World";
/** The portal app's installation, as the deliveries name it. */
export const INSTALLATION_ID = 1;

/** A real payload for an event/action; one taken without an installation gets the portal app's. */
export function examplePayload(name: string, action: string): Record<string, any> {
  const group = EXAMPLES.find((e) => e.name === name);
  const found = group?.examples.filter((e) => e.action === action) ?? [];
  const chosen = found.find((e) => e.installation) ?? found[0];
  if (!chosen) throw new Error(`no ${name}.${action} example in @octokit/webhooks-examples`);
  const copy = structuredClone(chosen) as Record<string, any>;
  copy.installation ??= { id: INSTALLATION_ID, node_id: "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==" };
  return copy;
}

/** A real payload of an event that has no action (push, workflow_dispatch). */
export function eventExample(name: string): Record<string, any> {
  const chosen = EXAMPLES.find((e) => e.name === name)?.examples.find((e) => e.action === undefined);
  if (!chosen) throw new Error(`no action-less ${name} example in @octokit/webhooks-examples`);
  return structuredClone(chosen) as Record<string, any>;
}
