/**
 * The names of what an upstream MCP server offers besides its tools, as toolgate serves them beside other
 * servers': a prompt as `mcp__SERVER__NAME` (as a tool), a resource's URI (and a template's) wrapped as
 * `toolgate+SERVER:URI`, which says the server it is routed to and gives its own URI back unchanged; and the keys
 * under which `toolgate trust` pins a prompt's, a resource's and a template's definition beside the tools' (a key
 * holds a `:`, which no tool name does).
 *
 * Not here: the tools' names (server_spec.ts), the pins' file (pins.ts), the reading itself (src/gateway/).
 *
 * @module
 */
import { isRecord } from "../contract.ts";
import { SERVER_NAME_PATTERN } from "./server_spec.ts";

/** How a wrapped URI begins: `toolgate+SERVER:`. */
export const URI_WRAP = "toolgate+";

/** What a server offers besides its tools, by the list that names it. */
export type OfferKind = "prompt" | "resource" | "template";

/**
 * A server's resource URI (or URI template) as toolgate serves it beside other servers'.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { wrapUri } from "./offer_names.ts";
 * assert.equal(wrapUri("ev", "demo://resource/static/document/a.md"), "toolgate+ev:demo://resource/static/document/a.md");
 * ```
 */
export function wrapUri(server: string, uri: string): string {
  return `${URI_WRAP}${server}:${uri}`;
}

/**
 * The server and its own URI of a wrapped URI (exactly what {@linkcode wrapUri} was given), or `undefined` for a
 * URI toolgate did not wrap.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { unwrapUri } from "./offer_names.ts";
 * assert.deepEqual(unwrapUri("toolgate+ev:file:///a.txt"), { server: "ev", uri: "file:///a.txt" });
 * assert.equal(unwrapUri("file:///a.txt"), undefined);
 * ```
 */
export function unwrapUri(wrapped: string): { server: string; uri: string } | undefined {
  if (!wrapped.startsWith(URI_WRAP)) return undefined;
  const colon = wrapped.indexOf(":", URI_WRAP.length);
  if (colon < 0) return undefined;
  const server = wrapped.slice(URI_WRAP.length, colon);
  if (!SERVER_NAME_PATTERN.test(server)) return undefined;
  return { server, uri: wrapped.slice(colon + 1) };
}

/**
 * The key a definition is pinned under, beside the server's tools: `prompt:NAME`, `resource:URI`,
 * `template:URI_TEMPLATE`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { offerKey } from "./offer_names.ts";
 * assert.equal(offerKey("prompt", "simple-prompt"), "prompt:simple-prompt");
 * ```
 */
export function offerKey(kind: OfferKind, id: string): string {
  return `${kind}:${id}`;
}

/**
 * The kind and id of a pin's key (`undefined` for a tool's name).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { offerOfKey } from "./offer_names.ts";
 * assert.deepEqual(offerOfKey("resource:demo://a"), { kind: "resource", id: "demo://a" });
 * assert.equal(offerOfKey("read_file"), undefined);
 * ```
 */
export function offerOfKey(key: string): { kind: OfferKind; id: string } | undefined {
  const match = /^(prompt|resource|template):/.exec(key);
  return match === null ? undefined : { kind: match[1] as OfferKind, id: key.slice(match[0].length) };
}

/**
 * How a pinned offer is shown to a person (`toolgate trust`): by the name or URI toolgate serves it by.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { offerLabel } from "./offer_names.ts";
 * assert.equal(offerLabel("ev", "prompt:simple-prompt"), "prompt mcp__ev__simple-prompt");
 * assert.equal(offerLabel("ev", "read_file"), undefined);
 * ```
 */
export function offerLabel(server: string, key: string): string | undefined {
  const offer = offerOfKey(key);
  if (offer === undefined) return undefined;
  return offer.kind === "prompt"
    ? `prompt mcp__${server}__${offer.id}`
    : `${offer.kind === "resource" ? "resource" : "resource template"} ${wrapUri(server, offer.id)}`;
}

/** The fields of each kind that are pinned, as the server lists them (its `name` is pinned as `label`). */
const PINNED: Record<OfferKind, readonly string[]> = {
  prompt: ["title", "description", "arguments", "icons"],
  resource: ["name", "title", "description", "mimeType", "annotations", "icons"],
  template: ["name", "title", "description", "mimeType", "annotations", "icons"],
};

/**
 * The definition pinned of a prompt, a resource or a template as its server lists it: its key as `name`, and what a
 * model or a person reads of it (a resource's own name as `label`; of its annotations, not `lastModified`, which a
 * resource's data changes).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { offerDefinition } from "./offer_names.ts";
 * assert.deepEqual(offerDefinition("resource", { uri: "demo://a", name: "a", size: 3 }), { name: "resource:demo://a", label: "a" });
 * ```
 */
export function offerDefinition(kind: OfferKind, item: Record<string, unknown>): Record<string, unknown> & {
  name: string;
} {
  const id = kind === "prompt" ? item.name : kind === "resource" ? item.uri : item.uriTemplate;
  const out: Record<string, unknown> & { name: string } = { name: offerKey(kind, String(id)) };
  for (const field of PINNED[kind]) {
    let value = item[field];
    if (value === undefined) continue;
    if (field === "annotations" && isRecord(value)) {
      const { lastModified: _, ...rest } = value;
      value = rest;
    }
    out[field === "name" ? "label" : field] = value;
  }
  return out;
}
