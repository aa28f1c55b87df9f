import { submitStep } from "../../src/pipeline/submit-step.ts";
import { runStep } from "../run-step.ts";

runStep(submitStep);
