import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { join } from "node:path";
import busboy from "busboy";
import type { RandomBytes } from "../../accounts/secrets.ts";
import {
  findPublishedRelease,
  hideRelease,
  type PublisherOptions,
  publishRelease,
  unhideRelease,
} from "../../catalog/publisher.ts";
import { SvcError } from "../../errors.ts";
import {
  applySubmissionAction,
  assertNoOpenSubmission,
  completePublication,
  createSubmission,
  type Decision,
  findResubmittable,
  listOwnedSubmissions,
  listSubmissions,
  loadSubmission,
  medianWaitSeconds,
  type NewSubmission,
  newSubmissionId,
  QUEUE_STATES,
  queueInfo,
  resubmitSubmission,
  type SubmissionDeps,
  type SubmissionRow,
  submissionView,
} from "../../submissions/service.ts";
import { type GitHubLink, linkPullRequest, syncFromPullRequest } from "../../pipeline/github-submissions.ts";
import { removeStaged, type StagedPackage, stagePackage } from "../../submissions/staging.ts";
import { appendAuditEvent } from "../../accounts/audit.ts";
import { DEFAULT_JSON_LIMITS, parseUntrustedJson } from "../../lib/untrusted-json.ts";
import { validateSidecar } from "../../validation/documents.ts";
import type { Sidecar } from "../../validation/types.ts";
import { type SubmissionState, transition } from "../../workflow/machine.ts";
import type { AppContext, Handler } from "../context.ts";
import { storeOf } from "../context.ts";
import { type Caller, guardRequest } from "../guard.ts";
import { readJsonBody, readLimited, readQuery } from "../body.ts";
import { sendJson } from "../respond.ts";

/** What the submission routes need beyond the accounts layer; set up by `svc serve`. */
export interface SubmissionsRuntime {
  /** Private storage root: staged packages live under uploads/staging/ below it, never under site/. */
  storageRoot: string;
  /** null on Vercel: publication runs in the publish workflow, never in a function. */
  publisher: PublisherOptions | null;
  random: RandomBytes;
  /** Wakes the mod-validation worker after an upload (it also polls). */
  kickWorker: () => void;
  /** GitHub-backed submissions: uploads open pull requests and the pull request holds the state. */
  github: GitHubLink | null;
  /** False on Vercel: package bytes never pass through a function capped at 4.5 MB; send a URL. */
  acceptsPackageBytes: boolean;
}

declare module "../context.ts" {
  interface AppContext {
    submissions?: SubmissionsRuntime;
  }
}

export const ACCEPTED_PACKAGE_TYPES = ["application/zip", "application/x-zip-compressed"];
const METADATA_MAX_BYTES = 256 * 1024;
/** Multipart framing and the metadata part on top of the package itself. */
const MULTIPART_OVERHEAD = METADATA_MAX_BYTES + 64 * 1024;

function runtimeOf(app: AppContext): SubmissionsRuntime {
  if (!app.submissions)
    throw new SvcError(
      "not_implemented",
      "submissions are not served by this deployment: on Vercel they need GitHub-backed submissions (SVC_PORTAL_REPOSITORY with the GitHub App's id and key)",
    );
  return app.submissions;
}

function publisherOf(app: AppContext): PublisherOptions {
  const publisher = runtimeOf(app).publisher;
  if (!publisher)
    throw new SvcError(
      "not_implemented",
      "this deployment does not publish by itself: merged submission pull requests are published by the publish workflow",
    );
  return publisher;
}

function depsOf(app: AppContext): SubmissionDeps {
  return { store: storeOf(app), config: app.config, now: app.now, random: runtimeOf(app).random };
}

const isStaff = (caller: Caller) => caller.roles.includes("moderator") || caller.roles.includes("admin");
/** The owner, moderators and admins see a submission; to anyone else it does not exist. */
const canSee = (caller: Caller) => (row: SubmissionRow) =>
  row.owner_account_id === caller.account.id || isStaff(caller);

function parseMetadata(raw: Buffer): Sidecar {
  const parsed = parseUntrustedJson(raw, { ...DEFAULT_JSON_LIMITS, maxBytes: METADATA_MAX_BYTES });
  if (!parsed.ok) throw new SvcError("invalid_payload", `metadata is not acceptable JSON: ${parsed.message}`);
  const result = validateSidecar(parsed.value);
  if (!result.ok) {
    throw new SvcError("invalid_payload", "metadata does not match svc.mod-release-submission.v1", {
      details: { issues: result.issues.slice(0, 20).map((i) => `${i.path} ${i.message}`) },
    });
  }
  return result.value;
}

interface ParsedUpload {
  sidecar: Sidecar;
  metadataSha256: string;
  contentType: string;
  staged: StagedPackage;
  submissionId: string;
}

/**
 * Reads the multipart body: the metadata part first (validated before any package byte is
 * stored), then the package, streamed into private staging under the contract's cap. Anything
 * else (a third part, a second file, the package first, a wrong type) is refused and nothing stays.
 */
function readUpload(
  req: IncomingMessage,
  app: AppContext,
  chooseTarget: (sidecar: Sidecar) => Promise<string>,
): Promise<ParsedUpload> {
  const runtime = runtimeOf(app);
  const max = app.config.limits.maxPackageBytes;
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: req.headers,
        // One above what is allowed: busboy stops at a limit silently, so the third part must still arrive to be refused.
        limits: {
          files: 3,
          fields: 3,
          parts: 3,
          fileSize: max + 1,
          fieldSize: METADATA_MAX_BYTES + 1,
          headerPairs: 16,
        },
      });
    } catch (error) {
      reject(new SvcError("unsupported_media_type", `send multipart/form-data: ${(error as Error).message}`));
      return;
    }
    let sidecar: Sidecar | null = null;
    /** Set as soon as a metadata part starts; resolves once it was read and validated. */
    let metadata: Promise<Sidecar> | null = null;
    let metadataSha256 = "";
    let staging: Promise<ParsedUpload> | null = null;
    let failed = false;
    let stagedDone: ParsedUpload | null = null;
    let packageStream: (NodeJS.ReadableStream & { destroy(): void }) | null = null;
    const fail = (error: unknown) => {
      if (failed) return;
      failed = true;
      // A failure after the package was fully read (a stray part after it) drops its bytes; one
      // while it is still streaming ends that stream, and staging removes its partial file.
      stagedDone?.staged.abort();
      // Destroyed without an error: staging sees "close" before "end" and refuses; no "error" event
      // can reach a stream that has no listener yet.
      packageStream?.destroy();
      req.unpipe(parser);
      req.resume();
      reject(error);
    };
    const acceptMetadata = (raw: Buffer): Sidecar => {
      if (sidecar) throw new SvcError("invalid_request", "send exactly one metadata part");
      sidecar = parseMetadata(raw);
      metadataSha256 = createHash("sha256").update(raw).digest("hex");
      return sidecar;
    };
    const tooLarge = () =>
      new SvcError("payload_too_large", `metadata is limited to ${METADATA_MAX_BYTES} bytes`);
    let parts = 0;
    const tooManyParts = (): boolean => {
      parts += 1;
      if (parts <= 2) return false;
      fail(new SvcError("invalid_request", "send exactly two parts: metadata and package"));
      return true;
    };
    parser.on("field", (name, value, info) => {
      if (tooManyParts()) return;
      if (name !== "metadata") {
        fail(new SvcError("invalid_request", `unexpected part '${name}': send only metadata and package`));
        return;
      }
      metadata = info.valueTruncated
        ? Promise.reject(tooLarge())
        : new Promise((ok) => ok(acceptMetadata(Buffer.from(value, "utf8"))));
      metadata.catch(fail);
    });
    parser.on("file", (name, stream, info) => {
      if (tooManyParts() || failed) {
        stream.resume();
        return;
      }
      if (name === "metadata") {
        metadata = new Promise<Sidecar>((ok, no) => {
          const chunks: Buffer[] = [];
          let size = 0;
          stream.on("data", (chunk: Buffer) => {
            size += chunk.length;
            if (size <= METADATA_MAX_BYTES) chunks.push(chunk);
          });
          stream.on("error", no);
          stream.on("end", () => {
            try {
              if (size > METADATA_MAX_BYTES) throw tooLarge();
              ok(acceptMetadata(Buffer.concat(chunks)));
            } catch (error) {
              no(error);
            }
          });
        });
        metadata.catch(fail);
        return;
      }
      if (name !== "package") {
        stream.resume();
        fail(new SvcError("invalid_request", `unexpected part '${name}': send only metadata and package`));
        return;
      }
      if (!metadata) {
        stream.resume();
        fail(
          new SvcError("invalid_request", "send the metadata part before the package part", {
            details: { order: ["metadata", "package"] },
          }),
        );
        return;
      }
      const mime = info.mimeType.toLowerCase();
      if (!ACCEPTED_PACKAGE_TYPES.includes(mime)) {
        stream.resume();
        fail(
          new SvcError(
            "unsupported_media_type",
            `the package part must be ${ACCEPTED_PACKAGE_TYPES.join(" or ")}`,
            { details: { contentType: mime } },
          ),
        );
        return;
      }
      packageStream = stream;
      // busboy reports a broken body on the parser too; this keeps it from surfacing twice as an uncaught error.
      stream.on("error", () => {});
      const pending: Promise<Sidecar> = metadata;
      staging = pending.then(async (meta) => {
        const submissionId = await chooseTarget(meta);
        const staged = await stagePackage(stream, {
          root: runtime.storageRoot,
          submissionId,
          fileName: meta.package.fileName,
          maxBytes: max,
          isTruncated: () => stream.truncated === true,
        });
        return { sidecar: meta, metadataSha256, contentType: mime, staged, submissionId };
      });
      staging.catch((error) => {
        stream.resume();
        fail(error);
      });
      staging.then(
        (done) => {
          stagedDone = done;
          if (failed) done.staged.abort();
        },
        () => {},
      );
    });
    for (const limit of ["partsLimit", "filesLimit", "fieldsLimit"] as const) {
      parser.on(limit, () =>
        fail(new SvcError("invalid_request", "send exactly two parts: metadata and package")),
      );
    }
    parser.on("error", (error) =>
      fail(new SvcError("invalid_request", `malformed multipart body: ${(error as Error).message}`)),
    );
    parser.on("close", () => {
      if (failed) return;
      if (!staging) {
        fail(
          new SvcError(
            "invalid_payload",
            metadata ? "the package part is missing" : "the metadata and package parts are missing",
            { details: { requiredParts: ["metadata", "package"] } },
          ),
        );
        return;
      }
      staging.then((done) => {
        if (!failed) resolve(done);
      }, fail);
    });
    req.on("aborted", () => fail(new SvcError("invalid_request", "the upload was aborted")));
    req.pipe(parser);
  });
}

/** create_upload: the live-upload gate, then auth/role/CSRF/rate limit, then the body. */
export const createUpload: Handler = async (req, res, route, app) => {
  if (!app.settings.liveUploads) {
    res.setHeader("connection", "close");
    throw new SvcError(
      "uploads_disabled",
      "uploads are disabled: the backend runs without SVC_LIVE_UPLOADS=1",
      {
        details: { env: "SVC_LIVE_UPLOADS", requiredValue: "1" },
      },
    );
  }
  const { caller } = await guardRequest(req, res, route, app);
  const runtime = runtimeOf(app);
  const contentType = String(req.headers["content-type"] ?? "");
  if (/^application\/json\s*(;|$)/i.test(contentType)) {
    if (!runtime.github) {
      res.setHeader("connection", "close");
      throw new SvcError(
        "unsupported_media_type",
        "this portal takes the package itself: send multipart/form-data with the parts metadata and package (a package named by URL needs GitHub-backed submissions)",
      );
    }
    await createUploadByUrl(req, res, app, caller!);
    return;
  }
  if (!/^multipart\/form-data\s*;/i.test(contentType)) {
    res.setHeader("connection", "close");
    throw new SvcError(
      "unsupported_media_type",
      "send multipart/form-data with the parts metadata and package",
    );
  }
  if (!runtime.acceptsPackageBytes) {
    res.setHeader("connection", "close");
    throw new SvcError(
      "unsupported_media_type",
      "this deployment takes no package bytes (request bodies stop at 4.5 MB): attach the ZIP to a release and send the sidecar as application/json with package.url, sha256 and sizeBytes",
      { details: { accepted: ["application/json"] } },
    );
  }
  const declared = Number(req.headers["content-length"] ?? "0");
  if (Number.isFinite(declared) && declared > app.config.limits.maxPackageBytes + MULTIPART_OVERHEAD) {
    res.setHeader("connection", "close");
    throw new SvcError(
      "payload_too_large",
      `the package is limited to ${app.config.limits.maxPackageBytes} bytes`,
      {
        details: { maxPackageBytes: app.config.limits.maxPackageBytes },
      },
    );
  }
  const deps = depsOf(app);
  const owner = caller!.account.id;
  let resubmitting: SubmissionRow | null = null;
  let upload: ParsedUpload | null = null;
  try {
    upload = await readUpload(req, app, async (sidecar) => {
      resubmitting = await findResubmittable(deps.store, owner, sidecar.modId, sidecar.version);
      return resubmitting?.id ?? newSubmissionId(runtime.random);
    });
    // The whole body was read and accepted: only now do the bytes take their staging path.
    upload.staged.commit();
    const row = await recordUpload(app, {
      id: upload.submissionId,
      resubmitting,
      input: {
        ownerAccountId: owner,
        sidecar: upload.sidecar,
        metadataSha256: upload.metadataSha256,
        contentType: upload.contentType,
        staged: upload.staged,
      },
    });
    runtime.kickWorker();
    const view = await submissionView(deps.store, row, app.config, app.now());
    sendJson(res, resubmitting ? 200 : 201, view, { location: `/api/v1/uploads/${row.id}` });
  } catch (error) {
    // Nothing half-stored: a refused first upload leaves no staging folder.
    if (upload && !resubmitting) removeStaged(runtime.storageRoot, upload.submissionId);
    res.setHeader("connection", "close");
    throw error;
  }
};

/**
 * Records an accepted upload. On a GitHub-backed portal the pull request comes first (a staged
 * package goes to the portal's private draft release); the row is written only once GitHub holds
 * the submission, and a row that cannot be written closes the pull request again.
 */
async function recordUpload(
  app: AppContext,
  upload: { id: string; resubmitting: SubmissionRow | null; input: Omit<NewSubmission, "id"> },
): Promise<SubmissionRow> {
  const deps = depsOf(app);
  const github = runtimeOf(app).github;
  const { resubmitting, input } = upload;
  if (!github) {
    return resubmitting
      ? resubmitSubmission(deps, resubmitting.id, input)
      : createSubmission(deps, { id: upload.id, ...input });
  }
  if (!resubmitting) await assertNoOpenSubmission(deps.store, input.sidecar, input.ownerAccountId);
  else if (!transition(resubmitting.state, "resubmit", "modder").ok)
    throw new SvcError("illegal_transition", `a ${resubmitting.state} submission cannot be resubmitted`, {
      details: { from: resubmitting.state, action: "resubmit" },
    });
  const pr = await github.submit({
    submissionId: upload.id,
    ownerAccountId: input.ownerAccountId,
    sidecar: input.sidecar,
    stagedFile: input.staged.path === null ? null : join(runtimeOf(app).storageRoot, input.staged.path),
    existing: resubmitting?.github_pull_request ? { number: resubmitting.github_pull_request } : null,
  });
  let row: SubmissionRow;
  try {
    row = resubmitting
      ? await resubmitSubmission(deps, resubmitting.id, input)
      : await createSubmission(deps, { id: upload.id, ...input });
  } catch (error) {
    if (!resubmitting) await github.close(pr.number).catch(() => {});
    throw error;
  }
  row = await linkPullRequest(deps, row.id, pr);
  // A package named by URL is validated on the pull request: the row follows its state from now on.
  return input.staged.path === null ? syncFromPullRequest(deps, github, row) : row;
}

/**
 * create_upload with a JSON body (GitHub-backed portals): the sidecar names the package by its
 * immutable https URL with sha256 and sizeBytes. No package byte passes through the API (on Vercel
 * bodies stop at 4.5 MB); the validate-submission workflow downloads and checks it on the pull request.
 */
async function createUploadByUrl(
  req: IncomingMessage,
  res: ServerResponse,
  app: AppContext,
  caller: Caller,
): Promise<void> {
  const raw = await readLimited(req, res, METADATA_MAX_BYTES);
  const sidecar = parseMetadata(raw);
  if (!sidecar.package.url)
    throw new SvcError(
      "invalid_payload",
      "package.url is required when the package is not sent: the immutable https URL of the release asset",
      { details: { field: "package.url" } },
    );
  const deps = depsOf(app);
  const owner = caller.account.id;
  const resubmitting = await findResubmittable(deps.store, owner, sidecar.modId, sidecar.version);
  const row = await recordUpload(app, {
    id: resubmitting?.id ?? newSubmissionId(runtimeOf(app).random),
    resubmitting,
    input: {
      ownerAccountId: owner,
      sidecar,
      metadataSha256: createHash("sha256").update(raw).digest("hex"),
      contentType: "application/zip",
      staged: { path: null, sha256: sidecar.package.sha256, sizeBytes: sidecar.package.sizeBytes },
    },
  });
  const view = await submissionView(deps.store, row, app.config, app.now());
  sendJson(res, resubmitting ? 200 : 201, view, { location: `/api/v1/uploads/${row.id}` });
}

/** On a GitHub-backed portal the pull request holds the state: the row is brought in line first. */
async function current(app: AppContext, row: SubmissionRow): Promise<SubmissionRow> {
  const github = app.submissions?.github;
  return github && row.github_pull_request !== null ? syncFromPullRequest(depsOf(app), github, row) : row;
}

export const uploadStatus: Handler = async (req, res, route, app) => {
  const { caller } = await guardRequest(req, res, route, app);
  const store = storeOf(app);
  const row = await loadSubmission(store, route.params.submissionId ?? "");
  if (!row || !canSee(caller!)(row))
    throw new SvcError("not_found", `no submission ${route.params.submissionId}`);
  sendJson(res, 200, await submissionView(store, await current(app, row), app.config, app.now()));
};

export const cancelUpload: Handler = async (req, res, route, app) => {
  const { caller } = await guardRequest(req, res, route, app);
  const isAdmin = caller!.roles.includes("admin");
  const visibleTo = (r: SubmissionRow) => r.owner_account_id === caller!.account.id || isAdmin;
  const existing = await loadSubmission(storeOf(app), route.params.submissionId ?? "");
  const github = runtimeOf(app).github;
  if (existing && visibleTo(existing) && github && existing.github_pull_request !== null) {
    // The pull request is closed first (the bot moves it to cancelled); the row then follows.
    const synced = await current(app, existing);
    const step = transition(synced.state, "cancel", "modder");
    if (!step.ok)
      throw new SvcError("illegal_transition", step.message, {
        details: { from: synced.state, action: "cancel" },
      });
    await github.close(existing.github_pull_request);
  }
  const row = await applySubmissionAction(
    depsOf(app),
    route.params.submissionId ?? "",
    "cancel",
    { accountId: caller!.account.id, kind: "modder" },
    { visibleTo },
  );
  removeStaged(runtimeOf(app).storageRoot, row.id);
  sendJson(res, 200, await submissionView(storeOf(app), row, app.config, app.now()));
};

/** States the bot can still move on GitHub; a list brings only these in line with their pull requests. */
const SETTLED_STATES: SubmissionState[] = ["cancelled", "rejected", "superseded"];

/**
 * list_uploads: ?limit=1..100 (default 50)&cursor=...&all=1; the caller's own submissions in every
 * state, newest first (by creation, so a page boundary holds while rows change state). all=1 lists
 * every account's, for moderators and admins only: they may open any submission already.
 */
export const listUploads: Handler = async (req, res, route, app) => {
  const { caller } = await guardRequest(req, res, route, app);
  const query = readQuery(route.url, ["limit", "cursor", "all"]);
  const limit = Number(query.limit ?? "50");
  if (!/^\d{1,3}$/.test(query.limit ?? "50") || limit < 1 || limit > 100)
    throw new SvcError("invalid_request", "limit must be an integer from 1 to 100", {
      details: { parameter: "limit", max: 100 },
    });
  if (query.all !== undefined && query.all !== "1")
    throw new SvcError("invalid_request", "all takes the value 1", { details: { parameter: "all" } });
  if (query.all === "1" && !isStaff(caller!))
    throw new SvcError("forbidden", "listing every account's submissions needs the moderator or admin role", {
      details: { parameter: "all", requiredRoles: ["moderator", "admin"] },
    });
  let before: { createdAt: string; id: string } | undefined;
  if (query.cursor) {
    const [createdAt, id] = Buffer.from(query.cursor, "base64url").toString("utf8").split("|");
    if (!createdAt || !id || Number.isNaN(Date.parse(createdAt)))
      throw new SvcError("invalid_request", "cursor is not valid", { details: { parameter: "cursor" } });
    before = { createdAt, id };
  }
  const store = storeOf(app);
  const rows = await listOwnedSubmissions(store, {
    owner: query.all === "1" ? null : caller!.account.id,
    limit: limit + 1,
    ...(before ? { before } : {}),
  });
  const page = rows.slice(0, limit);
  const now = app.now();
  const items = [];
  for (const listed of page) {
    // GitHub-backed: the rows the portal keeps, each open one first brought in line with its pull
    // request (as upload_status does), so the list never shows a state the pull request has left.
    const row = SETTLED_STATES.includes(listed.state) ? listed : await current(app, listed);
    items.push({
      submissionId: row.id,
      ownerAccountId: row.owner_account_id,
      modId: row.mod_id,
      version: row.version,
      state: row.state,
      revision: row.revision,
      package: {
        fileName: row.package_file_name,
        sizeBytes: Number(row.package_size_bytes),
        sha256: row.package_sha256,
      },
      queuePosition: row.state === "pending_review" ? (await queueInfo(store, row, now)).queuePosition : null,
      failedChecks: row.validation_checks
        .filter((c) => c.status === "failed")
        .map((c) => ({ id: c.id, reasonCode: c.reasonCode })),
      pullRequestUrl: row.github_pull_request_url,
      packageUrl: row.publication?.packageUrl ?? null,
      createdAt: new Date(row.created_at).toISOString(),
      updatedAt: new Date(row.updated_at).toISOString(),
      statusUrl: `/api/v1/uploads/${row.id}`,
    });
  }
  const last = page.at(-1);
  sendJson(res, 200, {
    items,
    nextCursor:
      rows.length > limit && last
        ? Buffer.from(`${new Date(last.created_at).toISOString()}|${last.id}`).toString("base64url")
        : null,
    medianWaitSeconds: await medianWaitSeconds(store, now),
  });
};

const DEFAULT_QUEUE: SubmissionState[] = [
  "pending_review",
  "validation_failed",
  "approved",
  "hidden",
  "superseded",
];

/** moderation_queue: ?state=a,b&limit=50&cursor=...; oldest first, with positions and ages. */
export const moderationQueue: Handler = async (req, res, route, app) => {
  await guardRequest(req, res, route, app);
  const params = route.url.searchParams;
  const states = (params.get("state")?.split(",").filter(Boolean) ?? DEFAULT_QUEUE) as SubmissionState[];
  const unknown = states.filter((s) => !QUEUE_STATES.includes(s));
  if (unknown.length > 0)
    throw new SvcError("invalid_request", `unknown state(s): ${unknown.join(", ")}`, {
      details: { allowed: QUEUE_STATES },
    });
  const limit = Number(params.get("limit") ?? "50");
  if (!Number.isInteger(limit) || limit < 1 || limit > 100)
    throw new SvcError("invalid_request", "limit must be 1-100");
  let after: { createdAt: string; id: string } | undefined;
  const cursor = params.get("cursor");
  if (cursor) {
    const [createdAt, id] = Buffer.from(cursor, "base64url").toString("utf8").split("|");
    if (!createdAt || !id || Number.isNaN(Date.parse(createdAt)))
      throw new SvcError("invalid_request", "cursor is not valid");
    after = { createdAt, id };
  }
  const store = storeOf(app);
  const github = app.submissions?.github;
  if (github) {
    // Reviews and /svc commands on GitHub move submissions too: bring the open ones in line first.
    const open = await store.query<SubmissionRow>(
      `SELECT * FROM submissions WHERE github_pull_request IS NOT NULL
         AND state NOT IN ('cancelled', 'rejected', 'superseded') ORDER BY updated_at DESC LIMIT 200`,
    );
    for (const row of open.rows) await syncFromPullRequest(depsOf(app), github, row);
  }
  const rows = await listSubmissions(store, { states, limit: limit + 1, ...(after ? { after } : {}) });
  const page = rows.slice(0, limit);
  const now = app.now();
  const items = [];
  for (const row of page) {
    const view = await submissionView(store, row, app.config, now);
    items.push({
      submissionId: view.submissionId,
      modId: view.modId,
      version: view.version,
      state: view.state,
      ownerAccountId: view.ownerAccountId,
      packageSha256: view.packageSha256,
      queuePosition: view.review.queuePosition,
      ageSeconds: Math.max(0, Math.round((now.getTime() - new Date(view.createdAt).getTime()) / 1000)),
      failedChecks: view.validationChecks
        .filter((c) => c.status === "failed")
        .map((c) => ({ id: c.id, reasonCode: c.reasonCode })),
      createdAt: view.createdAt,
      updatedAt: view.updatedAt,
      statusUrl: `/api/v1/uploads/${view.submissionId}`,
    });
  }
  const last = page.at(-1);
  sendJson(res, 200, {
    items,
    nextCursor:
      rows.length > limit && last
        ? Buffer.from(`${new Date(last.created_at).toISOString()}|${last.id}`).toString("base64url")
        : null,
    medianWaitSeconds: await medianWaitSeconds(store, now),
  });
};

/** moderation_decision: { decision, notes }; hide and unhide also change the public catalog. */
export const moderationDecision: Handler = async (req, res, route, app) => {
  const { caller } = await guardRequest(req, res, route, app);
  const body = await readJsonBody<{ decision: Decision; notes: string }>(req, res, {
    decision: {
      type: "string",
      required: true,
      maxLength: 32,
      oneOf: ["approve", "reject", "request_changes", "hide", "unhide"],
    },
    notes: { type: "string", required: true, minLength: 1, maxLength: 10_000, singleLine: false },
  });
  const deps = depsOf(app);
  const id = route.params.submissionId ?? "";
  const found = await loadSubmission(deps.store, id);
  if (!found) throw new SvcError("not_found", `no submission ${id}`);
  if (found.owner_account_id === caller!.account.id)
    throw new SvcError("forbidden", "a moderator cannot decide on their own submission");
  const existing = await current(app, found);
  const github = runtimeOf(app).github;
  if (github && existing.github_pull_request !== null) {
    // The pull request is the truth: the bot records the decision there (status comment, label, and
    // for hide/unhide a dispatch of the publish workflow, which changes the catalog); the row follows.
    await github.decide(existing.github_pull_request, body.decision, caller!.account.id, body.notes);
  } else if (body.decision === "hide" || body.decision === "unhide") {
    // The public catalog changes first (one atomic file commit); the move below then records it.
    const publisher = publisherOf(app);
    if (body.decision === "hide" && (existing.state === "published" || existing.state === "superseded")) {
      await hideRelease(publisher, existing.mod_id, existing.version);
    } else if (body.decision === "unhide" && existing.state === "hidden") {
      await unhideRelease(publisher, existing.mod_id, existing.version);
    }
  }
  const row = await applySubmissionAction(
    deps,
    id,
    body.decision,
    { accountId: caller!.account.id, kind: "moderator" },
    { notes: body.notes },
  );
  sendJson(res, 200, await submissionView(deps.store, row, app.config, app.now()));
};

/** publish_catalog: publishes every approved submission, oldest first, and reports each one. */
export const publishCatalog: Handler = async (req, res, route, app) => {
  const { caller } = await guardRequest(req, res, route, app);
  const deps = depsOf(app);
  const runtime = runtimeOf(app);
  if (runtime.github) {
    const open = await deps.store.query<SubmissionRow>(
      `SELECT * FROM submissions WHERE github_pull_request IS NOT NULL AND state = 'approved'`,
    );
    for (const row of open.rows) await current(app, row);
  }
  const approved = await listSubmissions(deps.store, { states: ["approved"], limit: 100 });
  const results = [];
  for (const row of approved) {
    if (runtime.github && row.github_pull_request !== null) {
      // Merging is publishing on GitHub: the publish workflow promotes the approved bytes, commits the
      // catalog, deploys Pages and posts the receipt; the row becomes published when the PR says so.
      try {
        const merged = await runtime.github.merge(row.github_pull_request);
        await deps.store.transaction((tx) =>
          appendAuditEvent(
            tx,
            {
              actorAccountId: caller!.account.id,
              action: "catalog.publish_requested",
              targetType: "submission",
              targetId: row.id,
              metadata: { pullRequest: row.github_pull_request, mergeCommit: merged.sha },
            },
            { now: app.now(), random: deps.random },
          ),
        );
        results.push({
          submissionId: row.id,
          modId: row.mod_id,
          version: row.version,
          outcome: "merged",
          pullRequestUrl: row.github_pull_request_url,
          mergeCommit: merged.sha,
        });
      } catch (error) {
        if (!(error instanceof SvcError)) throw error;
        results.push({
          submissionId: row.id,
          modId: row.mod_id,
          version: row.version,
          outcome: "failed",
          code: error.code,
          message: error.message,
        });
      }
      continue;
    }
    try {
      const publisher = publisherOf(app);
      const stagedFile = join(runtime.storageRoot, row.staging_path ?? "");
      // Publishing the same release again is a no-op success, so a retry after a crash between the
      // files and this row completes the submission. Bytes already gone (a crash after the row
      // moved) are fine when exactly this release is in the catalog.
      const inCatalog =
        row.staging_path && existsSync(stagedFile)
          ? null
          : findPublishedRelease(publisher, row.metadata, row.package_sha256);
      const published = inCatalog
        ? { record: inCatalog, alreadyPublished: true as const }
        : await publishRelease(publisher, {
            packageBytes: readFileSync(stagedFile),
            sidecar: row.metadata,
            source: { kind: "upload", submissionId: row.id },
          });
      const done = await completePublication(
        deps,
        row.id,
        published.record,
        caller!.account.id,
        published.alreadyPublished ? { reconciled: true } : {},
      );
      removeStaged(runtime.storageRoot, row.id);
      results.push({
        submissionId: row.id,
        modId: row.mod_id,
        version: row.version,
        outcome: "published",
        packageUrl: done.publication?.packageUrl ?? published.record.packageUrl,
        sha256: published.record.sha256,
        sizeBytes: published.record.packageSizeBytes,
        ...(published.alreadyPublished ? { alreadyPublished: true } : {}),
      });
    } catch (error) {
      const code = error instanceof SvcError ? error.code : "internal_error";
      const message = error instanceof SvcError ? error.message : "publication failed";
      if (!(error instanceof SvcError))
        app.log(
          `publish_catalog ${row.id}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
        );
      await deps.store.transaction((tx) =>
        appendAuditEvent(
          tx,
          {
            actorAccountId: caller!.account.id,
            action: "catalog.publish_failed",
            targetType: "submission",
            targetId: row.id,
            metadata: { code, message },
          },
          { now: app.now(), random: deps.random },
        ),
      );
      results.push({
        submissionId: row.id,
        modId: row.mod_id,
        version: row.version,
        outcome: "failed",
        code,
        message,
      });
    }
  }
  const published = results.filter((r) => r.outcome === "published").length;
  const merged = results.filter((r) => r.outcome === "merged").length;
  sendJson(res, 200, {
    published,
    ...(runtime.github ? { merged } : {}),
    failed: results.length - published - merged,
    results,
  });
};
