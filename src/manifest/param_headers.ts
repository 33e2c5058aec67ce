/**
 * A tool's header parameters (MCP 2026-07-28, SEP-2243): an argument whose schema property carries
 * `"x-mcp-header": "Name"` is mirrored by the client into an `Mcp-Param-Name` HTTP header, so that a gateway or a
 * load balancer can route on it without reading the body. What a declaration may be (a non-empty ASCII token, on
 * a `string`, `integer` or `boolean` property at the top level, each name once whatever its case), and the check
 * a server makes of a request: each header agrees with its argument (a value as is, or Base64 in
 * `=?base64?...?=`), and none is missing where the body carries the argument, so that nothing routed by a header
 * acts on a different body.
 *
 * Not here: the standard headers (`Mcp-Method`, `Mcp-Name`: `mcp/stateless_http.ts`), which checks these too.
 *
 * @module
 */
import { isRecord } from "../contract.ts";

/** The property types a header may mirror (a `number`'s text is not one value: SEP-2243 leaves it out). */
const TYPES = new Set(["string", "integer", "boolean"]);
/** An HTTP token (RFC 9110), the characters a header name may hold. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** One declared header parameter: its name, and the argument it mirrors. */
interface Declared {
  readonly header: string;
  readonly param: string;
}

function declared(schema: Readonly<Record<string, unknown>>): Declared[] {
  const properties = isRecord(schema.properties) ? schema.properties : {};
  return Object.entries(properties).flatMap(([param, property]) =>
    isRecord(property) && property["x-mcp-header"] !== undefined
      ? [{ header: String(property["x-mcp-header"]), param }]
      : []
  );
}

/**
 * What is wrong with a schema's `x-mcp-header` declarations, or `undefined`: for the manifest's check (a server
 * must not list a tool its clients are bound to refuse).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { paramHeadersProblem } from "./param_headers.ts";
 * const schema = (property: Record<string, unknown>) => ({ type: "object", properties: { region: property } });
 * assert.equal(paramHeadersProblem(schema({ type: "string", "x-mcp-header": "Region" })), undefined);
 * assert.match(paramHeadersProblem(schema({ type: "number", "x-mcp-header": "Region" }))!, /string, integer or boolean/);
 * assert.match(paramHeadersProblem(schema({ type: "string", "x-mcp-header": "My Region" }))!, /token/);
 * ```
 */
export function paramHeadersProblem(schema: Readonly<Record<string, unknown>>): string | undefined {
  const seen = new Set<string>();
  const properties = isRecord(schema.properties) ? schema.properties : {};
  for (const [param, property] of Object.entries(properties)) {
    if (!isRecord(property) || property["x-mcp-header"] === undefined) continue;
    const header = property["x-mcp-header"];
    const at = `properties.${param}: x-mcp-header`;
    if (typeof header !== "string" || !TOKEN.test(header)) {
      return `${at} must be a header name (a non-empty token of ASCII letters, digits and !#$%&'*+-.^_\`|~)`;
    }
    if (typeof property.type !== "string" || !TYPES.has(property.type)) {
      return `${at} must be on a property of type string, integer or boolean`;
    }
    if (seen.has(header.toLowerCase())) {
      return `${at} names ${header} again (names are compared ignoring case)`;
    }
    seen.add(header.toLowerCase());
  }
  return undefined;
}

/** A header's value as its argument's text: `=?base64?...?=` decoded (strict Base64 of UTF-8), anything else as is. */
function decoded(value: string): string | undefined {
  const wrapped = /^=\?base64\?(.*)\?=$/i.exec(value);
  if (wrapped === null) return value;
  const text = wrapped[1];
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return undefined;
  try {
    const binary = atob(text);
    return new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)));
  } catch {
    return undefined;
  }
}

function asText(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/**
 * What is wrong with a `tools/call`'s `Mcp-Param-*` headers against its arguments and the tool's schema, or
 * `undefined` when they agree: a header that is not valid Base64 where it says it is, a value that differs from
 * the argument, a header missing for an argument the body carries, or one sent for an argument it does not.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { paramHeaderMismatch } from "./param_headers.ts";
 * const schema = { type: "object", properties: { region: { type: "string", "x-mcp-header": "Region" } } };
 * const headers = new Headers({ "mcp-param-region": "=?base64?SGVsbG8=?=" });
 * assert.equal(paramHeaderMismatch(headers, schema, { region: "Hello" }), undefined);
 * assert.match(paramHeaderMismatch(new Headers(), schema, { region: "Hello" })!, /missing/);
 * ```
 */
export function paramHeaderMismatch(
  headers: Headers,
  schema: Readonly<Record<string, unknown>>,
  args: unknown,
): string | undefined {
  const values = isRecord(args) ? args : {};
  for (const { header, param } of declared(schema)) {
    const name = `Mcp-Param-${header}`;
    const sent = headers.get(name)?.trim();
    const value = values[param];
    if (value === undefined || value === null) {
      if (sent !== undefined) return `the ${name} header is sent for an argument the body does not carry`;
      continue;
    }
    if (sent === undefined) return `the ${name} header is missing`;
    const text = decoded(sent);
    if (text === undefined) return `the ${name} header is not valid Base64`;
    if (text !== asText(value)) return `the ${name} header does not match the body's ${param}`;
  }
  return undefined;
}
