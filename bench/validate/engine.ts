/**
 * Child process of bench/validate/run.ts: times runValidation alone (modules already loaded, schemas
 * compiled on a warm-up package), so the report can separate the engine from CLI start-up.
 *   node --import tsx bench/validate/engine.ts PACKAGE METADATA SITE
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { runValidation } from "../../src/validation/runner.ts";

const [packagePath, metadataPath, site] = process.argv.slice(2) as [string, string, string];
const read = (p: string) => JSON.parse(readFileSync(join(site, p), "utf8"));
const input = {
  sidecar: JSON.parse(readFileSync(metadataPath, "utf8")),
  policy: read("api/v1/publishing/game-publishing-validation.v1.json"),
  catalog: read("api/v1/catalog.json"),
  gameBuilds: read("api/v1/game-builds/latest.json"),
  scanner: null,
  antivirusDisabled: true,
};
// Warm-up on an empty buffer compiles the schemas, as a long-running worker would have done.
await runValidation({ ...input, package: { bytes: Buffer.alloc(0) } });
const started = process.hrtime.bigint();
const cpuBefore = process.cpuUsage();
const report = await runValidation({ ...input, package: { path: packagePath } });
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
// CPU time beside wall time: on a shared machine the wall figure also measures the neighbours.
const cpu = process.cpuUsage(cpuBefore);
const cpuSeconds = (cpu.user + cpu.system) / 1e6;
process.stdout.write(
  `${JSON.stringify({ seconds, cpuSeconds, failed: report.checks.filter((c) => c.status !== "passed").map((c) => c.reasonCode), rss: process.resourceUsage().maxRSS })}\n`,
);
