import { validateStep } from "../../src/pipeline/validate-step.ts";
import { runStep } from "../run-step.ts";

runStep(validateStep);
