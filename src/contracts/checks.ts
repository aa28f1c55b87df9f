/**
 * The validation checks of the contract, in the order the runner reports them. The 15 package
 * checks are the backend contract's requiredChecks. backend_readiness (before uploads go live) and
 * public_smoke (after every publication) are required too, but run over the deployment, not over
 * one package, so they are scoped "workflow" and stay out of a package's validation report.
 */
export interface CheckDefinition {
  id: string;
  required: boolean;
  scope: "package" | "workflow";
  description: string;
}

export const CHECKS: readonly CheckDefinition[] = [
  {
    id: "sidecar_schema",
    required: true,
    scope: "package",
    description:
      "Sidecar metadata uses the sidecar schema id (svc.mod-release-submission.v1) and matches that schema.",
  },
  {
    id: "manifest_schema",
    required: true,
    scope: "package",
    description: "The package manifest (svc-mod.json at the archive root) matches the mod manifest schema.",
  },
  {
    id: "manifest_identity",
    required: true,
    scope: "package",
    description: "Manifest id, name, version and targetGameBuild match the sidecar.",
  },
  {
    id: "semantic_version",
    required: true,
    scope: "package",
    description: "Version is semantic and does not reuse an existing immutable artifact URL.",
  },
  {
    id: "target_game_build",
    required: true,
    scope: "package",
    description:
      "targetGameBuild is a supported build of the pinned runtime/framework build policy (game-build compatibility matrix).",
  },
  {
    id: "dependency_contract",
    required: true,
    scope: "package",
    description:
      "Sidecar dependencies match manifest dependencies, name catalog mods with parseable ranges, have no cycles and stay manager-readable.",
  },
  {
    id: "zip_path_safety",
    required: true,
    scope: "package",
    description:
      "ZIP entries are relative, have no traversal or ambiguous names, and executables stay under Binaries/Win64.",
  },
  {
    id: "antivirus_scan",
    required: true,
    scope: "package",
    description:
      "The ZIP and every entry pass the deployed antivirus scanner before review or publication; an unavailable scanner fails the check.",
  },
  {
    id: "file_signature",
    required: true,
    scope: "package",
    description:
      "The archive and native binaries match allowed file signatures for their extensions before review or publication.",
  },
  {
    id: "archive_content_policy",
    required: true,
    scope: "package",
    description:
      "Contents comply with the portal policy for extensions, native binaries, scripts, configs, nested archives and bundled assets.",
  },
  {
    id: "entrypoint_presence",
    required: true,
    scope: "package",
    description: "Every manifest entrypoint path exists in the ZIP.",
  },
  {
    id: "mod_config_contract",
    required: true,
    scope: "package",
    description:
      "Optional modConfig declares a safe JSON config path present in the package, select settings, defaults and allowed option values.",
  },
  {
    id: "artifact_hash",
    required: true,
    scope: "package",
    description:
      "SHA256 and size are computed from the exact immutable artifact bytes and match the sidecar.",
  },
  {
    id: "detail_page",
    required: true,
    scope: "package",
    description:
      "Everything the public mod detail page needs is present, and the page exists before catalog publication.",
  },
  {
    id: "manager_catalog_parse",
    required: true,
    scope: "package",
    description: "The reference manager reader parses the catalog with this release in it.",
  },
  {
    id: "backend_readiness",
    required: true,
    scope: "workflow",
    description:
      "Auth, storage, workers, moderation, publishing, audit and public smoke are ready before uploads go live.",
  },
  {
    id: "public_smoke",
    required: true,
    scope: "workflow",
    description:
      "Public smoke fetches JSON endpoints, downloads artifacts, verifies hashes and runs manager URL readers.",
  },
];

export const REQUIRED_PACKAGE_CHECK_IDS: readonly string[] = CHECKS.filter(
  (check) => check.required && check.scope === "package",
).map((check) => check.id);
