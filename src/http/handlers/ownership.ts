import type { IncomingMessage, ServerResponse } from "node:http";
import { SvcError } from "../../errors.ts";
import type { SubmissionBackend } from "../../submissions/backend.ts";
import type { OwnershipRequest } from "../../submissions/ownership.ts";
import type { AppContext, Handler, RouteContext } from "../context.ts";
import { guardRequest, requireCaller } from "../guard.ts";
import {
  readCollaborator,
  readSourceRepository,
  readTransfer,
  readTrustedPublisher,
} from "../ownership-body.ts";
import { sendJson } from "../respond.ts";

/** The ownership routes are the local portal's (localPortalOnly in the endpoint table). */
function ownershipBackendOf(app: AppContext): SubmissionBackend {
  if (!app.submissions)
    throw new SvcError(
      "not_implemented",
      "mod ownership is served by the local portal only (svc serve), which publishes into the records it keeps",
    );
  return app.submissions;
}

/** mod_ownership: the whole record, history included. */
export const modOwnership: Handler = async (req, res, route, app) => {
  const caller = requireCaller(await guardRequest(req, res, route, app));
  const ownership = await ownershipBackendOf(app).modOwnership(caller, route.params.modId ?? "");
  sendJson(res, 200, { ownership });
};

/** Guard, backend, body, change: every ownership write has this shape. */
function ownershipChange(
  read: (req: IncomingMessage, res: ServerResponse) => Promise<OwnershipRequest>,
): Handler {
  return async (req, res, route: RouteContext, app) => {
    const caller = requireCaller(await guardRequest(req, res, route, app));
    const backend = ownershipBackendOf(app);
    const request = await read(req, res);
    const ownership = await backend.changeModOwnership(caller, route.params.modId ?? "", request);
    sendJson(res, 200, { ownership });
  };
}

export const addCollaborator = ownershipChange(async (req, res) => ({
  action: "add_collaborator",
  subject: await readCollaborator(req, res),
}));

export const removeCollaborator = ownershipChange(async (req, res) => ({
  action: "remove_collaborator",
  subject: await readCollaborator(req, res),
}));

export const addTrustedPublisher = ownershipChange(async (req, res) => ({
  action: "add_trusted_publisher",
  trustedPublisher: await readTrustedPublisher(req, res),
}));

export const removeTrustedPublisher = ownershipChange(async (req, res) => ({
  action: "remove_trusted_publisher",
  trustedPublisher: await readTrustedPublisher(req, res),
}));

export const setSourceRepository = ownershipChange(async (req, res) => ({
  action: "set_source_repository",
  repository: await readSourceRepository(req, res),
}));

export const transferMod = ownershipChange(readTransfer);
