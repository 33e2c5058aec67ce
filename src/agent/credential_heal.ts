/**
 * Credential auto-heal, the agent loop's rule: a tool failure that names a secret (its envelope's `credential`, or
 * the usual signs of a refused key in its message for a tool that declares exactly one secret) tells the model,
 * in the envelope, which secret to renew with `store_secret` and to retry; at most two `store_secret` rounds per
 * failing tool per turn, then `store_secret` answers `user_denied` without asking anyone.
 *
 * @module
 */
import {
  type Envelope,
  failure,
  type FailureEnvelope,
  withCredential,
  withRetryable,
  withWarnings,
} from "../contract.ts";
import type { Executor } from "../run/executor.ts";
import type { ToolSpec } from "../manifest/manifest_types.ts";
import { answerStoreSecret, type AskSecret, STORE_SECRET } from "../run/store_secret.ts";

/** The most `store_secret` rounds per failing tool per turn. */
export const MAX_SECRET_ROUNDS = 2;

/** Failures that are never about a credential, whatever their message says. */
const NOT_CREDENTIAL: ReadonlySet<string> = new Set(["invalid_args", "tool_not_found", "user_denied"]);

/** The usual signs of a missing, refused or expired credential in a failure's message. */
const REFUSED_CREDENTIAL =
  /\b(?:401|403)\b|\bunauthori[sz]ed\b|\bforbidden\b|\binvalid[ _-]?api[ _-]?key\b|\bexpired[ _-]?token\b|\btoken (?:has )?expired\b|\b(?:bad|invalid) credentials?\b/i;

/**
 * The secret a failure is about, or `undefined`: its `credential` when the tool declares that secret, else the
 * tool's one secret when the message shows the signs of a refused credential (HTTP 401 or 403, "invalid api key",
 * "expired token", ...).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { failure } from "../contract.ts";
 * import { validateManifest } from "../manifest/manifest.ts";
 * import { credentialOf } from "./credential_heal.ts";
 * const loaded = validateManifest(
 *   { tools: [{ name: "gh_issues", command: ["./tools/bin/gh_issues"], secrets: ["GITHUB_TOKEN"] }] },
 *   "/srv/tools.json",
 * );
 * assert.ok(loaded.ok);
 * const tool = loaded.manifest.tools[0];
 * assert.equal(credentialOf(failure("execution_error", "HTTP 401 Unauthorized"), tool), "GITHUB_TOKEN");
 * ```
 */
export function credentialOf(envelope: Envelope, tool: ToolSpec | undefined): string | undefined {
  if (envelope.ok || tool === undefined) return undefined;
  // A credential bound to hosts is a secret the tool declares too (a 401 from its host is about it).
  const secrets = [...tool.secrets, ...tool.credentials.map((c) => c.secret)];
  if (secrets.length === 0) return undefined;
  // The call never reached the tool's service: its arguments, its name or the person said no.
  if (NOT_CREDENTIAL.has(envelope.kind)) return undefined;
  const named = envelope.credential;
  if (typeof named === "string") return secrets.includes(named) ? named : undefined;
  if (secrets.length !== 1) return undefined;
  return REFUSED_CREDENTIAL.test(envelope.message) ? secrets[0] : undefined;
}

/**
 * The auto-heal state of one turn (one run of the loop): which tool last failed for want of each secret, and how
 * many `store_secret` rounds each failing tool has had.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CredentialHeal } from "./credential_heal.ts";
 * const heal = new CredentialHeal(); // heal.annotate(envelope, tool): a credential failure learns what to do
 * assert.equal(heal.admit("GITHUB_TOKEN"), undefined); // the person may be asked
 * assert.equal(heal.admit("GITHUB_TOKEN"), undefined); // once more
 * assert.equal(heal.admit("GITHUB_TOKEN")?.kind, "user_denied"); // and no further
 * ```
 */
export class CredentialHeal {
  /** The secret's name -> the tool that last failed for want of it. */
  readonly #failing = new Map<string, string>();
  /** The failing tool (or, for a secret asked for before any failure, the secret) -> rounds so far. */
  readonly #rounds = new Map<string, number>();

  /**
   * A failure about a secret comes back with `credential` set and a warning telling the model to call
   * `store_secret` and retry; once the tool's rounds are spent, it says to stop and tell the user instead.
   */
  annotate(envelope: Envelope, tool: ToolSpec | undefined): Envelope {
    const name = credentialOf(envelope, tool);
    if (name === undefined || envelope.ok || tool === undefined) return envelope;
    this.#failing.set(name, tool.name);
    const named = withCredential(envelope, name);
    if ((this.#rounds.get(tool.name) ?? 0) >= MAX_SECRET_ROUNDS) {
      return withRetryable(
        withWarnings(named, [
          `the secret ${name} was renewed ${MAX_SECRET_ROUNDS} times in this turn and ${tool.name} still fails: ` +
          `do not call ${STORE_SECRET} again; tell the user that ${name} is refused`,
        ]),
        false,
      );
    }
    const told = withWarnings(named, [
      `the secret ${name} is missing or was refused: call ${STORE_SECRET} with ` +
      `{"name":"${name}","reason":"<why ${tool.name} needs it>"} to ask the user for a new value (you never ` +
      `see it), then retry this call`,
    ]);
    // A tool with side effects that started may have acted before it was refused: its retryable stays as the
    // run's envelope says (false), whatever the warning invites.
    return tool.readOnly ? withRetryable(told, true) : told;
  }

  /**
   * Counts a `store_secret` round for `name` against the tool that failed for want of it; `undefined` when the
   * person may be asked, else the `user_denied` envelope to answer with.
   */
  admit(name: string): FailureEnvelope | undefined {
    const tool = this.#failing.get(name);
    const key = tool ?? `secret:${name}`;
    const rounds = this.#rounds.get(key) ?? 0;
    if (rounds >= MAX_SECRET_ROUNDS) {
      return failure(
        "user_denied",
        `${STORE_SECRET} already asked the user for ${name} ${MAX_SECRET_ROUNDS} times in this turn` +
          `${
            tool === undefined ? "" : ` for ${tool}`
          }; the user is not asked again. Tell the user that ${name} ` +
          `is refused.`,
        { tool: STORE_SECRET, credential: name },
      );
    }
    this.#rounds.set(key, rounds + 1);
    return undefined;
  }
}

/** The loop's `store_secret`: who is asked, and the turn's auto-heal state. */
export interface LoopSecrets {
  /** Asks the person (a terminal without echo); absent when nobody can be asked. */
  readonly ask?: AskSecret;
  /** Why nobody can be asked, when `ask` is absent. */
  readonly nobodyToAsk: string;
  /** The auto-heal state of this turn. */
  readonly heal: CredentialHeal;
  /** Writes a value to the secret store (default: toolgate's store). */
  readonly persist?: (name: string, value: string) => Promise<void>;
}

/**
 * Answers the loop's `store_secret` call within the turn's cap.
 *
 * @example Not run as a doc test: it needs an executor and a person to ask.
 * ```ts ignore
 * import { answerSecretCall, CredentialHeal } from "./credential_heal.ts";
 * await answerSecretCall(call.function.arguments, executor, { heal: new CredentialHeal(), nobodyToAsk: "no terminal" });
 * ```
 */
export function answerSecretCall(
  argsText: string,
  executor: Executor,
  secrets: LoopSecrets,
): Promise<Envelope> {
  return answerStoreSecret(argsText, {
    executor,
    ask: secrets.ask,
    nobodyToAsk: secrets.nobodyToAsk,
    persist: secrets.persist,
    admit: (name) => secrets.heal.admit(name),
  });
}
