/**
 * Client address and CIDR allow-lists (IPv4 and IPv6, IPv4-mapped IPv6 normalised). X-Forwarded-For is
 * honoured only when the TCP peer is a trusted proxy; then the right-most address that is not itself a
 * trusted proxy is the client (the left part of the header is client-controlled).
 */
import ipaddr from "ipaddr.js";

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

export function parseCidr(cidr: string): Range | null {
  try {
    if (cidr.includes("/")) return normaliseRange(ipaddr.parseCIDR(cidr));
    const addr = normalise(ipaddr.parse(cidr));
    return [addr, addr.kind() === "ipv4" ? 32 : 128];
  } catch {
    return null;
  }
}

function normalise(a: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
  return a.kind() === "ipv6" && (a as ipaddr.IPv6).isIPv4MappedAddress() ? (a as ipaddr.IPv6).toIPv4Address() : a;
}
function normaliseRange([a, bits]: Range): Range {
  if (a.kind() === "ipv6" && (a as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) return [(a as ipaddr.IPv6).toIPv4Address(), bits - 96];
  return [a, bits];
}

export function ipInRanges(ip: string | undefined, ranges: readonly Range[]): boolean {
  if (!ip) return false;
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = normalise(ipaddr.parse(ip));
  } catch {
    return false;
  }
  return ranges.some(([net, bits]) => net.kind() === addr.kind() && addr.match([net, bits] as never));
}

export function compileRanges(cidrs: readonly string[]): Range[] {
  return cidrs.map(parseCidr).filter((r): r is Range => r !== null);
}

export function clientIp({ peer, forwardedFor, trusted }: { peer: string | undefined; forwardedFor: string | null; trusted: Range[] }): string | undefined {
  if (!peer || !forwardedFor || !trusted.length || !ipInRanges(peer, trusted)) return peer;
  const hops = forwardedFor
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  for (let i = hops.length - 1; i >= 0; i--) {
    if (!ipInRanges(hops[i], trusted)) return hops[i];
  }
  return hops[0] ?? peer;
}
