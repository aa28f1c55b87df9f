/**
 * A validation check as the published documents list it (the framework validation contract, the
 * workflow document, the backend contract's requiredChecks). The checks themselves, and their one
 * list, are src/validation/checks/index.ts: a check is described once, in its own file, beside the
 * code that runs it. This floor sits below validation and cannot import that list, so the document
 * builders take it as a parameter and the site build (catalog/) passes it in.
 */
export interface CheckDefinition {
  id: string;
  required: boolean;
  scope: "package" | "workflow";
  description: string;
}

/** The ids a package must pass: the required checks scoped "package", in list order. */
export function requiredPackageCheckIds<C extends CheckDefinition>(checks: readonly C[]): Array<C["id"]> {
  return checks.filter((check) => check.required && check.scope === "package").map((check) => check.id);
}

/** A check's fields as a document lists them, in this key order (the published JSON keeps it). */
export function checkDefinition(check: CheckDefinition): CheckDefinition {
  return { id: check.id, required: check.required, scope: check.scope, description: check.description };
}
