import type { IncomingMessage, ServerResponse } from "node:http";
import {
  claimUploadCredential,
  completeUploadCredential,
  releaseUploadCredential,
} from "../../accounts/upload-credentials.ts";
import { assertUploadsAllowed } from "../../accounts/upload-suspensions.ts";
import { SvcError } from "../../errors.ts";
import {
  decodeCursor,
  isStaff,
  type SubmissionBackend,
  type UploadTarget,
} from "../../submissions/backend.ts";
import type { SubmissionView } from "../../submissions/service.ts";
import type { Sidecar } from "../../validation/types.ts";
import { readQuery } from "../body.ts";
import { type AppContext, accountsOf, type Handler, storeOf } from "../context.ts";
import { type Caller, clientIpOf, guardRequest, requireCaller } from "../guard.ts";
import { sendJson } from "../respond.ts";
import { submissionReadsOf, submissionsOf } from "../submission-backend.ts";
import {
  MULTIPART_OVERHEAD,
  type MultipartUpload,
  readMultipartUpload,
  readUrlUpload,
} from "../upload-body.ts";

/** 201 for a new submission, 200 for a new revision of one, with where to follow it. */
function sendRecorded(res: ServerResponse, target: UploadTarget, view: SubmissionView): void {
  sendJson(res, target.resubmits ? 200 : 201, view, { location: `/api/v1/uploads/${view.submissionId}` });
}

/** Refused before the body is read: the rest of it is not drained, the connection closes. */
function refuseUnread(res: ServerResponse, error: SvcError): never {
  res.setHeader("connection", "close");
  throw error;
}

/** An upload credential uploads the one mod it was issued for. */
function assertCredentialMod(caller: Caller, sidecar: Sidecar): void {
  const credential = caller.uploadCredential;
  if (credential && sidecar.modId !== credential.modId)
    throw new SvcError(
      "forbidden",
      `this upload credential is for mod ${credential.modId}; it cannot upload ${sidecar.modId}`,
      { details: { credentialModId: credential.modId, modId: sidecar.modId } },
    );
}

/**
 * Records an upload; with an upload credential, the credential is taken first (two uploads never
 * share one), given back when the upload is refused, and tied to the submission once accepted.
 */
async function recordUpload(
  app: AppContext,
  caller: Caller,
  record: () => Promise<SubmissionView>,
): Promise<SubmissionView> {
  const credential = caller.uploadCredential;
  if (!credential) return record();
  const store = storeOf(app);
  if (!(await claimUploadCredential(store, credential.id, app.now())))
    throw new SvcError(
      "upload_credential_invalid",
      "this upload credential was used by another upload or expired meanwhile; exchange a new OIDC token",
    );
  let view: SubmissionView;
  try {
    view = await record();
  } catch (error) {
    await releaseUploadCredential(store, credential.id).catch((failure: Error) =>
      app.log(`upload credential ${credential.id} could not be given back: ${failure.message}`),
    );
    throw error;
  }
  const deps = { now: app.now(), random: accountsOf(app).dependencies.random };
  await store.transaction((tx) => completeUploadCredential(tx, credential, view.submissionId, deps));
  return view;
}

/**
 * A suspended account uploads nothing, whether it signs in or comes with an upload credential (the
 * credential's caller is its owner). Refused before the body is read, and audited as a refusal:
 * an upload attempt during a suspension is what the moderator who suspended wants to know about.
 */
async function refuseSuspended(
  req: IncomingMessage,
  res: ServerResponse,
  app: AppContext,
  endpointId: string,
  caller: Caller,
): Promise<void> {
  try {
    await assertUploadsAllowed(storeOf(app), caller.account.id);
  } catch (error) {
    if (!(error instanceof SvcError)) throw error;
    await accountsOf(app)
      .recordRefusal({
        code: error.code,
        status: error.status,
        method: req.method ?? "POST",
        endpointId,
        ip: clientIpOf(req, app),
        actorAccountId: caller.account.id,
        metadata: caller.uploadCredential ? { credentialId: caller.uploadCredential.id } : {},
      })
      .catch((failure: Error) => app.log(`refusal audit failed for ${endpointId}: ${failure.message}`));
    refuseUnread(res, error);
  }
}

/** create_upload: the live-upload gate, then auth/role/CSRF/rate limit, the suspension, then the body. */
export const createUpload: Handler = async (req, res, route, app) => {
  if (!app.settings.liveUploads) {
    refuseUnread(
      res,
      new SvcError("uploads_disabled", "uploads are disabled: the backend runs without SVC_LIVE_UPLOADS=1", {
        details: { env: "SVC_LIVE_UPLOADS", requiredValue: "1" },
      }),
    );
  }
  const caller = requireCaller(await guardRequest(req, res, route, app));
  await refuseSuspended(req, res, app, route.endpoint.id, caller);
  const backend = submissionsOf(app);
  const contentType = String(req.headers["content-type"] ?? "");
  if (/^application\/json\s*(;|$)/i.test(contentType)) {
    if (!backend.acceptsPackageUrl)
      refuseUnread(
        res,
        new SvcError(
          "unsupported_media_type",
          "this portal takes the package itself: send multipart/form-data with the parts metadata and package (a package named by URL needs GitHub-backed submissions)",
        ),
      );
    await createUploadByUrl(req, res, app, backend, caller);
    return;
  }
  if (!/^multipart\/form-data\s*;/i.test(contentType))
    refuseUnread(
      res,
      new SvcError("unsupported_media_type", "send multipart/form-data with the parts metadata and package"),
    );
  if (!backend.acceptsPackageBytes)
    refuseUnread(
      res,
      new SvcError(
        "unsupported_media_type",
        "this deployment takes no package bytes (request bodies stop at 4.5 MB): attach the ZIP to a release and send the sidecar as application/json with package.url, sha256 and sizeBytes",
        { details: { accepted: ["application/json"] } },
      ),
    );
  const maxPackageBytes = app.config.limits.maxPackageBytes;
  const declared = Number(req.headers["content-length"] ?? "0");
  if (Number.isFinite(declared) && declared > maxPackageBytes + MULTIPART_OVERHEAD)
    refuseUnread(
      res,
      new SvcError("payload_too_large", `the package is limited to ${maxPackageBytes} bytes`, {
        details: { maxPackageBytes },
      }),
    );
  let upload: MultipartUpload<UploadTarget> | null = null;
  try {
    upload = await readMultipartUpload(req, {
      maxPackageBytes,
      target: (sidecar) => {
        assertCredentialMod(caller, sidecar);
        return backend.uploadTarget(caller, sidecar);
      },
    });
    // The whole body was read and accepted: only now do the bytes take their staging path.
    upload.staged.commit();
    const accepted = upload;
    const view = await recordUpload(app, caller, () =>
      backend.createUpload(caller, accepted.target, {
        sidecar: accepted.sidecar,
        metadataSha256: accepted.metadataSha256,
        contentType: accepted.contentType,
        staged: accepted.staged,
      }),
    );
    sendRecorded(res, upload.target, view);
  } catch (error) {
    // Nothing half-stored: a refused first upload leaves no staging folder.
    if (upload) backend.discardUpload(upload.target);
    res.setHeader("connection", "close");
    throw error;
  }
};

/**
 * create_upload with a JSON body (GitHub-backed portals): the sidecar names the package by its
 * immutable https URL with sha256 and sizeBytes. No package byte passes through the API (on Vercel
 * bodies stop at 4.5 MB); the validate-submission workflow downloads and checks it on the pull request.
 */
async function createUploadByUrl(
  req: IncomingMessage,
  res: ServerResponse,
  app: AppContext,
  backend: SubmissionBackend,
  caller: Caller,
): Promise<void> {
  const { sidecar, metadataSha256 } = await readUrlUpload(req, res);
  assertCredentialMod(caller, sidecar);
  const target = await backend.uploadTarget(caller, sidecar);
  const view = await recordUpload(app, caller, () =>
    backend.createUpload(caller, target, {
      sidecar,
      metadataSha256,
      contentType: "application/zip",
      staged: { path: null, sha256: sidecar.package.sha256, sizeBytes: sidecar.package.sizeBytes },
    }),
  );
  sendRecorded(res, target, view);
}

export const uploadStatus: Handler = async (req, res, route, app) => {
  const caller = requireCaller(await guardRequest(req, res, route, app));
  sendJson(res, 200, await submissionReadsOf(app).status(caller, route.params.submissionId ?? ""));
};

export const cancelUpload: Handler = async (req, res, route, app) => {
  const caller = requireCaller(await guardRequest(req, res, route, app));
  sendJson(res, 200, await submissionsOf(app).cancel(caller, route.params.submissionId ?? ""));
};

/**
 * list_uploads: ?limit=1..100 (default 50)&cursor=...&all=1; the caller's own submissions in every
 * state, newest first (by creation, so a page boundary holds while rows change state). all=1 lists
 * every account's, for moderators and admins only: they may open any submission already.
 */
export const listUploads: Handler = async (req, res, route, app) => {
  const caller = requireCaller(await guardRequest(req, res, route, app));
  const query = readQuery(route.url, ["limit", "cursor", "all"]);
  const limit = Number(query.limit ?? "50");
  if (!/^\d{1,3}$/.test(query.limit ?? "50") || limit < 1 || limit > 100)
    throw new SvcError("invalid_request", "limit must be an integer from 1 to 100", {
      details: { parameter: "limit", max: 100 },
    });
  if (query.all !== undefined && query.all !== "1")
    throw new SvcError("invalid_request", "all takes the value 1", { details: { parameter: "all" } });
  if (query.all === "1" && !isStaff(caller))
    throw new SvcError("forbidden", "listing every account's submissions needs the moderator or admin role", {
      details: { parameter: "all", requiredRoles: ["moderator", "admin"] },
    });
  const before = query.cursor ? decodeCursor(query.cursor) : undefined;
  if (before === null)
    throw new SvcError("invalid_request", "cursor is not valid", { details: { parameter: "cursor" } });
  const page = await submissionReadsOf(app).listUploads(caller, {
    limit,
    all: query.all === "1",
    ...(before ? { before } : {}),
  });
  sendJson(res, 200, page);
};
