import { sweepStep } from "../../src/pipeline/sweep-step.ts";
import { runStep } from "../run-step.ts";

runStep(sweepStep);
