/**
 * The fields of the framework validation contract the runner reads, checked by hand. The published
 * document is validated against game-publishing-validation.schema.json when `svc build` writes it
 * and by `svc check`; compiling that schema on every `svc validate` cost more than validating a
 * typical package, so the runner only proves here that every cap, list and map it relies on is
 * present and well-typed. Anything missing fails every check closed (policy_invalid).
 */
type Problem = string;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function stringArray(v: unknown): boolean {
  return Array.isArray(v) && v.every((x) => typeof x === "string");
}

export function policyShapeProblems(policy: unknown): Problem[] {
  const problems: Problem[] = [];
  if (!isObject(policy)) return ["policy: is not an object"];
  if (policy.schema !== "svc.game-publishing-validation.v1")
    problems.push("policy/schema: must be svc.game-publishing-validation.v1");
  if (typeof policy.manifestFileName !== "string" || policy.manifestFileName === "")
    problems.push("policy/manifestFileName: must be a file name");
  const checks = policy.checks;
  if (
    !Array.isArray(checks) ||
    !checks.every(
      (c) =>
        isObject(c) &&
        typeof c.id === "string" &&
        typeof c.required === "boolean" &&
        (c.scope === "package" || c.scope === "workflow"),
    )
  ) {
    problems.push("policy/checks: must list {id, required, scope}");
  }
  const pkg = policy.package;
  if (!isObject(pkg)) problems.push("policy/package: missing");
  else {
    for (const key of [
      "maxPackageBytes",
      "maxEntries",
      "maxNameBytes",
      "maxPathDepth",
      "maxEntryUncompressedBytes",
      "maxTotalUncompressedBytes",
      "maxCompressionRatio",
    ]) {
      const v = pkg[key];
      if (typeof v !== "number" || !Number.isFinite(v) || v < 1)
        problems.push(`policy/package/${key}: must be a number >= 1`);
    }
    for (const key of ["compressionRatioMinBytes", "maxNestedArchiveDepth"]) {
      const v = pkg[key];
      if (typeof v !== "number" || !Number.isFinite(v) || v < 0)
        problems.push(`policy/package/${key}: must be a number >= 0`);
    }
  }
  const content = policy.content;
  if (!isObject(content)) problems.push("policy/content: missing");
  else {
    for (const key of [
      "allowedExtensions",
      "nativeBinaryExtensions",
      "forbiddenExtensions",
      "scriptExtensions",
      "configExtensions",
    ]) {
      if (!stringArray(content[key])) problems.push(`policy/content/${key}: must be an array of strings`);
    }
    if (typeof content.nativeBinaryDirectory !== "string" || content.nativeBinaryDirectory === "") {
      problems.push("policy/content/nativeBinaryDirectory: must be a folder");
    }
  }
  const signatures = policy.signatures;
  if (!isObject(signatures)) problems.push("policy/signatures: missing");
  else {
    if (!stringArray(signatures.package))
      problems.push("policy/signatures/package: must be an array of strings");
    if (!stringArray(signatures.forbiddenAnywhere))
      problems.push("policy/signatures/forbiddenAnywhere: must be an array of strings");
    if (!isObject(signatures.byExtension) || !Object.values(signatures.byExtension).every(stringArray)) {
      problems.push("policy/signatures/byExtension: must map extensions to arrays of strings");
    }
  }
  return problems;
}
