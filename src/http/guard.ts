import type { IncomingMessage, ServerResponse } from "node:http";
import type { BlockList, Socket } from "node:net";
import type { Account } from "../accounts/account-record.ts";
import { hasAnyRole } from "../accounts/roles.ts";
import type { SessionInfo } from "../accounts/sessions.ts";
import type { Role } from "../config/portal-config.ts";
import { UPLOAD_CREDENTIAL_PREFIX, type UploadCredential } from "../accounts/upload-credentials.ts";
import type { Principal } from "../contracts/ownership.ts";
import { SvcError } from "../errors.ts";
import { decidePeer, type PeerDecision, resolveClientIp, trustedProxyList } from "./client-ip.ts";
import { type AppContext, accountsOf, type RouteContext } from "./context.ts";
import { CSRF_HEADER, clearSessionCookie, readSessionCookie } from "./cookies.ts";

export interface Caller {
  account: Account;
  /** Effective roles (privileged ones need a verified email). */
  roles: Role[];
  /** Set for cookie-authenticated requests. */
  session?: { token: string; info: SessionInfo };
  /** Set on the download lane. */
  apiKeyId?: string;
  /** Set for a trusted-publishing upload credential (create_upload): the one mod it may upload. */
  uploadCredential?: UploadCredential;
  /** With an upload credential: the owner's account and the workflow's GitHub actor. */
  identity?: Principal[];
}

export interface Guarded {
  ip: string;
  caller: Caller | null;
}

const proxyLists = new WeakMap<readonly string[], BlockList>();

/**
 * A keep-alive connection has one peer, so whether it is a trusted proxy is decided once per
 * socket (with the list it was decided against: a socket never moves between servers, but a
 * configuration object may be replaced). Only X-Forwarded-For, which changes per request, is read
 * per request, and only from a trusted peer.
 */
const peerDecisions = new WeakMap<Socket, { list: BlockList; decision: PeerDecision }>();

/**
 * The caller each request authenticated as, kept for the refusal audit (a CSRF failure has one).
 * A property of the request rather than a WeakMap entry: it lives exactly as long as the request,
 * without an ephemeron-table insertion (and collector bookkeeping) on every download request.
 */
const ESTABLISHED_CALLER = Symbol("svc.establishedCaller");
type WithCaller = IncomingMessage & { [ESTABLISHED_CALLER]?: Caller };

/** The caller guardRequest established for this request, also when it then refused it. */
export function callerOf(req: IncomingMessage): Caller | null {
  return (req as WithCaller)[ESTABLISHED_CALLER] ?? null;
}

function establish(req: IncomingMessage, caller: Caller): void {
  (req as WithCaller)[ESTABLISHED_CALLER] = caller;
}

export function clientIpOf(req: IncomingMessage, app: AppContext): string {
  if (app.clientIp) return app.clientIp(req);
  const entries = app.config.deployment.trustedProxies;
  let list = proxyLists.get(entries);
  if (!list) {
    list = trustedProxyList(entries);
    proxyLists.set(entries, list);
  }
  const socket = req.socket;
  let known = peerDecisions.get(socket);
  // A socket whose peer is not known yet (or no longer) is decided afresh, never remembered.
  if (!known || known.list !== list) {
    const decision = decidePeer(socket.remoteAddress, list);
    if (socket.remoteAddress === undefined) return resolveClientIp(req, list, decision);
    known = { list, decision };
    peerDecisions.set(socket, known);
  }
  return resolveClientIp(req, list, known.decision);
}

/** Names a query parameter that carries an API key (refused: query strings end up in logs). */
function apiKeyInQuery(url: URL): string | null {
  // The common case, no query at all, without building URLSearchParams.
  if (url.search === "") return null;
  for (const [name, value] of url.searchParams) {
    if (/^(api[_-]?key|key|token|access_token|auth)$/i.test(name) || value.startsWith("svc_")) return name;
  }
  return null;
}

/** A bearer token that has the shape of an upload credential, or null. */
function uploadCredentialOf(req: IncomingMessage): string | null {
  const token = bearerToken(req);
  return token?.startsWith(UPLOAD_CREDENTIAL_PREFIX) ? token : null;
}

function bearerToken(req: IncomingMessage): string | null {
  const header = req.headers.authorization;
  if (!header) return null;
  const m = /^Bearer[ ]+(\S+)$/i.exec(header.trim());
  return m ? m[1]! : "";
}

/**
 * Everything the endpoint table asks for, before any body byte is read: authentication by the
 * route's scheme, roles, the CSRF header on cookie-authenticated writes, and the rate-limit bucket.
 * Handlers call it first and use the caller it returns.
 */
export async function guardRequest(
  req: IncomingMessage,
  res: ServerResponse,
  route: RouteContext,
  app: AppContext,
): Promise<Guarded> {
  const { endpoint } = route;
  const ip = clientIpOf(req, app);
  let caller: Caller | null = null;
  const credential = endpoint.uploadCredential ? uploadCredentialOf(req) : null;
  if (endpoint.authRequired && endpoint.authScheme === "api_key") {
    const inQuery = apiKeyInQuery(route.url);
    if (inQuery) {
      throw new SvcError("invalid_api_key", "API keys are accepted only in the Authorization header", {
        details: { parameter: inQuery, scheme: "Authorization: Bearer svc_..." },
      });
    }
    const token = bearerToken(req);
    if (token === null) {
      res.setHeader("www-authenticate", 'Bearer realm="svc"');
      throw new SvcError("unauthenticated", "send an API key as 'Authorization: Bearer svc_...'");
    }
    const verified = token ? await accountsOf(app).verifyApiKey(token) : null;
    if (!verified) {
      res.setHeader("www-authenticate", 'Bearer realm="svc", error="invalid_token"');
      throw new SvcError("invalid_api_key", "the API key is malformed, unknown or revoked");
    }
    caller = { account: verified.account, roles: verified.roles, apiKeyId: verified.apiKeyId };
    establish(req, caller);
  } else if (endpoint.authRequired && credential !== null) {
    // No cookie is involved, so no CSRF header either: a page cannot make a browser send this header.
    try {
      // Loaded here: it reads ownership records through the publisher's modules, which no other
      // request needs (a cold router function would load them for every route).
      const { verifyUploadCredential } = await import("./trusted-publishing.ts");
      caller = await verifyUploadCredential(app, credential);
    } catch (error) {
      res.setHeader("www-authenticate", 'Bearer realm="svc", error="invalid_token"');
      throw error;
    }
    establish(req, caller);
  } else if (endpoint.authRequired) {
    const token = readSessionCookie(req);
    if (!token) {
      if (req.headers.authorization && endpoint.uploadCredential) {
        throw new SvcError(
          "forbidden",
          `${endpoint.id} takes a session cookie or a trusted-publishing upload credential ('Authorization: Bearer ${UPLOAD_CREDENTIAL_PREFIX}...'); API keys are accepted only on the download lane`,
          { details: { endpoint: endpoint.id, authScheme: "session" } },
        );
      }
      if (req.headers.authorization) {
        throw new SvcError(
          "forbidden",
          "API keys are accepted only on the download lane; this route needs a session cookie",
          { details: { endpoint: endpoint.id, authScheme: "session" } },
        );
      }
      throw new SvcError("unauthenticated", "sign in first: this route needs the svc_session cookie");
    }
    const info = await accountsOf(app).getSession(token);
    if (!info) {
      clearSessionCookie(req, res, app);
      throw new SvcError("unauthenticated", "the session is unknown, ended or expired; sign in again");
    }
    caller = { account: info.account, roles: info.roles, session: { token, info } };
    establish(req, caller);
    if (endpoint.csrf) {
      const header = req.headers[CSRF_HEADER];
      if (!accountsOf(app).checkCsrf(token, typeof header === "string" ? header : undefined)) {
        throw new SvcError("csrf_failed", `missing or wrong ${CSRF_HEADER} header for this session`);
      }
    }
  }
  if (caller && endpoint.roles.length > 0 && !hasAnyRole(caller.roles, endpoint.roles)) {
    throw new SvcError("forbidden", `${endpoint.id} needs one of the roles ${endpoint.roles.join(", ")}`, {
      details: { requiredRoles: endpoint.roles },
    });
  }
  if (endpoint.rateLimit) {
    const subject =
      endpoint.rateLimit.scope === "account" && caller ? `account:${caller.account.id}` : `ip:${ip}`;
    await accountsOf(app).consumeRateLimit(endpoint.rateLimit.bucket, subject);
  }
  return { ip, caller };
}

/** For handlers of authenticated routes: the caller guardRequest established. */
export function requireCaller(guarded: Guarded): Caller {
  if (!guarded.caller) throw new SvcError("unauthenticated", "sign in first");
  return guarded.caller;
}
