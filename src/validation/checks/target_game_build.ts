import type { CheckContext, CheckOutcome } from "../types.ts";
import { blocked, failed, passed } from "./common.ts";

const ID = "target_game_build";

export function checkTargetGameBuild(ctx: CheckContext): CheckOutcome {
  const sidecar = ctx.sidecar.valid;
  if (!sidecar) return blocked(ID, "sidecar_schema", "targetGameBuild is read from a valid sidecar");
  const matrix = ctx.gameBuilds;
  if (!matrix || !Array.isArray(matrix.supportedGameBuilds)) {
    return failed(ID, "game_builds_unavailable", [
      "the game-build compatibility matrix (game-builds/latest.json) was not available",
    ]);
  }
  const build = sidecar.targetGameBuild;
  if (matrix.supportedGameBuilds.includes(build)) {
    return passed(ID, [`game build ${build} is supported by the pinned runtime/framework`]);
  }
  const known = matrix.builds?.find((b) => b.buildId === build);
  return failed(ID, "game_build_unsupported", [
    known
      ? `game build ${build} is known but its validation status is ${JSON.stringify(known.validationStatus ?? "unknown")}`
      : `game build ${build} is not in the compatibility matrix`,
    `supported game builds: ${matrix.supportedGameBuilds.join(", ") || "(none)"}`,
  ]);
}
