/**
 * Which IP addresses `http_fetch` refuses to connect to: loopback, private, link-local, CGNAT, multicast,
 * unspecified and other non-public ranges, in IPv4 and IPv6, including IPv6 forms that embed an IPv4 address
 * (IPv4-mapped, IPv4-compatible, NAT64, 6to4, IPv4-translated).
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

const IPV4_REFUSED: ReadonlyArray<[base: string, bits: number, reason: string]> = [
  ["0.0.0.0", 8, "unspecified"],
  ["10.0.0.0", 8, "private"],
  ["100.64.0.0", 10, "CGNAT (shared address space)"],
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link-local"],
  ["172.16.0.0", 12, "private"],
  ["192.0.0.0", 24, "IETF protocol assignments"],
  ["192.168.0.0", 16, "private"],
  ["198.18.0.0", 15, "benchmarking"],
  ["224.0.0.0", 4, "multicast"],
  ["240.0.0.0", 4, "reserved"],
];

/** Why an IPv4 address (as a 32-bit value) is refused, or `undefined` when it is public. */
export function refusedIPv4(value: number): string | undefined {
  for (const [base, bits, reason] of IPV4_REFUSED) {
    const size = 2 ** (32 - bits);
    const start = parseIPv4(base)!;
    if (value >= start && value < start + size) return reason;
  }
  return undefined;
}

function embeddedV4(groups: number[], index: number): number {
  return groups[index] * 65536 + groups[index + 1];
}

/** Why an IPv6 address (eight groups) is refused, or `undefined` when it is public. */
export function refusedIPv6(groups: number[]): string | undefined {
  const zeros = (from: number, to: number) => groups.slice(from, to).every((g) => g === 0);
  if (zeros(0, 8)) return "unspecified";
  if (zeros(0, 7) && groups[7] === 1) return "loopback";
  if (zeros(0, 5) && groups[5] === 0xffff) {
    const reason = refusedIPv4(embeddedV4(groups, 6));
    return reason && `IPv4-mapped ${reason}`;
  }
  if (zeros(0, 4) && groups[4] === 0xffff && groups[5] === 0) {
    const reason = refusedIPv4(embeddedV4(groups, 6));
    return reason && `IPv4-translated ${reason}`;
  }
  if (zeros(0, 6)) return "IPv4-compatible (deprecated)";
  if (groups[0] === 0x64 && groups[1] === 0xff9b && zeros(2, 6)) {
    const reason = refusedIPv4(embeddedV4(groups, 6));
    return reason && `NAT64 ${reason}`;
  }
  if (groups[0] === 0x64 && groups[1] === 0xff9b && groups[2] === 1) return "NAT64 local use";
  if (groups[0] === 0x2002) {
    const reason = refusedIPv4(embeddedV4(groups, 1));
    return reason && `6to4 ${reason}`;
  }
  if (groups[0] === 0x2001 && groups[1] === 0) return "Teredo";
  if (groups[0] === 0x100 && zeros(1, 4)) return "discard-only";
  if ((groups[0] & 0xfe00) === 0xfc00) return "private (unique local)";
  if ((groups[0] & 0xffc0) === 0xfe80) return "link-local";
  if ((groups[0] & 0xffc0) === 0xfec0) return "site-local (deprecated)";
  if ((groups[0] & 0xff00) === 0xff00) return "multicast";
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
