#!/usr/bin/env node
// The published entry: runs the TypeScript CLI through tsx so there is no separate compile step.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/cli/main.ts");
process.exitCode = await main(process.argv.slice(2));
