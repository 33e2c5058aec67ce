/**
 * The `store_secret` tool: answered in toolgate's own process, offered beside a manifest's tools whenever one of
 * them declares a secret. The model names the secret and says why; the person is asked (a terminal without echo
 * in the agent loop, an MCP client's form in `serve`), the value goes to the secret store and to the tools of this
 * run, and the model only ever hears `{"stored": "NAME"}`. The person's answer is the approval: nobody to ask, or
 * no value given, is `user_denied`.
 *
 * @module
 */
import { type Envelope, failure, type FailureEnvelope, isRecord, success } from "../contract.ts";
import type { Executor } from "./executor.ts";
import { STORE_SECRET } from "../manifest/manifest_types.ts";

/** The tool's name (reserved: no manifest tool may take it). */
export { STORE_SECRET };

/** The longest `reason` shown to the person. */
const MAX_REASON = 500;

/** The tool's description, for the model. */
const DESCRIPTION =
  "Ask the user for a secret a tool needs (an API key or token that is missing, expired or " +
  "refused) and store it for the tools that declare it. The user types the value; you never see it, and the " +
  'answer is only {"stored": NAME}. Call it when a tool failure names a `credential`, then retry that call.';

/**
 * The tool's argument schema.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { STORE_SECRET_SCHEMA } from "./store_secret.ts";
 * assert.deepEqual(STORE_SECRET_SCHEMA.required, ["name", "reason"]);
 * ```
 */
export const STORE_SECRET_SCHEMA = {
  type: "object",
  properties: {
    name: { type: "string", description: "The secret's name, as the failure's `credential` gives it" },
    reason: { type: "string", description: "Why it is needed, shown to the user (one sentence)" },
  },
  required: ["name", "reason"],
  additionalProperties: false,
} as const;

/**
 * The tool in OpenAI's chat-completions shape.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { storeSecretOpenAI } from "./store_secret.ts";
 * assert.equal(storeSecretOpenAI().function.name, "store_secret");
 * ```
 */
export function storeSecretOpenAI(): {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
} {
  return {
    type: "function",
    function: {
      name: STORE_SECRET,
      description: DESCRIPTION,
      parameters: structuredClone(STORE_SECRET_SCHEMA),
    },
  };
}

/**
 * The tool in MCP's `tools/list` shape.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { storeSecretMcp } from "./store_secret.ts";
 * assert.equal(storeSecretMcp().inputSchema.type, "object");
 * ```
 */
export function storeSecretMcp(): {
  name: string;
  description: string;
  inputSchema: { type: "object"; [key: string]: unknown };
  annotations: Record<string, boolean>;
} {
  return {
    name: STORE_SECRET,
    description: DESCRIPTION,
    inputSchema: structuredClone(STORE_SECRET_SCHEMA) as unknown as { type: "object" },
    annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
  };
}

/** What the person is asked: the secret's name, the model's reason, and which tools receive it. */
export interface SecretRequest {
  readonly name: string;
  /** The model's words: shown quoted, as the model's. */
  readonly reason: string;
  /** The tools that declare the secret. */
  readonly tools: readonly string[];
  /** Where the value goes: the secret store (the default), or this MCP session's memory only. */
  readonly keep?: "store" | "session";
  /** Whether the value replaces one the secret store holds already (said to the person before they answer). */
  readonly replaces?: boolean;
}

/**
 * Where a value given through `store_secret` goes: the secret store and the run's tools (the agent loop, where a
 * person typed it at a terminal; `serve --allow-store-secrets`), or one MCP session's memory (the values its
 * later calls pass in `CallOptions.secrets`), never the store.
 *
 * @example
 * ```ts
 * import type { SecretKeeping } from "./store_secret.ts";
 * const session: SecretKeeping = { kind: "session", values: new Map() };
 * ```
 */
export type SecretKeeping =
  | { readonly kind: "store" }
  | { readonly kind: "session"; readonly values: Map<string, string> };

/** Asks the person for a secret's value; `null` when they gave none (refused, gave up, nobody answered). */
export type AskSecret = (request: SecretRequest, signal?: AbortSignal) => Promise<string | null>;

/** How one `store_secret` call is answered. */
export interface StoreSecretOptions {
  readonly executor: Executor;
  /** Asks the person; absent when nobody can be asked (no terminal, an MCP client without elicitation). */
  readonly ask?: AskSecret;
  /** Why nobody can be asked, for the `user_denied` message. */
  readonly nobodyToAsk: string;
  /** Writes the value to the secret store (default: toolgate's store of the executor's environment). */
  readonly persist?: (name: string, value: string) => Promise<void>;
  /** Where the value goes (default: the store). */
  readonly keep?: SecretKeeping;
  /**
   * Whether the store holds `name` already; when given, the person is told that the value would replace it, and
   * the audit line says whether it did (default: not asked, as at a terminal, where renewing is the point).
   */
  readonly storedAlready?: (name: string) => Promise<boolean>;
  /** May refuse the call before the person is asked (the agent loop's two-rounds cap). */
  readonly admit?: (name: string) => FailureEnvelope | undefined;
  readonly signal?: AbortSignal;
}

/** The arguments, checked: a declared secret's name and a reason. */
function readArgs(
  argsText: string,
  declared: readonly string[],
): { name: string; reason: string } | FailureEnvelope {
  const invalid = (message: string, field: string, expected: string) =>
    failure("invalid_args", message, { tool: STORE_SECRET, field, expected });
  let value: unknown;
  try {
    value = argsText.trim() === "" ? {} : JSON.parse(argsText);
  } catch {
    return invalid("The arguments are not JSON.", "name", 'an object {"name": ..., "reason": ...}');
  }
  if (!isRecord(value)) return invalid("The arguments are not an object.", "name", "an object");
  const extra = Object.keys(value).find((key) => key !== "name" && key !== "reason");
  if (extra !== undefined) {
    return invalid(`Unknown argument \`${extra}\`.`, extra, "only name and reason");
  }
  const expected = declared.length > 0 ? `one of ${declared.join(", ")}` : "a secret some tool declares";
  if (typeof value.name !== "string") return invalid("Missing required argument `name`.", "name", expected);
  const name = value.name.trim().toUpperCase();
  if (!declared.includes(name)) {
    // Only a secret a tool receives: a model may not collect values no tool asked for.
    return invalid(
      `No tool declares a secret named ${JSON.stringify(value.name)}; only those can be stored.`,
      "name",
      expected,
    );
  }
  if (typeof value.reason !== "string" || value.reason.trim() === "") {
    return invalid("Missing required argument `reason`.", "reason", "a sentence saying why it is needed");
  }
  return { name, reason: value.reason.trim().slice(0, MAX_REASON) };
}

/**
 * Answers one `store_secret` call: checks it, asks the person, stores the value and gives it to this run's tools.
 * The envelope never holds the value; the call is audited like any other (its arguments digested, never written).
 *
 * @example Not run as a doc test: it needs an executor and a person to ask.
 * ```ts ignore
 * import { answerStoreSecret } from "./store_secret.ts";
 * await answerStoreSecret('{"name":"GITHUB_TOKEN","reason":"the token expired"}', { executor, ask, nobodyToAsk: "no terminal" });
 * // { ok: true, result: { stored: "GITHUB_TOKEN" }, tool: "store_secret" }
 * ```
 */
export async function answerStoreSecret(argsText: string, options: StoreSecretOptions): Promise<Envelope> {
  const { executor } = options;
  const args = readArgs(argsText, executor.declaredSecrets);
  if ("ok" in args) return await executor.recordInProcess(STORE_SECRET, argsText, args);
  const refused = options.admit?.(args.name);
  if (refused !== undefined) return await executor.recordInProcess(STORE_SECRET, argsText, refused);
  if (options.ask === undefined) {
    return await executor.recordInProcess(
      STORE_SECRET,
      argsText,
      failure("user_denied", `Nobody can be asked for ${args.name}: ${options.nobodyToAsk}.`, {
        tool: STORE_SECRET,
        credential: args.name,
      }),
    );
  }
  const tools = executor.manifest.tools.filter((tool) => tool.secrets.includes(args.name)).map((t) => t.name);
  const keep = options.keep ?? { kind: "store" };
  const replaces = keep.kind === "store" ? await options.storedAlready?.(args.name) : undefined;
  const value = await options.ask(
    { name: args.name, reason: args.reason, tools, keep: keep.kind, replaces },
    options.signal,
  );
  if (value === null || value === "") {
    return await executor.recordInProcess(
      STORE_SECRET,
      argsText,
      failure("user_denied", `The user gave no value for ${args.name}.`, {
        tool: STORE_SECRET,
        credential: args.name,
      }),
    );
  }
  if (keep.kind === "session") {
    // This session's calls get it, and every redaction masks it; the store and the other sessions never see it.
    keep.values.set(args.name, value);
    executor.maskSecret(value);
    return await executor.recordInProcess(
      STORE_SECRET,
      argsText,
      success({ stored: args.name }, {
        tool: STORE_SECRET,
        warnings: ["the secret is kept in this MCP session's memory only, for its later calls"],
      }),
      { secret: args.name, kept: "session" },
    );
  }
  // The run's tools and its redaction have it first: even when the store cannot keep it, it never leaks.
  executor.useSecret(args.name, value);
  const warnings: string[] = [];
  let kept = "store";
  try {
    await (options.persist ?? defaultPersist(executor))(args.name, value);
  } catch (error) {
    kept = "run";
    warnings.push(
      `the secret is kept for this run only: the secret store cannot keep it (${(error as Error).message})`,
    );
  }
  const facts: Record<string, string | boolean> = { secret: args.name, kept };
  if (replaces !== undefined) facts.replaced = replaces && kept === "store";
  return await executor.recordInProcess(
    STORE_SECRET,
    argsText,
    success({ stored: args.name }, { tool: STORE_SECRET, warnings }),
    facts,
  );
}

/**
 * Whether toolgate's store of the executor's environment holds `name` (no key is needed: names are in clear); a
 * store that cannot be read holds nothing.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { inStore } from "./store_secret.ts";
 * import { Executor } from "./executor.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
 * const home = await Deno.makeTempDir(); // a HOME where `toolgate secrets set GITHUB_TOKEN` never ran
 * const executor = new Executor({ manifest: loaded.manifest, env: { HOME: home }, cwd: ".", auditDir: null });
 * assert.equal(await inStore(executor)("GITHUB_TOKEN"), false);
 * ```
 */
export function inStore(executor: Executor): (name: string) => Promise<boolean> {
  return async (name) => {
    const { SecretStore } = await import("../state/secret_store.ts");
    try {
      return new SecretStore({ env: executor.environment }).list().some((entry) => entry.name === name);
    } catch {
      return false;
    }
  };
}

/** Writes to toolgate's store of the executor's environment (its module loads at the first value). */
function defaultPersist(executor: Executor): (name: string, value: string) => Promise<void> {
  return async (name, value) => {
    const { SecretStore } = await import("../state/secret_store.ts");
    await new SecretStore({ env: executor.environment }).set(name, value);
  };
}
