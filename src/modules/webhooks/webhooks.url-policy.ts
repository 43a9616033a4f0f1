/**
 * Where webhooks may be sent (`[webhooks]` config): http(s) only; link-local addresses and cloud metadata
 * services (by name or address, also in their IPv6 forms: the shared rules of platform/outbound) never,
 * unless `allow` lists them; private and loopback addresses only when `allow_private_networks` (default
 * true: on-prem receivers are usually internal); `deny` refuses and a non-empty `allow` restricts. Entries
 * are IPs/CIDRs (`10.0.0.0/8`), host names (`erp.example.com`) or subdomain wildcards (`*.example.com`).
 *
 * Checked when an endpoint is created or updated (literal hosts: 422 with a pointer) and again before each
 * attempt, where host names are resolved so a name pointing at a refused address is refused too.
 * The attempt connects to the addresses that were checked (webhooks.delivery.ts), so a DNS answer that
 * changes between the check and the connection (rebinding) cannot move it elsewhere.
 */
import { lookup } from "node:dns/promises";
import ipaddr from "ipaddr.js";
import { compileRanges, ipInRanges } from "../../platform/http/ip-allow";
import { classifyAddress, isMetadataHost } from "../../platform/outbound/outbound.policy";

export interface UrlPolicyConfig {
  allow_private_networks: boolean;
  allow: string[];
  deny: string[];
}

interface CompiledList {
  ranges: ReturnType<typeof compileRanges>;
  hosts: string[];
  suffixes: string[];
}

function compileList(entries: string[]): CompiledList {
  const ranges = compileRanges(entries.filter(isIpOrCidr));
  const names = entries.filter((e) => !isIpOrCidr(e)).map((e) => e.toLowerCase());
  return { ranges, hosts: names.filter((n) => !n.startsWith("*.")), suffixes: names.filter((n) => n.startsWith("*.")).map((n) => n.slice(1)) };
}

function isIpOrCidr(entry: string): boolean {
  const [addr, bits] = entry.split("/");
  return ipaddr.isValid(addr!) && (bits === undefined || /^\d{1,3}$/.test(bits));
}

const hostMatches = (host: string, l: CompiledList) => l.hosts.includes(host) || l.suffixes.some((s) => host.endsWith(s));

/** Literal IP of a URL host (`[::1]` → `::1`), or null for a name. */
function literalIp(hostname: string): string | null {
  const h = hostname.startsWith("[") ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(h) ? h : null;
}

export function isPrivateAddress(ip: string): boolean {
  let addr = ipaddr.parse(ip);
  if (addr.kind() === "ipv6" && (addr as ipaddr.IPv6).isIPv4MappedAddress()) addr = (addr as ipaddr.IPv6).toIPv4Address();
  return addr.range() !== "unicast";
}

export type UrlPolicy = ReturnType<typeof createUrlPolicy>;

export function createUrlPolicy(config: UrlPolicyConfig, resolve: (host: string) => Promise<string[]> = defaultResolve) {
  const allow = compileList(config.allow);
  const deny = compileList(config.deny);
  // Every name is resolved before an attempt: any name may point at a link-local or metadata address.

  /** Problems with an address the URL's host is (or resolves to). */
  function addressProblem(ip: string, host: string): string | null {
    if (ipInRanges(ip, deny.ranges)) return `${ip} is refused by [webhooks] deny`;
    const kind = classifyAddress(ip);
    if ((kind === "link-local" || kind === "metadata") && !ipInRanges(ip, allow.ranges) && !hostMatches(host, allow))
      return `${host === ip ? ip : `${host} (${ip})`} is ${kind === "metadata" ? "a cloud metadata service" : "a link-local address"}; only [webhooks] allow can let it through`;
    if (!config.allow_private_networks && isPrivateAddress(ip))
      return `${host === ip ? ip : `${host} (${ip})`} is a private network address; [webhooks] allow_private_networks is false`;
    return null;
  }

  return {
    /** Static check (no DNS). Returns a problem message, or null. */
    check(raw: string): string | null {
      let url: URL;
      try {
        url = new URL(raw);
      } catch {
        return "must be an absolute http or https URL";
      }
      if (url.protocol !== "http:" && url.protocol !== "https:") return "must use http or https";
      const host = url.hostname.toLowerCase();
      if (!host) return "must name a host";
      const ip = literalIp(host);
      if (hostMatches(host, deny)) return `${host} is refused by [webhooks] deny`;
      if (isMetadataHost(host) && !hostMatches(host, allow)) return `${host} is a cloud metadata service; only [webhooks] allow can let it through`;
      if (ip) {
        const p = addressProblem(ip, ip);
        if (p) return p;
      } else if (!config.allow_private_networks && (host === "localhost" || host.endsWith(".localhost"))) {
        return `${host} is a private network address; [webhooks] allow_private_networks is false`;
      }
      const hasAllow = allow.hosts.length + allow.suffixes.length + allow.ranges.length > 0;
      // A name may still be allowed through an allowed CIDR; that is decided at delivery time.
      if (hasAllow && !hostMatches(host, allow) && !(ip ? ipInRanges(ip, allow.ranges) : allow.ranges.length > 0)) return `${host} is not in [webhooks] allow`;
      return null;
    },
    /**
     * Before each attempt: the static check, then every address the host resolves to; the addresses that
     * passed, for the attempt to connect to (pinned: nothing resolves the name again in between).
     */
    async addressesBeforeSend(raw: string): Promise<{ problem: string } | { addresses: string[] }> {
      const p = this.check(raw);
      if (p) return { problem: p };
      const host = new URL(raw).hostname.toLowerCase();
      const literal = literalIp(host);
      if (literal) return { addresses: [literal] };
      let ips: string[];
      try {
        ips = await resolve(host);
      } catch (e) {
        return { problem: `cannot resolve ${host}: ${e instanceof Error ? e.message : String(e)}` };
      }
      if (ips.length === 0) return { problem: `cannot resolve ${host}: no address` };
      for (const ip of ips) {
        const problem = addressProblem(ip, host);
        if (problem) return { problem };
      }
      const hasAllow = allow.hosts.length + allow.suffixes.length + allow.ranges.length > 0;
      if (hasAllow && !hostMatches(host, allow) && !ips.every((ip) => ipInRanges(ip, allow.ranges))) return { problem: `${host} is not in [webhooks] allow` };
      // IPv4 first: a host with an AAAA record is often unreachable over IPv6 from an on-prem network.
      return { addresses: [...ips.filter((a) => !a.includes(":")), ...ips.filter((a) => a.includes(":"))] };
    },
  };
}

async function defaultResolve(host: string): Promise<string[]> {
  return (await lookup(host, { all: true })).map((a) => a.address);
}
