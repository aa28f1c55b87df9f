import { publishStep } from "../../src/pipeline/publish-step.ts";
import { runStep } from "../run-step.ts";

runStep(publishStep);
