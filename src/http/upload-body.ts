import { withPackageFileName } from "../contracts/package-file-name.ts";
import { createHash } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import busboy from "busboy";
import { SvcError } from "../errors.ts";
import { DEFAULT_JSON_LIMITS, parseUntrustedJson } from "../lib/untrusted-json.ts";
import { type StagedPackage, stagePackage } from "../submissions/staging.ts";
import { validateSidecar } from "../validation/documents.ts";
import type { Sidecar } from "../validation/types.ts";
import { bodyAbortSignal } from "./body-abort.ts";
import { readLimited } from "./body.ts";

export const ACCEPTED_PACKAGE_TYPES = ["application/zip", "application/x-zip-compressed"];
export const METADATA_MAX_BYTES = 256 * 1024;
/** Multipart framing and the metadata part on top of the package itself. */
export const MULTIPART_OVERHEAD = METADATA_MAX_BYTES + 64 * 1024;

/** The create_upload metadata: acceptable JSON that matches svc.mod-release-submission.v1. */
export function parseMetadata(raw: Buffer): Sidecar {
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

const sha256Of = (raw: Buffer): string => createHash("sha256").update(raw).digest("hex");

/**
 * A create_upload JSON body: the sidecar names the package by its immutable https URL with sha256
 * and sizeBytes, and no package byte passes through the API.
 */
export async function readUrlUpload(
  req: IncomingMessage,
  res: ServerResponse,
): Promise<{ sidecar: Sidecar; metadataSha256: string }> {
  const raw = await readLimited(req, res, METADATA_MAX_BYTES);
  const sidecar = parseMetadata(raw);
  if (!sidecar.package.url)
    throw new SvcError(
      "invalid_payload",
      "package.url is required when the package is not sent: the immutable https URL of the release asset",
      { details: { field: "package.url" } },
    );
  return { sidecar, metadataSha256: sha256Of(raw) };
}

/** Where a package is staged: uploads/staging/{submissionId}/ below the private storage root. */
export interface StagingTarget {
  storageRoot: string;
  submissionId: string;
}

export interface MultipartUpload<T extends StagingTarget> {
  sidecar: Sidecar;
  metadataSha256: string;
  contentType: string;
  /** Complete and hashed, under a temporary name until commit(). */
  staged: StagedPackage;
  /** What options.target chose for this upload. */
  target: T;
}

export interface MultipartOptions<T extends StagingTarget> {
  maxPackageBytes: number;
  /** Where the package goes, asked once the metadata is accepted and before any package byte is stored. */
  target: (sidecar: Sidecar) => Promise<T>;
}

/**
 * Reads the multipart body: the metadata part first (validated before any package byte is
 * stored), then the package, streamed into private staging under the contract's cap. Anything
 * else (a third part, a second file, the package first, a wrong type) is refused and nothing stays.
 */
export function readMultipartUpload<T extends StagingTarget>(
  req: IncomingMessage,
  options: MultipartOptions<T>,
): Promise<MultipartUpload<T>> {
  const max = options.maxPackageBytes;
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
    let staging: Promise<MultipartUpload<T>> | null = null;
    let failed = false;
    let stagedDone: MultipartUpload<T> | null = null;
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
      // The portal stores these bytes, so it names them: {modId}-{version}.zip, whatever was stated.
      sidecar = withPackageFileName(parseMetadata(raw));
      metadataSha256 = sha256Of(raw);
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
        const target = await options.target(meta);
        const staged = await stagePackage(stream, {
          root: target.storageRoot,
          submissionId: target.submissionId,
          fileName: meta.package.fileName,
          maxBytes: max,
          isTruncated: () => stream.truncated === true,
        });
        return { sidecar: meta, metadataSha256, contentType: mime, staged, target };
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
    const refused = bodyAbortSignal(req);
    if (refused.aborted) fail(refused.reason);
    else refused.addEventListener("abort", () => fail(refused.reason), { once: true });
    req.pipe(parser);
  });
}
