/**
 * A kept bench portal for profiling by hand: `node --import tsx bench/lib/make-portal.ts DIR MODS`
 * generates MODS x 5 versions (packages on GitHub Releases) in DIR/portal with the repository's
 * config, then signs it with `svc keys init` and `svc keys sign` (keys in DIR/keys, the online
 * keys file DIR/keys/online.keys.json for SVC_TUF_ONLINE_KEYS). Setup, not a measurement.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { ensureCliBundle, SVC } from "./cli-bundle.ts";
import { generatePortal } from "./generate-portal.ts";

const [dir, count] = process.argv.slice(2);
if (!dir || !count) throw new Error("usage: make-portal.ts DIR MODS");
const root = join(dir, "portal");
const keys = join(dir, "keys");
mkdirSync(root, { recursive: true });
await ensureCliBundle();
const started = performance.now();
generatePortal({ root, mods: Number(count), versions: 5, artifacts: "external", site: true });
console.log(`generated ${count} mods in ${((performance.now() - started) / 1000).toFixed(1)} s`);
const run = (args: string[], env: NodeJS.ProcessEnv = process.env) =>
  execFileSync(process.execPath, [SVC, ...args], { cwd: root, env, stdio: "inherit" });
run(["keys", "init", "--keys", keys, "--site", join(root, "site")]);
run(["keys", "sign", "--site", join(root, "site")], {
  ...process.env,
  SVC_TUF_ONLINE_KEYS: join(keys, "online.keys.json"),
});
console.log(`signed: ${root}`);
