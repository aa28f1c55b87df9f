import { readFileSync } from "node:fs";
import { join } from "node:path";
import { register } from "tsx/esm/api";
import { REPO_ROOT } from "../../support/catalog-project.ts";

// @actions/workflow-parser imports its schema JSON without an import attribute (see workflow-lint.test.ts).
register();
const { NoOperationTraceWriter, parseWorkflow } = await import("@actions/workflow-parser");

export type Plain = any;

/** The parser's token tree as plain data; an expression becomes `${{ expr }}`. */
function toPlain(token: unknown): Plain {
  if (token === null || typeof token !== "object") return token;
  const t = token as {
    type?: number;
    map?: Array<{ Key: unknown; Value: unknown }>;
    seq?: unknown[];
    expr?: string;
  };
  if (t.type === 2 && Array.isArray(t.map))
    return Object.fromEntries(t.map.map(({ Key, Value }) => [String(toPlain(Key)), toPlain(Value)]));
  if (t.type === 1 && Array.isArray(t.seq)) return t.seq.map(toPlain);
  if (t.type === 3 && typeof t.expr === "string") return `\${{ ${t.expr} }}`;
  return token;
}

/** .github/workflows/{name} parsed by GitHub's own parser: the document as plain data, and its errors. */
export function readWorkflow(name: string): { doc: Plain; errors: unknown[] } {
  const parsed = parseWorkflow(
    { name, content: readFileSync(join(REPO_ROOT, ".github/workflows", name), "utf8") },
    new NoOperationTraceWriter(),
  );
  return {
    doc: toPlain(JSON.parse(JSON.stringify(parsed.value))),
    errors: parsed.context.errors.getErrors(),
  };
}
