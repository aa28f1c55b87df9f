import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { SvcError } from "../errors.ts";
import { splitRepository } from "../github/api.ts";
import { octokitFor } from "../github/octokit.ts";
import { readRepositorySettings } from "../github/repository-settings.ts";
import {
  diagnose,
  type Finding,
  probeDeployment,
  PUBLISH_ENVIRONMENT,
  rulesetForApp,
} from "../pipeline/github-doctor.ts";
import { type CliIo, EXIT_FAILED, EXIT_OK, EXIT_USAGE } from "./io.ts";
import { openProject, PROJECT_OPTIONS } from "./project.ts";

const HELP = `usage: svc github doctor [--repo OWNER/REPO] [--root DIR] [--json] [--deployment-url URL | --no-deployment]
       svc github ruleset --app-id ID [--out FILE] [--root DIR]

  doctor   read the live portal repository's settings with your token and name every one that
           differs from what the portal needs: the default branch's ruleset (against
           .github/rulesets/default-branch.json: the svc / gate check pinned to the app, reviews,
           stale approvals dismissed, the app as the only bypass actor), classic protection, the
           app's permissions and events (app.yml), Pages (source GitHub Actions, its URL), the
           repository variables SVC_APP_ID and SVC_BOT_LOGINS, the ${PUBLISH_ENVIRONMENT} environment
           (default branch only, secret SVC_APP_PRIVATE_KEY), the Actions token and fork approval,
           release immutability, and the Vercel deployment answering (deployment.apiBaseUrl).
           Exit 1 when anything is an error.
  ruleset  write .github/rulesets/default-branch.json with the app's id filled in, the file to
           import (Settings -> Rules -> Rulesets -> New ruleset -> Import a ruleset).

Options: --repo (default: portal.repository of portal.config.json), --root (the portal's checkout),
--json (the findings as JSON), --deployment-url (probe this deployment instead of
deployment.apiBaseUrl, e.g. a preview), --no-deployment (skip the requests to the deployment).
Environment: GITHUB_TOKEN or GH_TOKEN (a token with admin read access to the repository:
\`gh auth token\`, or a fine-grained token with Administration, Secrets, Variables, Environments,
Pages and Actions: read), SVC_GITHUB_API_URL (default https://api.github.com).
`;

const RULESET_PATH = ".github/rulesets/default-branch.json";

export async function run(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      ...PROJECT_OPTIONS,
      repo: { type: "string" },
      json: { type: "boolean" },
      "no-deployment": { type: "boolean" },
      "deployment-url": { type: "string" },
      "app-id": { type: "string" },
      out: { type: "string" },
    },
    allowPositionals: true,
    strict: true,
  });
  const what = positionals[0];
  if (values.help || !what || positionals.length > 1 || (what !== "doctor" && what !== "ruleset")) {
    (values.help ? io.stdout : io.stderr).write(HELP);
    return values.help ? EXIT_OK : EXIT_USAGE;
  }
  const root = resolve(io.cwd, values.root ?? ".");
  const template = JSON.parse(readFileSync(join(root, RULESET_PATH), "utf8")) as unknown;
  if (what === "ruleset") {
    const appId = Number(values["app-id"]);
    if (!Number.isSafeInteger(appId) || appId < 1)
      throw new SvcError("usage_invalid", "--app-id must be the portal app's numeric id (vars.SVC_APP_ID)");
    const text = `${JSON.stringify(rulesetForApp(template, appId), null, 2)}\n`;
    if (values.out) writeFileSync(resolve(io.cwd, values.out), text);
    else io.stdout.write(text);
    return EXIT_OK;
  }
  const token = io.env.GITHUB_TOKEN || io.env.GH_TOKEN;
  if (!token)
    throw new SvcError(
      "config_invalid",
      "GITHUB_TOKEN (or GH_TOKEN) is not set: the doctor reads the repository's settings with your token (`GITHUB_TOKEN=$(gh auth token)`)",
    );
  const { config } = openProject(values, io);
  const repository = values.repo ?? config.portal.repository;
  const api = octokitFor(token, {
    baseUrl: io.env.SVC_GITHUB_API_URL || "https://api.github.com",
    log: { debug: () => {}, warn: (line) => io.stderr.write(`svc github doctor: ${line}\n`) },
  });
  const variables = await api
    .paginate("GET /repos/{owner}/{repo}/actions/variables", {
      ...splitRepository(repository),
      per_page: 30,
    })
    .catch(() => [] as Array<{ name: string; value: string }>);
  const logins =
    (variables as Array<{ name: string; value: string }>).find((v) => v.name === "SVC_BOT_LOGINS")?.value ??
    "";
  const appSlug =
    logins
      .split(",")
      .map((l) => /^\s*(.+)\[bot\]\s*$/.exec(l)?.[1])
      .find(Boolean) ?? null;
  const live = await readRepositorySettings(api, splitRepository(repository), {
    environment: PUBLISH_ENVIRONMENT,
    appSlug,
  });
  const deployment = values["no-deployment"]
    ? null
    : await probeDeployment(values["deployment-url"] ?? config.deployment.apiBaseUrl, (url, init) =>
        fetch(url, init),
      );
  const findings = diagnose({
    live,
    rulesetTemplate: template,
    pagesUrl: config.deployment.pagesUrl ?? null,
    deployment,
  });
  if (values.json) io.stdout.write(`${JSON.stringify({ repository, findings }, null, 2)}\n`);
  else io.stdout.write(report(repository, findings));
  return findings.some((f) => f.severity === "error") ? EXIT_FAILED : EXIT_OK;
}

function report(repository: string, findings: Finding[]): string {
  const errors = findings.filter((f) => f.severity === "error").length;
  const warnings = findings.length - errors;
  const lines = [`svc github doctor: ${repository}`];
  const width = Math.max(0, ...findings.map((f) => f.id.length));
  for (const f of findings)
    lines.push(`  ${f.severity.padEnd(7)}  ${f.id.padEnd(width)}  ${f.setting}: ${f.message}`);
  lines.push(
    findings.length === 0
      ? "every setting the portal needs is in place"
      : `${errors} error(s), ${warnings} warning(s); docs/github.md, "First deployment", says where each is set`,
  );
  return `${lines.join("\n")}\n`;
}
