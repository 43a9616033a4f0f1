/**
 * Where the appliance may send a request on a caller's word (DESIGN §23): the address rules shared by the
 * guarded fetcher (outbound.fetch.ts, `[outbound]`) and the webhook endpoint policy (`[webhooks]`).
 *
 * Every address is classified after unwrapping the IPv6 forms that carry an IPv4 address
 * (`::ffff:a.b.c.d`, `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`), so `[::ffff:169.254.169.254]`
 * is link-local like `169.254.169.254`:
 * - always refused: loopback, link-local, unspecified (`0.0.0.0/8`, `::`), multicast, broadcast, and the
 *   cloud metadata services (by name, and the addresses that are not link-local: Alibaba's, Oracle's, AWS's
 *   IPv6 one);
 * - private (RFC 1918, ULA `fc00::/7`, CGNAT `100.64.0.0/10`, site-local): allowed unless
 *   `allow_private_networks = false`;
 * - `deny` CIDRs refuse; `allow` CIDRs override every refusal of an address (tests serving media from
 *   loopback allow `127.0.0.0/8`). A metadata *name* is refused whatever `allow` says: allow its address.
 */
import ipaddr from "ipaddr.js";
import { compileRanges, ipInRanges } from "../http/ip-allow";

export interface OutboundConfig {
  allow_private_networks: boolean;
  /** CIDRs (or single addresses) that are allowed even when a rule below would refuse them. */
  allow: string[];
  /** CIDRs (or single addresses) that are refused. */
  deny: string[];
}

export const DEFAULT_OUTBOUND: OutboundConfig = { allow_private_networks: true, allow: [], deny: [] };

export type AddressClass = "loopback" | "link-local" | "unspecified" | "multicast" | "broadcast" | "metadata" | "private" | "public";

/** Classes refused whatever `allow_private_networks` says (only `allow` lets them through). */
export const ALWAYS_REFUSED: ReadonlySet<AddressClass> = new Set(["loopback", "link-local", "unspecified", "multicast", "broadcast", "metadata"]);

/** Host names of cloud metadata services (lower case, no trailing dot). */
const METADATA_NAMES = new Set([
  "metadata",
  "metadata.google.internal",
  "metadata.goog",
  "instance-data",
  "instance-data.ec2.internal",
  "metadata.azure.internal",
  "metadata.packet.net",
]);
/** Metadata addresses outside link-local: Alibaba Cloud, Oracle Cloud (legacy), AWS IMDS over IPv6. */
const METADATA_ADDRESSES = compileRanges(["100.100.100.200/32", "192.0.0.192/32", "fd00:ec2::254/128"]);

/** `metadata.google.internal.` → `metadata.google.internal`; `[::1]` → `::1`. */
export function normaliseHost(hostname: string): string {
  const h = hostname.toLowerCase().replace(/\.+$/, "");
  return h.startsWith("[") && h.endsWith("]") ? h.slice(1, -1) : h;
}

export function isMetadataHost(hostname: string): boolean {
  return METADATA_NAMES.has(normaliseHost(hostname));
}

/** `localhost` and `*.localhost` always mean loopback (RFC 6761), whatever DNS says. */
export function isLocalhostName(hostname: string): boolean {
  const h = normaliseHost(hostname);
  return h === "localhost" || h.endsWith(".localhost");
}

/** The URL host as an IP literal, or null for a name. */
export function literalIp(hostname: string): string | null {
  const h = normaliseHost(hostname);
  return ipaddr.isValid(h) ? h : null;
}

/** The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4), or the address itself. */
function unwrap(addr: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
  if (addr.kind() === "ipv4") return addr;
  const v6 = addr as ipaddr.IPv6;
  const p = v6.parts;
  const v4 = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
  switch (v6.range()) {
    case "ipv4Mapped":
    case "rfc6145":
      return v4(p[6]!, p[7]!);
    case "rfc6052":
      // 64:ff9b::/96 embeds the address in the last 32 bits (the /48 local-use prefix is operator-defined).
      return p[1] === 0xff9b && p[2] === 0 ? v4(p[6]!, p[7]!) : v6;
    case "6to4":
      return v4(p[1]!, p[2]!);
  }
  // IPv4-compatible `::a.b.c.d` (deprecated, but some stacks still route it); `::` and `::1` stay IPv6.
  if (p.slice(0, 6).every((x) => x === 0) && (p[6] !== 0 || p[7]! > 1)) return v4(p[6]!, p[7]!);
  return v6;
}

export function classifyAddress(ip: string): AddressClass {
  const addr = unwrap(ipaddr.parse(normaliseHost(ip)));
  if (ipInRanges(addr.toString(), METADATA_ADDRESSES)) return "metadata";
  switch (addr.range() as string) {
    case "loopback":
      return "loopback";
    case "linkLocal":
      return "link-local";
    case "unspecified":
      return "unspecified";
    case "multicast":
      return "multicast";
    case "broadcast":
      return "broadcast";
    case "private":
    case "uniqueLocal":
    case "carrierGradeNat":
    case "deprecatedSiteLocal":
      return "private";
    default:
      return "public";
  }
}

const CLASS_WORDS: Record<AddressClass, string> = {
  loopback: "a loopback address",
  "link-local": "a link-local address",
  unspecified: "an unspecified address",
  multicast: "a multicast address",
  broadcast: "a broadcast address",
  metadata: "a cloud metadata service",
  private: "a private network address",
  public: "a public address",
};

export type OutboundPolicy = ReturnType<typeof createOutboundPolicy>;

/** Throws an Error naming the bad entry (a config error: the caller stops start-up). */
export function createOutboundPolicy(config: OutboundConfig, section = "[outbound]") {
  const ranges = (key: "allow" | "deny") => {
    const bad = config[key].find((c) => compileRanges([c]).length === 0);
    if (bad !== undefined) throw new Error(`${section} ${key}: "${bad}" is not an IP address or CIDR`);
    return compileRanges(config[key]);
  };
  const allow = ranges("allow");
  const deny = ranges("deny");

  /** Why this resolved address may not be contacted, in our own words; null when it may. */
  function addressProblem(ip: string): string | null {
    if (ipInRanges(ip, allow)) return null;
    const kind = classifyAddress(ip);
    if (ALWAYS_REFUSED.has(kind)) return `its host is ${CLASS_WORDS[kind]}`;
    if (ipInRanges(unwrap(ipaddr.parse(ip)).toString(), deny) || ipInRanges(ip, deny)) return `its host is refused by ${section} deny`;
    if (kind === "private" && !config.allow_private_networks) return `its host is ${CLASS_WORDS[kind]} (${section} allow_private_networks = false)`;
    return null;
  }

  /**
   * The checks that need no DNS (request acceptance, and each hop before resolving): http or https, a
   * host, not a metadata name, and a literal address (or `localhost`) the rules above allow.
   */
  function staticProblem(raw: string | URL): string | null {
    let url: URL;
    try {
      url = typeof raw === "string" ? new URL(raw) : raw;
    } catch {
      return "must be an absolute http or https URL";
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") return "must use http or https";
    const host = normaliseHost(url.hostname);
    if (!host) return "must name a host";
    if (isMetadataHost(host)) return `its host is ${CLASS_WORDS.metadata}`;
    const ip = literalIp(host) ?? (isLocalhostName(host) ? "127.0.0.1" : null);
    return ip ? addressProblem(ip) : null;
  }

  return { addressProblem, staticProblem };
}
