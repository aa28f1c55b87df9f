import { reportStep } from "../../src/pipeline/report-step.ts";
import { runStep } from "../run-step.ts";

runStep(reportStep);
