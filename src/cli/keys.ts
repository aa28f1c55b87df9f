import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { Metadata } from "@tufjs/models";
import { loadPortalConfig } from "../contracts/portal-config.ts";
import { DistributionError, isDistributionError } from "../distribution/errors.ts";
import { provenanceSubjects } from "../distribution/provenance.ts";
import {
  buildRoot,
  generateKey,
  generateKeySet,
  ONLINE_ROLES,
  onlineKeyBundle,
  type OnlineKeys,
  parseKeyFile,
  parseOnlineKeys,
  roleKeys,
  rotateRoot,
  signerFor,
  type TufKeyFile,
  type TufRole,
} from "../distribution/tuf-keys.ts";
import { mirrorLimits, openBounded } from "../distribution/mirror-transfer.ts";
import { TUF_DIR } from "../distribution/tuf-layout.ts";
import { signSite } from "../distribution/tuf-repository.ts";
import { loadLatestRoot, writeRoot } from "../distribution/tuf-root.ts";
import { type CliIo, EXIT_FAILED, EXIT_OK, EXIT_USAGE } from "./io.ts";
import { localKeysFile, onlineKeysFromEnv, projectOnlineKeys } from "./online-keys.ts";

const HELP = `usage: svc keys init --keys DIR [--records DIR] [--site DIR]
       svc keys rotate <root|targets|snapshot|timestamp> --keys DIR [--records DIR] [--site DIR]
       svc keys sign [--site DIR] [--if-due [--published true|false]]   (online keys from SVC_TUF_ONLINE_KEYS)
       svc keys subjects --receipts FILE --out FILE
       svc keys explain

init    creates ed25519 keys in DIR (outside any git repository): root.key.json (keep it offline)
        and online.keys.json (targets, snapshot, timestamp: the publish job's secret), and writes
        the first signed root to records/${TUF_DIR}/1.root.json (commit it: site/ is a build output
        that svc build copies the roots into) and to site/${TUF_DIR}/.
rotate  replaces one role's key and writes root N+1, signed by the old and the new root key, to
        records/${TUF_DIR}/ (commit it) and site/${TUF_DIR}/.
sign    signs the built site (targets, snapshot, timestamp); run after each publication and on a schedule.
        SVC_TUF_ONLINE_KEYS holds the online key bundle itself or the path of its file; signed with it,
        a copy is kept as .data/online.keys.json (SVC_DATA_DIR; mode 600) so the local portal signs
        every later publication by itself (without the variable, sign uses that copy).
        --if-due (the publish workflow): sign when --published true says this run changed the site, or
        when the live timestamp (baseUrl/tuf/timestamp.json) expires within 12 hours; without keys,
        report a site with no root unsigned and succeed, and refuse a signed one (signing_keys_missing,
        deploy=false). Writes deploy=true|false to GITHUB_OUTPUT when set.
subjects writes the sha256sum-format subjects of the artifacts a publish run stored (its receipts file),
        for actions/attest-build-provenance; writes count=N to GITHUB_OUTPUT when set.
explain prints the trust model.
`;

const EXPLAIN = `Trust model (docs/distribution.md has the full page):
  root       offline key; signs the list of trusted keys. Expires after 365 days. A new root must be
             signed by the old and the new root key, so clients follow rotations one version at a time.
  targets    online key; signs length + sha256 of every contract document and every artifact
             (GitHub Release assets too, as external/mods/...). Expires after 90 days. It lists the
             index documents itself and delegates the rest to 1,024 hash bins (bins-000..bins-3ff,
             signed with the same key): a publication re-signs only the bins its files fall in.
  snapshot   online key; pins the targets and every bin version (stops mix-and-match). Expires after 7 days.
  timestamp  online key; pins the snapshot version. Expires after 1 day: a mirror that freezes the
             catalog is noticed within a day. A scheduled \`svc keys sign\` keeps it fresh.
  A manager pins root.json once, then verifies every document and artifact against the signed
  metadata; versions only grow (rollback), expiry bounds staleness (freeze). TLS is not relied on.
  On GitHub the online keys are one Actions secret used only by the publish job: whoever can run
  that job can sign; the root key never goes to GitHub, so a stolen secret is fixed by a rotation.
`;

function insideGitRepository(dir: string): string | null {
  let current = resolve(dir);
  for (;;) {
    if (existsSync(join(current, ".git"))) return current;
    const parent = dirname(current);
    if (parent === current) return null;
    current = parent;
  }
}

function readKeyDir(dir: string): { root: TufKeyFile; online: OnlineKeys } {
  const rootFile = join(dir, "root.key.json");
  const onlineFile = join(dir, "online.keys.json");
  if (!existsSync(rootFile) || !existsSync(onlineFile)) {
    throw new DistributionError(
      "tuf_key_invalid",
      `${dir} holds no root.key.json/online.keys.json (svc keys init)`,
    );
  }
  return {
    root: parseKeyFile(JSON.parse(readFileSync(rootFile, "utf8")), rootFile),
    online: parseOnlineKeys(readFileSync(onlineFile, "utf8"), onlineFile),
  };
}

function writeSecret(file: string, value: unknown): void {
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
}

export { portalSigning, siteSigningFromEnv } from "./online-keys.ts";
export { localKeysFile, onlineKeysFromEnv, projectOnlineKeys };

export async function run(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    strict: true,
    options: {
      keys: { type: "string" },
      site: { type: "string" },
      records: { type: "string" },
      "if-due": { type: "boolean" },
      published: { type: "string" },
      receipts: { type: "string" },
      out: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  const [action, role] = positionals;
  if (values.help || !action) {
    io.stdout.write(HELP);
    return values.help ? EXIT_OK : EXIT_USAGE;
  }
  const siteDir = resolve(io.cwd, values.site ?? "site");
  const roots = { siteDir, recordsDir: resolve(io.cwd, values.records ?? "records") };
  try {
    switch (action) {
      case "explain":
        io.stdout.write(EXPLAIN);
        return EXIT_OK;
      case "init":
        return init(values.keys, roots, io);
      case "rotate":
        return rotate(role, values.keys, roots, io);
      case "sign":
        return values["if-due"]
          ? await signIfDue(siteDir, io, values.published === "true")
          : sign(siteDir, io);
      case "subjects": {
        if (!values.receipts || !values.out) {
          io.stderr.write(HELP);
          return EXIT_USAGE;
        }
        // No receipts file: the run published nothing, so there is nothing to attest.
        const receipts = resolve(io.cwd, values.receipts);
        const text = existsSync(receipts)
          ? provenanceSubjects(JSON.parse(readFileSync(receipts, "utf8")))
          : "";
        writeFileSync(resolve(io.cwd, values.out), text);
        const count = text.split("\n").filter(Boolean).length;
        writeGithubOutput(io, "count", String(count));
        io.stdout.write(`svc keys subjects: ${count} artifact(s) to attest\n`);
        return EXIT_OK;
      }
      default:
        io.stderr.write(`svc keys: unknown action '${action}'\n\n${HELP}`);
        return EXIT_USAGE;
    }
  } catch (error) {
    if (!isDistributionError(error)) throw error;
    io.stderr.write(`svc keys ${action}: ${error.code}: ${error.message}\n`);
    return EXIT_FAILED;
  }
}

function writeGithubOutput(io: CliIo, name: string, value: string): void {
  const file = io.env.GITHUB_OUTPUT;
  if (file) appendFileSync(file, `${name}=${value}\n`);
}

function sign(siteDir: string, io: CliIo, workflow?: { liveTimestampVersion: number | undefined }): number {
  const liveTimestampVersion = workflow?.liveTimestampVersion;
  const keys = projectOnlineKeys(io.env, io.cwd);
  if (!keys) {
    io.stderr.write(
      `svc keys sign: SVC_TUF_ONLINE_KEYS is not set (and there is no ${localKeysFile(io.env, io.cwd)}); the site stays unsigned\n`,
    );
    return EXIT_FAILED;
  }
  const result = signSite(
    siteDir,
    keys,
    () => new Date(),
    liveTimestampVersion ? { liveTimestampVersion } : {},
  );
  io.stdout.write(
    `svc keys sign: root v${result.rootVersion}, targets v${result.targetsVersion} (${result.targetCount} targets; ${result.binsSigned.length} of 1024 bins re-signed), snapshot v${result.snapshotVersion}, timestamp v${result.timestampVersion}\n`,
  );
  // Signed once by hand, signed ever after: the local portal signs each publication with this copy.
  // Not in a workflow (--if-due): the publish job's secret stays in its environment.
  if (!workflow && onlineKeysFromEnv(io.env, io.cwd)) keepLocalKeys(io, keys);
  return EXIT_OK;
}

function keepLocalKeys(io: CliIo, keys: OnlineKeys): void {
  const file = localKeysFile(io.env, io.cwd);
  if (existsSync(file) && readFileSync(file, "utf8") === `${JSON.stringify(keys, null, 2)}\n`) return;
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  writeSecret(file, keys);
  io.stdout.write(
    `  kept the online keys in ${file} (mode 600, outside git): this local portal signs every publication with them; delete the file to stop\n`,
  );
}

/** Hours before the live timestamp's expiry at which a scheduled run re-signs (runs come every 30 minutes). */
const RESIGN_WITHIN_HOURS = 12;

async function signIfDue(siteDir: string, io: CliIo, published: boolean): Promise<number> {
  if (!onlineKeysFromEnv(io.env, io.cwd)) {
    const root = loadLatestRoot(siteDir);
    if (root) {
      // Deploying would serve documents the signed metadata does not describe: every manager's
      // install would fail. The live site stays as it is until the secret is back.
      io.stderr.write(
        `svc keys sign: config_invalid: signing_keys_missing: ${siteDir}/${TUF_DIR} holds root v${root.version} but SVC_TUF_ONLINE_KEYS is not set (the publish job's secret); not deployed\n`,
      );
      writeGithubOutput(io, "deploy", "false");
      return EXIT_FAILED;
    }
    io.stdout.write("svc keys sign: unsigned (SVC_TUF_ONLINE_KEYS is not set)\n");
    writeGithubOutput(io, "deploy", String(published));
    return EXIT_OK;
  }
  const baseUrl = loadPortalConfig(resolve(io.cwd, "portal.config.json")).baseUrl.replace(/\/+$/, "");
  let live: { version: number; expires: string } | null = null;
  try {
    // The manager's limits: the live site is read like any mirror, never without a cap or timeout.
    const limits = mirrorLimits();
    const response = await openBounded(
      fetch,
      `${baseUrl}/${TUF_DIR}/timestamp.json`,
      { "cache-control": "no-cache" },
      limits,
    );
    if (response.ok) {
      const text = (await response.readAll(limits.timestampMaxBytes)).toString("utf8");
      live = (JSON.parse(text) as { signed: { version: number; expires: string } }).signed;
    } else await response.cancel();
  } catch {
    // Unreachable or unparseable live metadata: sign, the deployment repairs it.
  }
  const dueAt = Date.now() + RESIGN_WITHIN_HOURS * 3_600_000;
  const due = published || !live || new Date(live.expires).getTime() <= dueAt;
  if (!due) {
    io.stdout.write(`svc keys sign: not due (live timestamp v${live!.version} expires ${live!.expires})\n`);
    writeGithubOutput(io, "deploy", "false");
    return EXIT_OK;
  }
  const code = sign(siteDir, io, { liveTimestampVersion: live?.version });
  writeGithubOutput(io, "deploy", String(code === EXIT_OK));
  return code;
}

function requireKeyDir(keysDir: string | undefined, io: CliIo): string {
  if (!keysDir)
    throw new DistributionError(
      "tuf_key_invalid",
      "--keys DIR is required (a folder outside the repository)",
    );
  const dir = resolve(io.cwd, keysDir);
  const repo = insideGitRepository(dir);
  if (repo) {
    throw new DistributionError(
      "tuf_keys_in_repository",
      `${dir} is inside the git repository ${repo}; private keys must never be committed — choose a folder outside it`,
    );
  }
  return dir;
}

/** Where a root version is written: records/tuf (the source, in git) and site/tuf (the build output). */
interface RootDirs {
  siteDir: string;
  recordsDir: string;
}

function writeRoots(dirs: RootDirs, root: Parameters<typeof writeRoot>[1]): string[] {
  const written = writeRoot(dirs.recordsDir, root).map((p) => `records/${p}`);
  writeRoot(dirs.siteDir, root);
  return written;
}

function init(keysDir: string | undefined, dirs: RootDirs, io: CliIo): number {
  const dir = requireKeyDir(keysDir, io);
  if (existsSync(join(dir, "root.key.json"))) {
    throw new DistributionError("tuf_key_invalid", `${dir} already holds keys; use svc keys rotate`);
  }
  for (const existing of [dirs.recordsDir, dirs.siteDir])
    if (loadLatestRoot(existing))
      throw new DistributionError(
        "tuf_key_invalid",
        `${existing}/${TUF_DIR} already has a root; use svc keys rotate`,
      );
  const keys = generateKeySet();
  const root = new Metadata(buildRoot(1, keys, new Date()));
  root.sign(signerFor(keys.root));
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeSecret(join(dir, "root.key.json"), keys.root);
  writeSecret(join(dir, "online.keys.json"), onlineKeyBundle(keys));
  const written = writeRoots(dirs, root);
  io.stdout.write(
    `svc keys init: keys in ${dir} (root.key.json: move it offline; online.keys.json: the publish secret)\n` +
      written.map((p) => `  wrote ${p} (commit it; svc build copies it into site/${TUF_DIR}/)\n`).join(""),
  );
  return EXIT_OK;
}

function rotate(role: string | undefined, keysDir: string | undefined, dirs: RootDirs, io: CliIo): number {
  if (!role || !["root", ...ONLINE_ROLES].includes(role)) {
    io.stderr.write(`svc keys rotate: name a role (root, targets, snapshot, timestamp)\n`);
    return EXIT_USAGE;
  }
  const dir = requireKeyDir(keysDir, io);
  const { root: oldRootKey, online } = readKeyDir(dir);
  // A portal from before the roots moved to records/ still has them in site/ only.
  const latest = loadLatestRoot(dirs.recordsDir) ?? loadLatestRoot(dirs.siteDir);
  if (!latest)
    throw new DistributionError("tuf_not_initialized", `no root under ${dirs.recordsDir}/${TUF_DIR}`);
  if (!roleKeys(latest.metadata.signed, "root").some((k) => k.keyid === oldRootKey.keyid)) {
    throw new DistributionError(
      "tuf_key_mismatch",
      `root.key.json is not a root key of root v${latest.version}`,
    );
  }
  const next: Record<TufRole, TufKeyFile> = { root: oldRootKey, ...online.keys };
  next[role as TufRole] = generateKey(role as TufRole);
  const metadata = rotateRoot(latest.metadata, oldRootKey, next, next.root, new Date());
  const written = writeRoots(dirs, metadata);
  writeSecret(join(dir, "root.key.json"), next.root);
  writeSecret(join(dir, "online.keys.json"), onlineKeyBundle(next));
  io.stdout.write(
    `svc keys rotate: new ${role} key; root v${metadata.signed.version} signed by the old and new root keys\n` +
      written.map((p) => `  wrote ${p} (commit it)\n`).join("") +
      "  run `svc keys sign` with the new online keys, and update the publish secret\n",
  );
  return EXIT_OK;
}
