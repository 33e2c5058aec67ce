/**
 * Whether a resource URI stays inside what an MCP server's profile shows it, checked before the read reaches the
 * server: a `file://` URI must name a path under the workspace or one of the profile's read or write grants, an
 * `http(s)://` (or `ws(s)://`) one a host its net grants let it reach; a URI without a scheme is refused. A
 * `file://` URI is read only in its plain form (no `.` or `..` part, even encoded, no query or fragment): a server
 * may read it otherwise than toolgate, and the kernel resolves `link/..` from where the link points. Any other
 * scheme is the server's own naming (`demo://...`, `memory://...`), which it answers from what it holds, inside
 * its sandbox as ever.
 *
 * Not here: the sandbox that confines the server whatever it is asked (src/sandbox/), the pins (upstream_offers.ts).
 *
 * @module
 */
import { hostAllowed } from "../manifest/credentials.ts";
import type { PermissionProfile } from "../manifest/profiles.ts";
import { isAbsolute, resolve } from "../base/paths.ts";

/** A path, with its symbolic links followed where it exists (the deepest part that exists, the rest kept). */
function real(path: string): string {
  let head = path;
  const tail: string[] = [];
  for (;;) {
    try {
      return [Deno.realPathSync(head), ...tail].join("/");
    } catch {
      const cut = head.lastIndexOf("/");
      if (cut <= 0) return path;
      tail.unshift(head.slice(cut + 1));
      head = head.slice(0, cut);
    }
  }
}

/** Is `path` `root` or under it? */
function under(path: string, root: string): boolean {
  return root === "/" || path === root || path.startsWith(root.endsWith("/") ? root : `${root}/`);
}

/** Is the `file:` URI `uri` (parsed as `url`, its path decoded as `path`) in the one form every reader reads alike? */
function plainFileUri(uri: string, url: URL, path: string): boolean {
  const href = url.href;
  const written = uri === href || uri === href.replace(/^file:\/\//, "file://localhost");
  const parts = path.split("/");
  return written && url.search === "" && url.hash === "" && !uri.includes("?") && !uri.includes("#") &&
    !path.includes("\\") && !path.includes("\0") && !parts.some((part) => part === "." || part === "..");
}

/**
 * Why a read of `uri` is refused for a server of `profile` run in `workspace` (one line, naming the grant it would
 * need), or `undefined` when it stays inside.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { uriRefusal } from "./resource_reach.ts";
 * const profile = { name: "p", read: ["/srv/data"], write: [], net: ["api.example.com"], env: [], limits: {} as never };
 * assert.equal(uriRefusal("file:///srv/data/a.txt", profile, "/srv/p"), undefined);
 * assert.match(uriRefusal("file:///etc/passwd", profile, "/srv/p") ?? "", /outside what the server's profile/);
 * assert.match(uriRefusal("file:///srv/p/link/..%2Fx", profile, "/srv/p") ?? "", /not in the plain form/);
 * assert.match(uriRefusal("https://evil.example/x", profile, "/srv/p") ?? "", /may not reach/);
 * assert.equal(uriRefusal("demo://resource/1", profile, "/srv/p"), undefined);
 * assert.match(uriRefusal("/etc/passwd", profile, "/srv/p") ?? "", /is not a URI/);
 * ```
 */
export function uriRefusal(uri: string, profile: PermissionProfile, workspace: string): string | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    // No scheme (`/etc/passwd`, `../x`): not a URI, and a server may read it as a path, which nothing here checks.
    return `the resource ${uri} is not a URI (a URI begins with its scheme: file:///path, demo://name)`;
  }
  const scheme = url.protocol.slice(0, -1).toLowerCase();
  if (scheme === "file") {
    if (url.host !== "" && url.host !== "localhost") {
      return `the resource ${uri} names a file on another host (${url.host}); toolgate reads local files only`;
    }
    let path: string;
    try {
      path = decodeURIComponent(url.pathname);
    } catch {
      return `the resource ${uri} is not a well-formed file URI`;
    }
    const target = real(resolve("/", path));
    const grants = [workspace, ...profile.read, ...profile.write].map((grant) =>
      real(isAbsolute(grant) ? grant : resolve(workspace, grant))
    );
    if (!grants.some((root) => under(target, root))) {
      return `the resource ${uri} is outside what the server's profile "${profile.name}" shows it ` +
        `(the workspace and its read and write grants); add the folder to its permissions.read to let it be read`;
    }
    // The check above reads the path as toolgate does; a server reads it its own way. Only a URI every way reads
    // alike passes: in the URL's own form (the server may take the text after `file://` as it is), with no `.` or
    // `..` part once decoded (the kernel resolves `link/..` from the link's target, not lexically), no query or
    // fragment, no backslash.
    if (!plainFileUri(uri, url, path)) {
      return `the resource ${uri} is not in the plain form toolgate checks (${url.href} without "." or ".." ` +
        "parts, a query, a fragment or a backslash, once decoded); ask for it in that form";
    }
    return undefined;
  }
  if (["http", "https", "ws", "wss"].includes(scheme)) {
    const port = url.port !== "" ? Number(url.port) : ["https", "wss"].includes(scheme) ? 443 : 80;
    const host = url.hostname.replace(/^\[|\]$/g, "");
    const net = profile.net;
    if (net === true || (Array.isArray(net) && hostAllowed(host, port, net))) return undefined;
    return `the resource ${uri} is on a host the server's profile "${profile.name}" may not reach ` +
      `(${host}:${port}); add it to its permissions.net to let it be read`;
  }
  return undefined;
}
