import { syncStep } from "../../src/pipeline/sync-step.ts";
import { runStep } from "../run-step.ts";

runStep(syncStep);
