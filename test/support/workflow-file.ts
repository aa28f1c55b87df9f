import { readFileSync } from "node:fs";
import { join } from "node:path";
import { register } from "tsx/esm/api";
import { REPO_ROOT } from "./repo-root.ts";

// @actions/workflow-parser imports its schema JSON without an import attribute, which Node's own
// loader refuses; tsx's loader (the one bin/svc.js uses) accepts it.
register();
const { parseWorkflowFile } = await import("./workflow-lint.ts");

/** A workflow document as plain data, read freely by the tests (an expression is `${{ expr }}`). */
export type Plain = any;

/** .github/workflows/{name} parsed by GitHub's own parser: the document as plain data, and its errors. */
export function readWorkflow(name: string): { doc: Plain; errors: unknown[] } {
  return parseWorkflowFile(name, readFileSync(join(REPO_ROOT, ".github/workflows", name), "utf8"));
}
