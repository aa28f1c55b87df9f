/**
 * Release intake against the state model: the portal repository (Codertocat/Hello-World, the
 * repository of the webhook examples) answers every read and every write the bot makes to open a
 * submission pull request, and mod repositories answer their workflow runs; releases are real
 * release.published payloads (@octokit/webhooks-examples) whose assets the fake serves. What one
 * intake wrote is what the next one reads, so two releases of one mod version meet each other.
 */
import { renderStoredStatus } from "../../src/bot/comments.ts";
import { GitHubRepository } from "./github-repository.ts";
import type { GitHubServer } from "./github-server.ts";
import { sidecar } from "./submission-fixtures.ts";
import { examplePayload, PORTAL } from "./webhook-payloads.ts";
import { testStatusKey } from "./bot-harness.ts";
import { ownersPath, ownersShardBytes } from "./records.ts";
import type { ModOwnership } from "../../src/contracts/ownership.ts";
import { writeZip } from "./zip.ts";

export interface ModRepository {
  fullName: string;
  id: number;
  ownerId: number;
  repository: GitHubRepository;
}

export class ReleaseWorld {
  readonly portal: GitHubRepository;
  private readonly mods = new Map<string, ModRepository>();
  private assets = 0;

  constructor(readonly github: GitHubServer) {
    this.portal = new GitHubRepository(github, PORTAL).serveReads().serveBotWrites().serveSubmissionWrites();
    this.portal.statusKey = testStatusKey();
    this.portal.branchFiles.set("portal.config.json", {
      moderators: { logins: ["moderator-mia", "moderator-max"], team: null },
    });
  }

  /** A public mod repository on GitHub (its id is what ownership records name). */
  modRepository(fullName: string, id: number, ownerId = id + 1000): ModRepository {
    const repository = new GitHubRepository(this.github, fullName, {
      repositoryId: id,
      ownerId,
    }).serveWorkflowRuns();
    const mod = { fullName, id, ownerId, repository };
    this.mods.set(fullName, mod);
    return mod;
  }

  /** The mod's entry of records/owners/{shard}.json on the portal's default branch, as the publisher writes it. */
  claim(
    modId: string,
    owners: string[],
    source: { fullName: string; id: number } | null,
    collaborators: string[] = [],
  ): void {
    const at = "2026-11-01T10:00:00.000Z";
    const ownership: ModOwnership = {
      schema: "svc.mod-ownership.v1",
      modId,
      owners: owners.map((github) => ({ github })),
      collaborators: collaborators.map((github) => ({ github })),
      sourceRepository: source,
      trustedPublishers: [],
      claimedAt: at,
      updatedAt: at,
      history: [
        { at, action: "claim", by: { github: owners[0]! }, ...(source ? { repository: source } : {}) },
      ],
    };
    const path = ownersPath(modId);
    const shard = this.portal.branchFiles.get(path) as { owners: ModOwnership[] } | undefined;
    const others = (shard?.owners ?? []).filter((o) => o.modId !== modId);
    this.portal.branchFiles.set(path, JSON.parse(ownersShardBytes([...others, ownership])));
  }

  /** The portal's intake rate-limit buckets (portal.config.json on the default branch). */
  limits(rateLimits: Record<string, { limit: number; windowSeconds: number }>): void {
    const config = this.portal.branchFiles.get("portal.config.json") as Record<string, unknown>;
    config.limits = { maxPackageBytes: 104857600, rateLimits };
  }

  /**
   * A release.published delivery from `mod`, published by `sender` (a person, or a bot account
   * when a workflow published it), with the ZIP and svc-release.json assets served by the fake.
   */
  release(
    mod: ModRepository,
    options: {
      sender?: { login: string; type: "User" | "Bot" };
      modId?: string;
      version?: string;
      tag?: string;
      publishedAt?: string;
    } = {},
  ): Record<string, any> {
    const modId = options.modId ?? "better-hud";
    const version = options.version ?? "1.2.0";
    const sender = options.sender ?? { login: mod.fullName.split("/")[0]!, type: "User" };
    const n = ++this.assets;
    const zip = writeZip([{ name: "svc-mod.json", data: `{"n":${n}}` }]);
    const { package: _omit, ...meta } = sidecar({ modId, version });
    const zipUrl = this.github.serveRaw(`/assets/${n}/${modId}-${version}.zip`, (_q, r) =>
      r.writeHead(200).end(zip),
    );
    const metaUrl = this.github.serveRaw(`/assets/${n}/svc-release.json`, (_q, r) =>
      r.writeHead(200).end(JSON.stringify(meta)),
    );
    const payload = examplePayload("release", "published");
    payload.repository.id = mod.id;
    payload.repository.full_name = mod.fullName;
    payload.repository.name = mod.fullName.split("/")[1];
    payload.repository.owner.login = mod.fullName.split("/")[0];
    payload.repository.owner.id = mod.ownerId;
    payload.repository.private = false;
    payload.sender.login = sender.login;
    payload.sender.type = sender.type;
    // The release's author is whoever created it: a workflow's release is github-actions[bot]'s.
    payload.release.author.login = sender.login;
    payload.release.author.type = sender.type;
    payload.release.tag_name = options.tag ?? `v${version}`;
    payload.release.html_url = `https://github.com/${mod.fullName}/releases/tag/${payload.release.tag_name}`;
    payload.release.published_at = options.publishedAt ?? "2026-11-21T10:00:00Z";
    payload.release.draft = false;
    const asset = structuredClone(payload.release.assets?.[0] ?? {});
    payload.release.assets = [
      {
        ...asset,
        id: n * 10,
        name: `${modId}-${version}.zip`,
        browser_download_url: zipUrl,
        size: zip.length,
      },
      { ...asset, id: n * 10 + 1, name: "svc-release.json", browser_download_url: metaUrl, size: 10 },
    ];
    return payload;
  }

  /** The portal's pull requests the app opened, oldest first. */
  intakePullRequests() {
    return [...this.portal.pulls.values()]
      .filter((pr) => pr.headRef.startsWith("svc/release/"))
      .sort((a, b) => a.number - b.number);
  }

  /** A status comment on `number` as the app writes it, sealed, with its state label. */
  status(number: number, state: Parameters<GitHubRepository["stored"]>[1], retryable = false): void {
    const pr = this.portal.pulls.get(number)!;
    pr.comments.push({
      id: this.portal.newId(),
      body: `${renderStoredStatus(this.portal.stored(number, state, pr.headSha, true, retryable))}\n### svc submission`,
      user: { login: this.portal.botLogin, type: "Bot" },
    });
    pr.labels = [`state:${state}`];
  }
}
