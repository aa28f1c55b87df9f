#!/usr/bin/env node
// The published entry: the bundled CLI (dist/svc.js) when it matches the sources, else the
// TypeScript sources through tsx (bin/cli-entry.mjs says why).
import { loadCli } from "./cli-entry.mjs";

const { main } = await loadCli();
process.exitCode = await main(process.argv.slice(2));
