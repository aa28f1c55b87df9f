import type { IncomingMessage } from "node:http";
import { BlockList, isIP } from "node:net";

function normalize(address: string): string {
  const trimmed = address.trim();
  return trimmed.startsWith("::ffff:") && isIP(trimmed.slice(7)) === 4 ? trimmed.slice(7) : trimmed;
}

/** trustedProxies entries are addresses or CIDR ranges (10.0.0.0/8, fd00::/8). */
export function trustedProxyList(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [address, prefix] = entry.split("/");
    const family = isIP(address ?? "");
    if (!address || family === 0) continue;
    const type = family === 6 ? "ipv6" : "ipv4";
    if (prefix === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(prefix), type);
  }
  return list;
}

function isTrusted(list: BlockList, address: string): boolean {
  const family = isIP(address);
  return family !== 0 && list.check(address, family === 6 ? "ipv6" : "ipv4");
}

/** What a connection's peer address says, the same for every request on it. */
export interface PeerDecision {
  peer: string;
  /** A trusted proxy: its requests' X-Forwarded-For is read. */
  trusted: boolean;
}

export function decidePeer(remoteAddress: string | undefined, trusted: BlockList): PeerDecision {
  const peer = normalize(remoteAddress ?? "unknown");
  return { peer, trusted: isTrusted(trusted, peer) };
}

/**
 * The client address for rate limits and audit. X-Forwarded-For is read only when the socket peer
 * is a trusted proxy, and then from the right: the first hop that is not itself a trusted proxy is
 * the client (anything further left was written by the client and proves nothing).
 */
export function resolveClientIp(
  req: IncomingMessage,
  trusted: BlockList,
  peerDecision: PeerDecision = decidePeer(req.socket.remoteAddress, trusted),
): string {
  const { peer } = peerDecision;
  if (!peerDecision.trusted) return peer;
  const header = req.headers["x-forwarded-for"];
  const hops = (Array.isArray(header) ? header.join(",") : (header ?? ""))
    .split(",")
    .map(normalize)
    .filter((hop) => hop !== "");
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i]!;
    if (isIP(hop) === 0) return peer;
    if (!isTrusted(trusted, hop)) return hop;
  }
  return peer;
}

export function isLoopback(address: string | undefined): boolean {
  const a = normalize(address ?? "");
  return a === "::1" || /^127\./.test(a);
}
