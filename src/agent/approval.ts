/**
 * Approval of calls to tools that are not read-only: asked on the terminal (yes / no / always for this tool),
 * granted wholesale by `--yes`, and refused with a message naming `--yes` when there is no terminal to ask on.
 *
 * @module
 */
import { failure, type FailureEnvelope } from "../contract.ts";
import type { PreparedCall } from "../executor.ts";

/** Asks the user one question and returns the line they typed, or `null` when input ended. */
export type Ask = (question: string) => Promise<string | null>;

/** The approver's verdict on one call. */
export type Approval = { readonly approved: true } | {
  readonly approved: false;
  readonly envelope: FailureEnvelope;
};

/** How an {@linkcode Approver} decides. */
export interface ApproverOptions {
  /** `--yes`: approve every call without asking. */
  readonly yes: boolean;
  /** Is there a terminal to ask on? */
  readonly interactive: boolean;
  /** Asks on the terminal; required when `interactive`. */
  readonly ask?: Ask;
  /** Masks secrets in the arguments shown. */
  readonly redact?: (text: string) => string;
}

/** The most characters of a call's arguments shown in the question. */
export const SHOWN_ARGS_LIMIT = 300;
/** After this many answers that are not yes, no or always, the call is denied. */
const MAX_ASKS = 3;

const YES = new Set(["y", "yes"]);
const NO = new Set(["n", "no", ""]);
const ALWAYS = new Set(["a", "always"]);

/**
 * Decides, call by call, whether a prepared call may run.
 *
 * @example
 * ```ts
 * import { Approver } from "./approval.ts";
 * const approver = new Approver({ yes: false, interactive: true, ask: () => Promise.resolve("always") });
 * // (await approver.decide(call)).approved; // true, and later calls of that tool are not asked about
 * ```
 */
export class Approver {
  readonly #options: ApproverOptions;
  /** Tools the user approved for the rest of the session. */
  readonly #always = new Set<string>();

  constructor(options: ApproverOptions) {
    this.#options = options;
  }

  /** Read-only tools pass; others need `--yes`, an earlier "always", or a yes on the terminal. */
  async decide(call: PreparedCall): Promise<Approval> {
    const { tool } = call;
    if (tool.readOnly || this.#options.yes || this.#always.has(tool.name)) return { approved: true };
    const name = JSON.stringify(tool.name);
    if (!this.#options.interactive || !this.#options.ask) {
      return {
        approved: false,
        envelope: failure(
          "rejected",
          `The tool ${name} is not read-only and needs the user's approval, but there is no terminal to ask on; ` +
            `the user can rerun toolgate with --yes to approve such calls.`,
          { tool: tool.name },
        ),
      };
    }
    const question = this.#question(call);
    for (let i = 0; i < MAX_ASKS; i++) {
      const line = await this.#options.ask(
        i === 0 ? question : "Please answer y (yes), n (no) or a (always): ",
      );
      const answer = line === null ? "" : line.trim().toLowerCase();
      if (YES.has(answer)) return { approved: true };
      if (ALWAYS.has(answer)) {
        this.#always.add(tool.name);
        return { approved: true };
      }
      if (NO.has(answer) || line === null) break;
    }
    return {
      approved: false,
      envelope: failure("user_denied", `The user denied the call to ${name}.`, { tool: tool.name }),
    };
  }

  #question(call: PreparedCall): string {
    let args = JSON.stringify(call.args);
    if (this.#options.redact) args = this.#options.redact(args);
    if (args.length > SHOWN_ARGS_LIMIT) args = args.slice(0, SHOWN_ARGS_LIMIT) + "…";
    return `toolgate: run ${call.tool.name} ${args}? [y]es / [n]o / [a]lways for ${call.tool.name}: `;
  }
}

/**
 * Asks on the terminal: the question on stderr (never stdout, which holds the answer), one line from stdin.
 *
 * @example
 * ```ts
 * import { terminalAsk } from "./approval.ts";
 * const ask = terminalAsk((text) => Deno.stderr.write(new TextEncoder().encode(text)).then(() => {}));
 * // const line = await ask("Proceed? ");
 * ```
 */
export function terminalAsk(
  write: (text: string) => Promise<void>,
  stdin: { read(buffer: Uint8Array): Promise<number | null> } = Deno.stdin,
): Ask {
  const decoder = new TextDecoder();
  return async (question) => {
    await write(question);
    const buffer = new Uint8Array(1024);
    let line = "";
    while (true) {
      const n = await stdin.read(buffer);
      if (n === null) return line === "" ? null : line;
      line += decoder.decode(buffer.subarray(0, n), { stream: true });
      const end = line.indexOf("\n");
      if (end !== -1) return line.slice(0, end).replace(/\r$/, "");
    }
  };
}
