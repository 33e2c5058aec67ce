/**
 * Which IP addresses `http_fetch` refuses to connect to: every range of IANA's IPv4 and IPv6 Special-Purpose Address
 * Registries (loopback, private, link-local, shared, documentation TEST-NETs, benchmarking, protocol assignments,
 * ...), multicast, and IPv6 outside global unicast, including IPv6 forms that embed an IPv4 address.
 *
 * @module
 */

/** Parses a dotted-quad IPv4 address into its 32-bit value, or `undefined`. */
export function parseIPv4(text: string): number | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  let value = 0;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    value = value * 256 + octet;
  }
  return value;
}

/** Parses an IPv6 address (a zone suffix is dropped) into its eight 16-bit groups, or `undefined`. */
export function parseIPv6(text: string): number[] | undefined {
  let body = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  const zone = body.indexOf("%");
  if (zone !== -1) body = body.slice(0, zone);
  if (!body.includes(":")) return undefined;
  // A trailing dotted quad stands for the last two groups.
  const lastColon = body.lastIndexOf(":");
  const last = body.slice(lastColon + 1);
  if (last.includes(".")) {
    const v4 = parseIPv4(last);
    if (v4 === undefined) return undefined;
    body = `${body.slice(0, lastColon + 1)}${Math.floor(v4 / 65536).toString(16)}:${
      (v4 % 65536).toString(16)
    }`;
  }
  const halves = body.split("::");
  if (halves.length > 2) return undefined;
  const parse = (part: string): number[] | undefined => {
    if (part === "") return [];
    const groups: number[] = [];
    for (const group of part.split(":")) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(group)) return undefined;
      groups.push(parseInt(group, 16));
    }
    return groups;
  };
  const head = parse(halves[0]);
  const rest = halves.length === 2 ? parse(halves[1]) : [];
  if (head === undefined || rest === undefined) return undefined;
  const known = head.length + rest.length;
  if (halves.length === 1 ? known !== 8 : known > 7) return undefined;
  return [...head, ...new Array<number>(8 - known).fill(0), ...rest];
}

/**
 * The IANA IPv4 Special-Purpose Address Registry, every entry (sub-blocks of 192.0.0.0/24 included in it), plus
 * multicast: `[network, prefix length, reason]`. The most specific entry names the reason.
 *
 * @example
 * ```ts
 * import { IPV4_SPECIAL } from "./address.ts";
 * IPV4_SPECIAL.find(([base]) => base === "192.0.2.0"); // ["192.0.2.0", 24, "documentation (TEST-NET-1)"]
 * ```
 */
export const IPV4_SPECIAL: ReadonlyArray<readonly [base: string, bits: number, reason: string]> = [
  ["0.0.0.0", 8, "unspecified"],
  ["10.0.0.0", 8, "private"],
  ["100.64.0.0", 10, "CGNAT (shared address space)"],
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link-local"],
  ["172.16.0.0", 12, "private"],
  ["192.0.0.0", 24, "IETF protocol assignments"],
  ["192.0.2.0", 24, "documentation (TEST-NET-1)"],
  ["192.31.196.0", 24, "AS112"],
  ["192.52.193.0", 24, "AMT"],
  ["192.88.99.0", 24, "6to4 relay anycast (deprecated)"],
  ["192.168.0.0", 16, "private"],
  ["192.175.48.0", 24, "AS112 direct delegation"],
  ["198.18.0.0", 15, "benchmarking"],
  ["198.51.100.0", 24, "documentation (TEST-NET-2)"],
  ["203.0.113.0", 24, "documentation (TEST-NET-3)"],
  ["224.0.0.0", 4, "multicast"],
  ["240.0.0.0", 4, "reserved"],
  ["255.255.255.255", 32, "limited broadcast"],
];

/**
 * The IANA IPv6 Special-Purpose Address Registry, every entry (the named sub-blocks of 2001::/23 too), plus
 * multicast and the deprecated site-local block. Two entries are judged by the IPv4 address they carry instead of
 * outright: the NAT64 well-known prefix 64:ff9b::/96 and 6to4 2002::/16, the ways IPv6-only hosts reach public IPv4
 * hosts (IANA marks them globally reachable); IPv4-mapped and IPv4-translated addresses are never a destination on
 * the wire and are refused whatever they carry. Outside these, anything not in global unicast 2000::/3 is refused.
 *
 * @example
 * ```ts
 * import { IPV6_SPECIAL } from "./address.ts";
 * IPV6_SPECIAL.find(([base]) => base === "2001:db8::"); // ["2001:db8::", 32, "documentation"]
 * ```
 */
export const IPV6_SPECIAL: ReadonlyArray<readonly [base: string, bits: number, reason: string]> = [
  ["::", 128, "unspecified"],
  ["::1", 128, "loopback"],
  ["::", 96, "IPv4-compatible (deprecated)"],
  ["::ffff:0:0", 96, "IPv4-mapped"],
  ["::ffff:0:0:0", 96, "IPv4-translated"],
  ["64:ff9b::", 96, "NAT64"],
  ["64:ff9b:1::", 48, "NAT64 local use"],
  ["100::", 64, "discard-only"],
  ["100:0:0:1::", 64, "dummy prefix"],
  ["2001::", 23, "IETF protocol assignments"],
  ["2001::", 32, "Teredo"],
  ["2001:1::1", 128, "PCP anycast"],
  ["2001:1::2", 128, "TURN anycast"],
  ["2001:1::3", 128, "DNS-SD SRP anycast"],
  ["2001:2::", 48, "benchmarking"],
  ["2001:3::", 32, "AMT"],
  ["2001:4:112::", 48, "AS112"],
  ["2001:10::", 28, "ORCHID (deprecated)"],
  ["2001:20::", 28, "ORCHIDv2"],
  ["2001:30::", 28, "drone remote ID"],
  ["2001:db8::", 32, "documentation"],
  ["2002::", 16, "6to4"],
  ["2620:4f:8000::", 48, "AS112 direct delegation"],
  ["3fff::", 20, "documentation"],
  ["5f00::", 16, "segment routing SIDs"],
  ["fc00::", 7, "private (unique local)"],
  ["fe80::", 10, "link-local"],
  ["fec0::", 10, "site-local (deprecated)"],
  ["ff00::", 8, "multicast"],
];

/** Prefixes judged by the IPv4 address they carry: [reason, index of its first group]. */
const EMBEDDING: Record<string, number> = { "IPv4-mapped": 6, "IPv4-translated": 6, NAT64: 6, "6to4": 1 };
/** Refused whatever IPv4 address they carry. */
const ALWAYS_REFUSED = new Set(["IPv4-mapped", "IPv4-translated"]);

const V4_TABLE = IPV4_SPECIAL.map(([base, bits, reason]) => ({
  start: parseIPv4(base)!,
  size: 2 ** (32 - bits),
  bits,
  reason,
}));

function toBigInt(groups: number[]): bigint {
  return groups.reduce((value, group) => (value << 16n) | BigInt(group), 0n);
}

const V6_TABLE = IPV6_SPECIAL.map(([base, bits, reason]) => {
  const mask = bits === 0 ? 0n : ((1n << BigInt(bits)) - 1n) << BigInt(128 - bits);
  return { network: toBigInt(parseIPv6(base)!), mask, bits, reason };
});

/** Why an IPv4 address (as a 32-bit value) is refused, or `undefined` when it is public. */
export function refusedIPv4(value: number): string | undefined {
  let best: { bits: number; reason: string } | undefined;
  for (const entry of V4_TABLE) {
    if (
      value >= entry.start && value < entry.start + entry.size &&
      (best === undefined || entry.bits > best.bits)
    ) {
      best = entry;
    }
  }
  return best?.reason;
}

function embeddedV4(groups: number[], index: number): number {
  return groups[index] * 65536 + groups[index + 1];
}

/** Why an IPv6 address (eight groups) is refused, or `undefined` when it is public. */
export function refusedIPv6(groups: number[]): string | undefined {
  const value = toBigInt(groups);
  let best: { bits: number; reason: string } | undefined;
  for (const entry of V6_TABLE) {
    if ((value & entry.mask) === entry.network && (best === undefined || entry.bits > best.bits)) {
      best = entry;
    }
  }
  if (best !== undefined) {
    const at = EMBEDDING[best.reason];
    if (at === undefined) return best.reason;
    const carried = refusedIPv4(embeddedV4(groups, at));
    if (carried !== undefined) return `${best.reason} ${carried}`;
    return ALWAYS_REFUSED.has(best.reason) ? best.reason : undefined;
  }
  // Global unicast is 2000::/3; the rest of the space is reserved or unassigned.
  if ((groups[0] & 0xe000) !== 0x2000) return "reserved (not global unicast)";
  return undefined;
}

/**
 * Why an IP address is refused (`"loopback"`, `"IPv4-mapped private"`, ...), `undefined` when it is public, or
 * `"not an IP address"` for anything that does not parse (closed by default).
 *
 * @example
 * ```ts
 * import { refusedAddress } from "./address.ts";
 * refusedAddress("127.0.0.1"); // "loopback"
 * refusedAddress("::ffff:7f00:1"); // "IPv4-mapped loopback"
 * refusedAddress("93.184.215.14"); // undefined
 * ```
 */
export function refusedAddress(ip: string): string | undefined {
  const v4 = parseIPv4(ip);
  if (v4 !== undefined) return refusedIPv4(v4);
  const v6 = parseIPv6(ip);
  if (v6 !== undefined) return refusedIPv6(v6);
  return "not an IP address";
}

/** Is the text an IP literal (IPv4 dotted quad, or IPv6 with or without brackets)? */
export function isIPLiteral(text: string): boolean {
  return parseIPv4(text) !== undefined || parseIPv6(text) !== undefined;
}
