/**
 * The envelope's types: the failure kinds with their default `retryable`, the failure envelope's JSON Schema,
 * and the success and failure shapes. Re-exported by `src/contract.ts`, the contract's face.
 *
 * @module
 */

/**
 * The failure kinds, each with the default `retryable` a model should assume.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { FAILURE_KINDS } from "../contract.ts";
 * assert.ok(FAILURE_KINDS.timeout); // a timeout may pass on a retry
 * assert.equal(FAILURE_KINDS.rejected, false);
 * ```
 */
export const FAILURE_KINDS = {
  invalid_args: true,
  rejected: false,
  user_denied: false,
  timeout: true,
  execution_error: true,
  not_found: false,
  unavailable: true,
  tool_not_found: false,
} as const;

/**
 * The JSON Schema of a failure envelope (draft-07): `ok: false`, a known `kind`, a `message` and `retryable`,
 * with `field`, `expected`, `tool` and `credential` when present, and any metadata besides. The MCP server admits it beside a
 * tool's own `outputSchema`, since a failure's `structuredContent` is the envelope.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { FAILURE_ENVELOPE_SCHEMA } from "../contract.ts";
 * assert.deepEqual(FAILURE_ENVELOPE_SCHEMA.required, ["ok", "kind", "message", "retryable"]);
 * ```
 */
export const FAILURE_ENVELOPE_SCHEMA: {
  readonly type: "object";
  readonly properties: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  readonly required: readonly string[];
} = Object.freeze({
  type: "object",
  properties: Object.freeze({
    ok: Object.freeze({ const: false }),
    kind: Object.freeze({ type: "string", enum: Object.freeze(Object.keys(FAILURE_KINDS)) }),
    message: Object.freeze({ type: "string" }),
    retryable: Object.freeze({ type: "boolean" }),
    field: Object.freeze({ type: "string" }),
    expected: Object.freeze({ type: "string" }),
    tool: Object.freeze({ type: "string" }),
    credential: Object.freeze({ type: "string" }),
    denials: Object.freeze({
      type: "array",
      items: Object.freeze({
        type: "object",
        properties: Object.freeze({
          kind: Object.freeze({
            type: "string",
            enum: Object.freeze(["syscall", "path", "host", "credential"]),
          }),
          target: Object.freeze({ type: "string" }),
          rule: Object.freeze({ type: "string" }),
          inferred: Object.freeze({ type: "boolean" }),
        }),
        required: Object.freeze(["kind", "target", "rule"]),
      }),
    }),
  }),
  required: Object.freeze(["ok", "kind", "message", "retryable"]),
});

/**
 * A failure classification the agent loop routes on.
 *
 * @example
 * ```ts
 * import type { FailureKind } from "../contract.ts";
 * const kind: FailureKind = "not_found";
 * ```
 */
export type FailureKind = keyof typeof FAILURE_KINDS;

/**
 * A JSON value as it crosses a process boundary.
 *
 * @example
 * ```ts
 * import type { JsonValue } from "../contract.ts";
 * const value: JsonValue = { path: "a.txt", lines: [1, 2], binary: false };
 * ```
 */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * The success shape: `ok: true` and the tool's payload.
 *
 * @example
 * ```ts
 * import { success, type SuccessEnvelope } from "../contract.ts";
 * const envelope: SuccessEnvelope = success({ size: 123 }, { tool: "fs_stat", warnings: ["slow disk"] });
 * ```
 */
export interface SuccessEnvelope {
  /** Always `true`. */
  readonly ok: true;
  /** The tool's payload: any JSON value (`null` when the tool gave none). */
  readonly result: unknown;
  /** The tool's name. */
  readonly tool?: string;
  /** Non-fatal notes the model should read. */
  readonly warnings?: readonly string[];
  /** MCP content blocks the tool answered (toolgate/1 tools), in their order, beside or instead of `result`. */
  readonly content?: readonly ContentBlock[];
  /** What toolgate refused the tool while it ran (see {@linkcode Denial}); absent when nothing was. */
  readonly denials?: readonly Denial[];
}

/**
 * What a denial refused: a kernel call the sandbox's seccomp filter refuses (`syscall`), a path the sandbox does not
 * show (`path`), a host the profile does not list (`host`), a credential's placeholder sent where it may not go
 * (`credential`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DENIAL_KINDS, type DenialKind } from "../contract.ts";
 * const kind: DenialKind = "host";
 * assert.ok(DENIAL_KINDS.includes(kind));
 * ```
 */
export type DenialKind = "syscall" | "path" | "host" | "credential";

/**
 * Every {@linkcode DenialKind}, in the order the docs list them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DENIAL_KINDS } from "../contract.ts";
 * assert.deepEqual(DENIAL_KINDS, ["syscall", "path", "host", "credential"]);
 * ```
 */
export const DENIAL_KINDS: readonly DenialKind[] = Object.freeze(["syscall", "path", "host", "credential"]);

/**
 * One refusal toolgate decided during a call, typed so that a model can tell "not allowed here" from "failed" and
 * a person can widen the profile knowingly: what kind of thing, which one, and the rule that refused it.
 * `inferred` marks a denial read from the tool's own words (its stderr) rather than known by toolgate.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { Denial } from "../contract.ts";
 * const denial: Denial = { kind: "host", target: "evil.example:443", rule: "profile net" };
 * assert.equal(denial.inferred, undefined);
 * ```
 */
export interface Denial {
  /** What kind of thing was refused. */
  readonly kind: DenialKind;
  /** Which one: a syscall's name, an absolute path, `host:port`. */
  readonly target: string;
  /** The rule that refused it: `seccomp: namespaces`, `profile read`, `profile net`, `credential GITHUB_TOKEN`... */
  readonly rule: string;
  /** `true` when toolgate read the denial from the tool's stderr (an `EPERM` it reported), not from its own decision. */
  readonly inferred?: boolean;
}

/**
 * One MCP content block as a tool answers it: `text`, `image` or `audio` (base64 `data` and a `mimeType`),
 * `resource` (an embedded resource) or `resource_link`, checked by `tool_protocol.ts` before it gets here.
 *
 * @example
 * ```ts
 * import type { ContentBlock } from "../contract.ts";
 * const block: ContentBlock = { type: "text", text: "hello" };
 * ```
 */
export interface ContentBlock {
  /** The block's kind, as MCP names it. */
  readonly type: "text" | "image" | "audio" | "resource" | "resource_link";
  /** The kind's own fields (`text`; `data` and `mimeType`; `resource`; `uri` and `name`; `annotations`...). */
  readonly [field: string]: unknown;
}

/**
 * The failure shape: `ok: false`, a kind, a message and whether a retry might succeed, plus metadata.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { failure, type FailureEnvelope } from "../contract.ts";
 * const envelope: FailureEnvelope = failure("execution_error", "exit status 3", { metadata: { exit_code: 3 } });
 * assert.equal(envelope.exit_code, 3);
 * ```
 */
export interface FailureEnvelope {
  /** Always `false`. */
  readonly ok: false;
  /** The classification a caller routes on. */
  readonly kind: FailureKind;
  /** The explanation, for people and models alike. */
  readonly message: string;
  /** Whether a retry might succeed (defaulted by kind, see {@linkcode FAILURE_KINDS}). */
  readonly retryable: boolean;
  /** The offending argument, for `invalid_args`. */
  readonly field?: string;
  /** What the argument should look like. */
  readonly expected?: string;
  /** The tool's name. */
  readonly tool?: string;
  /**
   * The secret (by name, never by value) that is missing or was refused: the caller may ask the person for a new
   * one (`store_secret`) and retry.
   */
  readonly credential?: string;
  /** An MCP server's content blocks beside its `isError` answer (see `withContent`). */
  readonly content?: readonly ContentBlock[];
  /** What toolgate refused the tool while it ran (see {@linkcode Denial}); absent when nothing was. */
  readonly denials?: readonly Denial[];
  /** Extra facts about the failure: `exit_code`, `signal`, `cancelled`, `timeout_sec`, ... */
  readonly [metadata: string]: unknown;
}

/**
 * Either envelope; discriminate on `ok`.
 *
 * @example
 * ```ts
 * import type { Envelope } from "../contract.ts";
 * function describe(envelope: Envelope): string {
 *   return envelope.ok ? "done" : `${envelope.kind}: ${envelope.message}`;
 * }
 * ```
 */
export type Envelope = SuccessEnvelope | FailureEnvelope;
/**
 * Is `value` a known failure kind?
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isFailureKind } from "../contract.ts";
 * assert.ok(isFailureKind("timeout"));
 * assert.equal(isFailureKind("oops"), false);
 * ```
 */
export function isFailureKind(value: unknown): value is FailureKind {
  return typeof value === "string" && Object.hasOwn(FAILURE_KINDS, value);
}
