/** The game-build compatibility matrix as the pages read it (site/api/v1/game-builds/latest.json). */
export interface GameBuildMatrix {
  builds: Array<{ buildId: string; validationStatus: string; label?: string }>;
  supportedGameBuilds: string[];
}

export interface Compatibility {
  kind: "supported" | "unvalidated" | "incompatible" | "unknown";
  /** Short label, always text (never colour alone). */
  label: string;
  /** One plain sentence. */
  sentence: string;
}

export function buildLabel(matrix: GameBuildMatrix, buildId: string): string {
  const label = matrix.builds.find((b) => b.buildId === buildId)?.label;
  return label ? `${buildId} (${label})` : buildId;
}

/** How a version built for `buildId` stands against the current supported game builds. */
export function compatibilityOf(matrix: GameBuildMatrix, buildId: string): Compatibility {
  if (matrix.supportedGameBuilds.includes(buildId)) {
    return {
      kind: "supported",
      label: "Compatible",
      sentence: `Built for game build ${buildLabel(matrix, buildId)}, a currently supported build.`,
    };
  }
  const entry = matrix.builds.find((b) => b.buildId === buildId);
  if (entry?.validationStatus === "incompatible") {
    return {
      kind: "incompatible",
      label: "Incompatible",
      sentence: `Built for game build ${buildLabel(matrix, buildId)}, which is known not to work with the current framework and runtime.`,
    };
  }
  if (entry) {
    return {
      kind: "unvalidated",
      label: "Not validated",
      sentence: `Built for game build ${buildLabel(matrix, buildId)}, which has not been validated with the current framework and runtime.`,
    };
  }
  return {
    kind: "unknown",
    label: "Unknown build",
    sentence: `Built for game build ${buildId}, which is not in the compatibility matrix.`,
  };
}
