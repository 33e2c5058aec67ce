/**
 * The secrets of one executor: those of toolgate's store, those a person gave since (`store_secret`), and the
 * environment's; which a tool receives (as variables, or as bound credentials the egress proxy swaps), and the
 * redactors that take every secret value out of what leaves the executor. Not here: reading the store
 * (src/state/secret_store.ts), the redaction itself (src/state/redact.ts).
 *
 * @module
 */
import type { Envelope } from "../contract.ts";
import { type CallCredential, newPlaceholder } from "../manifest/credentials.ts";
import type { Manifest, ToolSpec } from "../manifest/manifest_types.ts";
import { RUN_NOTES } from "../process/run_envelope.ts";
import type { ControlPlane } from "../sandbox/control_plane.ts";
import { FALLBACK_PATH } from "../sandbox/tool_launch.ts";
import { redactionFor, type Redactor, scrubEnvelope } from "../state/redact.ts";

/**
 * The secrets an executor knows, and its redactors.
 *
 * @example
 * ```ts
 * import { CallSecrets } from "./call_secrets.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * if (loaded.ok) {
 *   const secrets = new CallSecrets({ PATH: "/usr/bin:/bin" }, loaded.manifest, {});
 *   secrets.use("GITHUB_TOKEN", "ghp_0123456789abcdef");
 *   secrets.redact("token ghp_0123456789abcdef"); // the value no longer shows
 * }
 * ```
 */
export class CallSecrets {
  readonly #env: Readonly<Record<string, string>>;
  readonly #manifest: Manifest;
  #redact!: Redactor;
  /** The secret values alone (no patterns), taken out of every envelope handed back; none: none. */
  #scrub?: Redactor;
  /** The stored secrets, by name: those of the store at start, and those a person gave since (`store_secret`). */
  readonly #stored: Map<string, string>;
  /** Every stored value this executor has held, a replaced one included: a renewed key is still a secret. */
  readonly #storedValues = new Set<string>();

  /**
   * The secrets of `env`, of the tools and servers `manifest` declares, and of the store (`stored`). Throws a
   * `SyntaxError` when `TOOLGATE_REDACT` holds a pattern that does not compile.
   */
  constructor(
    env: Readonly<Record<string, string>>,
    manifest: Manifest,
    stored: Readonly<Record<string, string>>,
  ) {
    this.#env = env;
    this.#manifest = manifest;
    this.#stored = new Map(Object.entries(stored));
    this.#makeRedactors();
  }

  /**
   * The redactors from every secret value: the environment's secret variables (by name, or named in
   * `TOOLGATE_REDACT`), the declared secret names' values, and the stored secrets. A passthrough variable is not
   * a secret for being passed (`TZ` shows as it is).
   */
  #makeRedactors(): void {
    const manifest = this.#manifest;
    const declared = [
      ...manifest.tools.flatMap((tool) => [...tool.secrets, ...tool.credentials.map((c) => c.secret)]),
      ...(manifest.servers ?? []).flatMap((
        server,
      ) => [...server.secrets, ...server.credentials.map((c) => c.secret)]),
    ];
    for (const value of this.#stored.values()) this.#storedValues.add(value);
    // toolgate's own notes on a run's envelope are never masked, whatever words a secret shares with them.
    ({ redact: this.#redact, scrub: this.#scrub } = redactionFor(
      this.#env,
      declared,
      this.#storedValues,
      RUN_NOTES,
    ));
  }

  /** The secret values alone, for what a tool sends as it runs (its events, its questions); none: none. */
  get scrub(): Redactor | undefined {
    return this.#scrub;
  }

  /** Redacts text with every secret known so far, as the audit log does. */
  redact(text: string): string {
    return this.#redact(text);
  }

  /** Takes a secret a person just gave: the tools that declare `name` receive it, and its value is redacted. */
  use(name: string, value: string): void {
    this.#stored.set(name, value);
    this.#makeRedactors();
  }

  /** Masks `value` everywhere from now on, without giving it to any tool. */
  mask(value: string): void {
    this.#storedValues.add(value);
    this.#makeRedactors();
  }

  /** A secret's value for a server or a tool: the store's, then the environment's; `undefined` when neither. */
  value(name: string): string | undefined {
    return this.#stored.get(name) ?? this.#env[name];
  }

  /** The first secret `tool` declares that is neither the caller's (`own`), stored, nor in the environment. */
  missing(tool: ToolSpec, own?: ReadonlyMap<string, string>): string | undefined {
    return [...tool.secrets, ...tool.credentials.map((c) => c.secret)].find((name) =>
      !own?.has(name) && !this.#stored.has(name) && this.#env[name] === undefined
    );
  }

  /**
   * The child's whole environment: PATH, HOME, and the tool's passthrough names that are set; a built-in tool
   * also learns the control plane, which its file operations refuse to touch even when it runs unconfined.
   */
  toolEnv(
    tool: ToolSpec,
    controlPlane: ControlPlane,
    own?: ReadonlyMap<string, string>,
  ): Record<string, string> {
    const parent = this.#env;
    const env: Record<string, string> = { PATH: parent.PATH ?? FALLBACK_PATH };
    if (parent.HOME !== undefined) env.HOME = parent.HOME;
    for (const name of tool.envPassthrough) if (parent[name] !== undefined) env[name] = parent[name];
    // A declared secret: the caller's own first (an MCP session's), the store's, then the environment's (the call
    // was refused when none).
    for (const name of tool.secrets) {
      const value = own?.get(name) ?? this.#stored.get(name) ?? parent[name];
      if (value !== undefined) env[name] = value;
    }
    if (tool.builtin !== undefined) env.TOOLGATE_PROTECTED = JSON.stringify(controlPlane);
    return env;
  }

  /**
   * The call's bound credentials: each secret's value (as `toolEnv` finds one) with a placeholder new for this
   * call; the tool sees only the placeholder, the egress proxy swaps it.
   */
  credentials(tool: ToolSpec, own?: ReadonlyMap<string, string>): CallCredential[] {
    return tool.credentials.flatMap((binding) => {
      const value = own?.get(binding.secret) ?? this.#stored.get(binding.secret) ?? this.#env[binding.secret];
      return value === undefined || value === "" ? [] : [{ binding, value, placeholder: newPlaceholder() }];
    });
  }

  /**
   * Every envelope the executor hands back passes here: the values of secret variables (a passthrough variable a
   * tool printed, a key in an error) never reach a model or an MCP client, whichever caller asked.
   */
  forCaller<E extends Envelope>(envelope: E): E {
    return this.#scrub ? scrubEnvelope(envelope, this.#scrub) : envelope;
  }
}
