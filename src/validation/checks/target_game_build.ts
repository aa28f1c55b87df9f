import type { CheckContext, CheckOutcome, PackageCheck } from "../types.ts";
import { blocked, failuresOf, passed } from "./common.ts";

const ID = "target_game_build";

export const targetGameBuild = {
  id: ID,
  scope: "package",
  required: true,
  pack: null,
  description:
    "targetGameBuild is a supported build of the pinned runtime/framework build policy (game-build compatibility matrix).",
  reasons: {
    game_build_unsupported: {
      meaning: "targetGameBuild is not one of the supportedGameBuilds of the game-build matrix.",
      fix: "Build against, and declare, one of the supported game builds listed in the log.",
    },
  },
  run: checkTargetGameBuild,
} as const satisfies PackageCheck;

const { failed } = failuresOf(targetGameBuild);

export function checkTargetGameBuild(ctx: CheckContext): CheckOutcome {
  const sidecar = ctx.sidecar.valid;
  if (!sidecar) return blocked(ID, "sidecar_schema", "targetGameBuild is read from a valid sidecar");
  const matrix = ctx.gameBuilds;
  if (!matrix || !Array.isArray(matrix.supportedGameBuilds)) {
    return failed("game_builds_unavailable", [
      "the game-build compatibility matrix (game-builds/latest.json) was not available",
    ]);
  }
  const build = sidecar.targetGameBuild;
  if (matrix.supportedGameBuilds.includes(build)) {
    return passed(ID, [`game build ${build} is supported by the pinned runtime/framework`]);
  }
  const known = matrix.builds?.find((b) => b.buildId === build);
  return failed("game_build_unsupported", [
    known
      ? `game build ${build} is known but its validation status is ${JSON.stringify(known.validationStatus ?? "unknown")}`
      : `game build ${build} is not in the compatibility matrix`,
    `supported game builds: ${matrix.supportedGameBuilds.join(", ") || "(none)"}`,
  ]);
}
