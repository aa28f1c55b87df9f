import { retry } from "@octokit/plugin-retry";
import { throttling } from "@octokit/plugin-throttling";
import { Octokit } from "@octokit/rest";

/** Octokit with GitHub's documented client behaviour: throttled writes and retried limits/5xx. */
const PortalOctokit = Octokit.plugin(throttling, retry);
export type PortalOctokit = InstanceType<typeof PortalOctokit>;

export interface OctokitForOptions {
  /** GitHub's REST API root (GITHUB_API_URL on a runner, an Enterprise host, a loopback test server). */
  baseUrl?: string;
  /** Where rate-limit waits are reported; Octokit's own request log goes to `debug`. */
  log?: { debug: (line: string) => void; warn: (line: string) => void };
  /**
   * The throttle spaces content-creating requests a second apart, as GitHub asks of every
   * integration (its secondary rate limits): right for GitHub, merely slow against a loopback test
   * server, so it is on unless baseUrl is a loopback address (or this says otherwise).
   */
  throttle?: boolean;
  /** How many times one request waits out a rate limit before it fails (default 2). */
  limitRetries?: number;
}

/**
 * The one way the pipeline builds a REST client for a token (changesets/action does the same):
 * writes are queued one at a time a second apart, a primary limit (403/429 with
 * `x-ratelimit-remaining: 0`) or a secondary limit (`retry-after`) is waited out and the request
 * retried, and a 5xx is retried by plugin-retry; anything else fails at once.
 */
export function octokitFor(token: string | null, options: OctokitForOptions = {}): PortalOctokit {
  const limitRetries = options.limitRetries ?? 2;
  const throttle = options.throttle ?? !isLoopbackApi(options.baseUrl);
  const warn = options.log?.warn ?? (() => {});
  const onLimit =
    (kind: string) =>
    (retryAfter: number, request: { method: string; url: string }, _octokit: unknown, retryCount: number) => {
      const retrying = retryCount < limitRetries;
      warn(
        `GitHub ${kind} rate limit on ${request.method} ${request.url}: ${
          retrying
            ? `retrying after ${retryAfter} s (attempt ${retryCount + 1} of ${limitRetries})`
            : "giving up"
        }`,
      );
      return retrying;
    };
  return new PortalOctokit({
    ...(token ? { auth: token } : {}),
    ...(options.baseUrl ? { baseUrl: options.baseUrl } : {}),
    log: {
      debug: options.log?.debug ?? (() => {}),
      info: options.log?.debug ?? (() => {}),
      // Octokit logs every failed request; the expected 404s (no release for a version yet) are noise.
      warn: options.log?.debug ?? (() => {}),
      error: options.log?.debug ?? (() => {}),
    },
    throttle: {
      enabled: throttle,
      onRateLimit: onLimit("primary"),
      onSecondaryRateLimit: onLimit("secondary"),
    },
  });
}

function isLoopbackApi(baseUrl: string | undefined): boolean {
  if (!baseUrl) return false;
  try {
    const { hostname } = new URL(baseUrl);
    return hostname === "localhost" || hostname === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(hostname);
  } catch {
    return false;
  }
}
