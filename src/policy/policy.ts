/**
 * The one approval policy, for every caller (the agent loop, `serve`, `call` and the library): whether a prepared
 * call runs. A read-only call that stays on the machine runs freely (its tool is `readOnly` and its profile writes
 * nothing, or an MCP server's tool the user's manifest declares read-only: `risk.ts`); a call that writes, runs programs or can send data off the machine (its tool's profile allows the
 * network, whatever its `readOnly` flag) needs approval: from
 * `--yes`, from `--allow-tools`, from `--approve-hosts` when the call's destination is known and listed, from an
 * earlier "always" for the tool, or from a person asked (on a terminal, or through an MCP client's elicitation).
 * With none of those it is `rejected`; a person's no is `user_denied`.
 *
 * One piece: the order in which those approvals are tried is the policy, and its answer (`Verdict`) is made in one
 * place (house rule 4); what a call risks (`risk.ts`) and how a reason is worded (`approval_reason.ts`) are apart.
 *
 * @module
 */
import { failure, type FailureEnvelope } from "../contract.ts";
import type { PreparedCall } from "./prepared_call.ts";
import { assessCall, type CallRisk } from "./risk.ts";
import { type Destination, type HostEntry, hostListed } from "../contract/host_list.ts";
import { hostText, reasonOf } from "./approval_reason.ts";
import type { ToolSpec } from "../manifest/manifest_types.ts";
import type { SamplingRequest } from "../manifest/tool_messages.ts";
import { neutralizeControls } from "../base/terminal.ts";
import { fit } from "../base/text.ts";

/** A person's answer to an approval question. */
export type Answer = "yes" | "no" | "always";

/**
 * An approval question: the tool, why it needs approval, and the lines to show (see `approval_prompt.ts`).
 *
 * @example
 * ```ts
 * import type { ApprovalQuestion } from "./policy.ts";
 * const question: ApprovalQuestion = {
 *   tool: "exec",
 *   reason: "it may write the workspace",
 *   lines: ["toolgate: the model asks to run exec: it may write the workspace.", '  argv: ["ls"]'],
 * };
 * ```
 */
export interface ApprovalQuestion {
  /** The tool's name. */
  readonly tool: string;
  /**
   * Why the call needs approval, worded from the tool's profile, e.g. `its server "notes" may write /home/me/notes`
   * or "it can send data off the machine (to example.com)".
   */
  readonly reason: string;
  /** What to show, risky fields first (see `approvalLines`); the asker adds the question itself. */
  readonly lines: readonly string[];
}

/**
 * Asks a person; rejects when nobody could answer (the question could not be delivered, or `signal` aborted).
 *
 * @example
 * ```ts
 * import type { Ask } from "./policy.ts";
 * const alwaysNo: Ask = () => Promise.resolve("no");
 * ```
 */
export type Ask = (question: ApprovalQuestion, signal?: AbortSignal) => Promise<Answer>;

/**
 * What approved a call.
 *
 * @example
 * ```ts
 * import type { ApprovedBy } from "./policy.ts";
 * const by: ApprovedBy = "approve-hosts";
 * ```
 */
export type ApprovedBy =
  | "read-only"
  | "own-command"
  | "yes"
  | "allow-tools"
  | "approve-hosts"
  | "always"
  | "person"
  | "console";

/**
 * The policy's verdict on one call.
 *
 * @example
 * ```ts
 * import type { Verdict } from "./policy.ts";
 * const verdict: Verdict = { approved: true, by: "read-only" };
 * ```
 */
export type Verdict = { readonly approved: true; readonly by: ApprovedBy } | {
  readonly approved: false;
  readonly envelope: FailureEnvelope;
};

/**
 * What a person set up front, and who can be asked.
 *
 * @example
 * ```ts
 * import type { PolicyOptions } from "./policy.ts";
 * const options: PolicyOptions = { allowTools: ["fs_write_file"], approveHosts: [{ host: "api.example.com" }] };
 * ```
 */
export interface PolicyOptions {
  /** `--yes`: every call is approved. */
  readonly yes?: boolean;
  /** `--allow-tools`: every call of these tools is approved. */
  readonly allowTools?: Iterable<string>;
  /** `--approve-hosts`: a call that sends data only to one of these (its destination known) is approved. */
  readonly approveHosts?: Iterable<HostEntry>;
  /** The call is a person's own command (`toolgate call`, a library caller's own code): approved by definition. */
  readonly ownCommand?: boolean;
  /** Who to ask when nothing above approves (absent: nobody, the call is `rejected`). */
  readonly ask?: Ask;
  /** Masks secrets in what is shown to the person. */
  readonly redact?: (text: string) => string;
  /** The width questions are folded at. */
  readonly width?: number;
  /** Why nobody can be asked, for the refusal (default "there is no terminal to ask on"). */
  readonly nobodyToAsk?: string;
  /** How the person gives approval, for the refusal (default "rerun toolgate"). */
  readonly restart?: string;
  /**
   * Who answered a question when not the terminal (`console`: the web console), for the verdict's `by` and so the
   * audit line; `undefined`: a person (`person`).
   */
  readonly answeredBy?: (question: ApprovalQuestion) => "console" | undefined;
}

/** Per-call options of {@linkcode Policy.decide}. */
export interface DecideOptions {
  /** Who to ask for this call, instead of the policy's own `ask` (an MCP session asks its own client). */
  readonly ask?: Ask;
  /** Cancels the question. */
  readonly signal?: AbortSignal;
}

/**
 * Decides, call by call, whether a prepared call runs; remembers "always" answers for the life of the policy (one
 * agent run, one MCP session).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Policy } from "./policy.ts";
 * import { Executor } from "../run/executor.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
 * const executor = new Executor({ manifest: loaded.manifest, env: { PATH: "/usr/bin:/bin" }, cwd: ".", auditDir: null });
 * const policy = new Policy({ allowTools: ["fs_write_file"], ask: () => Promise.resolve("no") });
 * const write = await executor.prepare("fs_write_file", '{"path":"a.txt","content":"hi"}');
 * assert.ok(write.ok);
 * assert.deepEqual(await policy.decide(write.call), { approved: true, by: "allow-tools" });
 * const remove = await executor.prepare("fs_remove", '{"path":"build"}');
 * assert.ok(remove.ok);
 * const verdict = await policy.decide(remove.call); // asked, and the answer was no
 * assert.ok(!verdict.approved);
 * assert.equal(verdict.envelope.kind, "user_denied"); // what executor.refuse(call, verdict.envelope) records
 * ```
 */
export class Policy {
  readonly #options: PolicyOptions;
  readonly #allowTools: ReadonlySet<string>;
  readonly #approveHosts: readonly HostEntry[];
  /** Tools a person approved for the rest of the session. */
  readonly #always = new Set<string>();

  /** A policy with these approvals set up front, and who to ask. */
  constructor(options: PolicyOptions = {}) {
    this.#options = options;
    this.#allowTools = new Set(options.allowTools ?? []);
    this.#approveHosts = [...(options.approveHosts ?? [])];
  }

  /**
   * What, short of asking, approves the call; `undefined` when only a person can.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Policy } from "./policy.ts";
   * import { Executor } from "../run/executor.ts";
   * import { loadManifest } from "../manifest/manifest.ts";
   * const loaded = await loadManifest("tools.json");
   * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
   * const executor = new Executor({ manifest: loaded.manifest, env: { PATH: "/usr/bin:/bin" }, cwd: ".", auditDir: null });
   * const prepared = await executor.prepare("fs_remove", '{"path":"build"}');
   * assert.ok(prepared.ok);
   * assert.equal(new Policy({ yes: true }).approvedWithoutAsking(prepared.call), "yes");
   * assert.equal(new Policy({}).approvedWithoutAsking(prepared.call), undefined); // a person is asked
   * ```
   */
  /** An MCP server's tool whose server `--allow-tools` names whole (`mcp__SERVER__*`). */
  #allowedServer(call: PreparedCall): boolean {
    const server = call.tool.upstream?.server;
    return server !== undefined && this.#allowTools.has(`mcp__${server}__*`);
  }

  /**
   * Forgets the "always" answers given for `tools` (each tool's calls and its questions to the model): their
   * definitions changed (a manifest trusted again), and a person's "always" was about the one they saw.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Policy } from "./policy.ts";
   * import { Executor } from "../run/executor.ts";
   * import { loadManifest } from "../manifest/manifest.ts";
   * const loaded = await loadManifest("tools.json");
   * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
   * const executor = new Executor({ manifest: loaded.manifest, env: { PATH: "/usr/bin:/bin" }, cwd: ".", auditDir: null });
   * const prepared = await executor.prepare("fs_remove", '{"path":"build"}');
   * assert.ok(prepared.ok);
   * const policy = new Policy({ ask: () => Promise.resolve("always") });
   * assert.equal((await policy.decide(prepared.call)).approved, true);
   * assert.equal(policy.approvedWithoutAsking(prepared.call), "always");
   * policy.forget(["fs_remove"]);
   * assert.equal(policy.approvedWithoutAsking(prepared.call), undefined); // asked again
   * ```
   */
  forget(tools: readonly string[]): void {
    for (const tool of tools) {
      this.#always.delete(tool);
      this.#always.delete(`${tool}\u0000model`);
    }
  }

  /** Who approves `call` without a person: the read-only rule, `--yes`, an allow list; `undefined` when none does. */
  approvedWithoutAsking(call: PreparedCall): ApprovedBy | undefined {
    const risk = assessCall(call);
    if (!risk.changes && !risk.egress) return "read-only";
    if (this.#options.ownCommand) return "own-command";
    if (this.#options.yes) return "yes";
    if (this.#allowTools.has(call.tool.name) || this.#allowedServer(call)) return "allow-tools";
    if (!risk.changes && risk.destination && this.#hostApproved(risk.destination)) return "approve-hosts";
    if (this.#always.has(call.tool.name)) return "always";
    return undefined;
  }

  /**
   * The refusal of a call that needs approval where nobody can be asked: what it `needs`, and the flags a rerun
   * takes to approve it (`approving`).
   */
  #nobodyAsked(tool: string, needs: string, approving: string): Verdict {
    return {
      approved: false,
      envelope: failure(
        "rejected",
        `The tool ${JSON.stringify(tool)} ${needs}, but ${
          this.#options.nobodyToAsk ?? "there is no terminal to ask on"
        }; the user can ${this.#options.restart ?? "rerun toolgate"} with ${approving}.`,
        { tool, retryable: false },
      ),
    };
  }

  /** Approves the call, or says why not with the envelope to answer it with. */
  async decide(call: PreparedCall, options: DecideOptions = {}): Promise<Verdict> {
    const by = this.approvedWithoutAsking(call);
    if (by !== undefined) return { approved: true, by };
    const risk = assessCall(call);
    const reason = reasonOf(call, risk)!;
    const { tool } = call;
    const name = JSON.stringify(tool.name);
    const ask = options.ask ?? this.#options.ask;
    if (!ask) {
      return this.#nobodyAsked(
        tool.name,
        `needs the user's approval (${reason})`,
        `${this.#flagsFor(call, risk)} to approve such calls`,
      );
    }
    const question: ApprovalQuestion = {
      tool: tool.name,
      reason,
      // The prompt's wording loads only when a person is asked.
      lines: (await import("./approval_prompt.ts")).approvalLines(tool, call.args, reason, {
        redact: this.#options.redact,
        width: this.#options.width,
      }),
    };
    return await this.#asked(ask, question, options.signal, {
      tool: tool.name,
      always: tool.name,
      unanswered: `The call to ${name} needs the user's approval (${reason}), and the question got no answer`,
      denied: `The user denied the call to ${name}.`,
    });
  }

  /**
   * Whether a running tool may send text to a model (its `sample` question): the text leaves the machine and may
   * cost money, so it needs approval as an egress call does: `--yes`, `--allow-tools` naming the tool, an earlier
   * "always" for the tool's questions, or a person asked (the question shows the text, secrets masked). A
   * person's own command approves its call, not what the tool then asks.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Policy } from "./policy.ts";
   * import { loadManifest } from "../manifest/manifest.ts";
   * const loaded = await loadManifest("tools.json");
   * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
   * const tool = loaded.manifest.byName.get("http_fetch")!;
   * const request = { messages: [{ role: "user" as const, content: { type: "text" as const, text: "Sum up." } }], maxTokens: 100 };
   * assert.deepEqual(await new Policy({ allowTools: ["http_fetch"] }).decideSampling(tool, request), {
   *   approved: true,
   *   by: "allow-tools",
   * });
   * ```
   */
  async decideSampling(
    tool: ToolSpec,
    request: SamplingRequest,
    options: DecideOptions = {},
  ): Promise<Verdict> {
    if (this.#options.yes) return { approved: true, by: "yes" };
    // An MCP server's tool that `--allow-tools 'mcp__SERVER__*'` names whole: its server's questions too.
    const server = tool.upstream?.server;
    if (
      this.#allowTools.has(tool.name) || (server !== undefined && this.#allowTools.has(`mcp__${server}__*`))
    ) {
      return { approved: true, by: "allow-tools" };
    }
    const key = `${tool.name}\u0000model`;
    if (this.#always.has(key)) return { approved: true, by: "always" };
    const name = JSON.stringify(tool.name);
    const reason = "it sends text to the model (sampling): the text leaves the machine and may cost money";
    const ask = options.ask ?? this.#options.ask;
    if (!ask) {
      return this.#nobodyAsked(
        tool.name,
        "asked to send text to the model, which needs the user's approval",
        `--allow-tools ${tool.name} (or --yes) to approve it`,
      );
    }
    const redact = this.#options.redact ?? ((text: string) => text);
    const width = Math.max(40, this.#options.width ?? 100);
    const shown = request.messages.map((message) => {
      const content = message.content;
      const text = content.type === "text" && typeof content.text === "string"
        ? content.text
        : `[${content.type}]`;
      return fit(`  ${message.role}: ${neutralizeControls(redact(text)).replace(/\s+/g, " ")}`, width);
    });
    const system = request.systemPrompt === undefined
      ? []
      : [fit(`  system: ${neutralizeControls(redact(request.systemPrompt)).replace(/\s+/g, " ")}`, width)];
    const question: ApprovalQuestion = {
      tool: `${tool.name} (its question to the model)`,
      reason,
      lines: [
        `toolgate: the tool ${tool.name} asks to send this to the model (up to ${request.maxTokens} tokens back):`,
        ...system,
        ...shown,
      ],
    };
    return await this.#asked(ask, question, options.signal, {
      tool: tool.name,
      always: key,
      unanswered: `The tool ${name} asked to send text to the model, and the user's approval got no answer`,
      denied: `The user denied sending the tool ${name}'s text to the model.`,
    });
  }

  /**
   * Asks a person `question`: "always" is remembered under `words.always`; no answer is `rejected`, a no is
   * `user_denied`, each not retryable.
   */
  async #asked(
    ask: Ask,
    question: ApprovalQuestion,
    signal: AbortSignal | undefined,
    words: { tool: string; always: string; unanswered: string; denied: string },
  ): Promise<Verdict> {
    let answer: Answer;
    try {
      answer = await ask(question, signal);
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      return {
        approved: false,
        envelope: failure("rejected", `${words.unanswered}: ${why}.`, { tool: words.tool, retryable: false }),
      };
    }
    if (answer === "always") this.#always.add(words.always);
    if (answer === "yes" || answer === "always") {
      return { approved: true, by: this.#options.answeredBy?.(question) ?? "person" };
    }
    return {
      approved: false,
      envelope: failure("user_denied", words.denied, { tool: words.tool, retryable: false }),
    };
  }

  #hostApproved(destination: Destination): boolean {
    return hostListed(this.#approveHosts, destination);
  }

  /** The flags that would approve this call, for the refusal. */
  #flagsFor(call: PreparedCall, risk: CallRisk): string {
    const flags = ["--yes", `--allow-tools ${call.tool.name}`];
    if (!risk.changes && risk.destination) flags.push(`--approve-hosts ${hostText(risk.destination)}`);
    return flags.length === 2
      ? `${flags[1]} (or ${flags[0]} for every tool)`
      : `${flags[2]}, ${flags[1]} or --yes`;
  }
}

/**
 * The policy of a person's own command (`toolgate call`, and a library caller's `executor.call` without a
 * policy): the person chose this very call, so it is approved by definition.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { OWN_COMMAND } from "./policy.ts";
 * import { Executor } from "../run/executor.ts";
 * import { loadManifest } from "../manifest/manifest.ts";
 * const loaded = await loadManifest("tools.json");
 * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
 * const executor = new Executor({ manifest: loaded.manifest, env: { PATH: "/usr/bin:/bin" }, cwd: ".", auditDir: null });
 * const prepared = await executor.prepare("fs_remove", '{"path":"build"}');
 * assert.ok(prepared.ok);
 * assert.ok((await OWN_COMMAND.decide(prepared.call)).approved);
 * ```
 */
export const OWN_COMMAND: Policy = new Policy({ ownCommand: true });
