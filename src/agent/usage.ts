/**
 * Token usage: the `usage` object an endpoint puts in its answers (or in a stream's last chunk), read without
 * trusting it, and summed over a run.
 *
 * @module
 */
import { isRecord } from "../contract.ts";

/** The tokens of one answer (or of a whole run), as the endpoint counted them. */
export interface Usage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
  /** Of the prompt's tokens, those the endpoint served from its cache (when it says). */
  readonly cached_tokens?: number;
  /** Of the completion's tokens, those spent reasoning (when it says). */
  readonly reasoning_tokens?: number;
}

/** A count the endpoint sent, when it is one: a non-negative safe integer. */
function count(value: unknown): number | undefined {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/**
 * The usage in an answer body or a stream chunk, or `undefined` when it carries none that makes sense: a field
 * that is not a count is left out, and an answer that names neither prompt nor completion tokens has no usage.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readUsage } from "./usage.ts";
 * assert.deepEqual(readUsage({ usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 } }), { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 });
 * assert.equal(readUsage({ usage: null }), undefined);
 * ```
 */
export function readUsage(body: unknown): Usage | undefined {
  if (!isRecord(body) || !isRecord(body.usage)) return undefined;
  const raw = body.usage;
  const prompt = count(raw.prompt_tokens);
  const completion = count(raw.completion_tokens);
  if (prompt === undefined && completion === undefined) return undefined;
  const usage: { -readonly [K in keyof Usage]: Usage[K] } = {
    prompt_tokens: prompt ?? 0,
    completion_tokens: completion ?? 0,
    total_tokens: count(raw.total_tokens) ?? (prompt ?? 0) + (completion ?? 0),
  };
  const cached = isRecord(raw.prompt_tokens_details)
    ? count(raw.prompt_tokens_details.cached_tokens)
    : undefined;
  const reasoning = isRecord(raw.completion_tokens_details)
    ? count(raw.completion_tokens_details.reasoning_tokens)
    : undefined;
  if (cached !== undefined) usage.cached_tokens = cached;
  if (reasoning !== undefined) usage.reasoning_tokens = reasoning;
  return usage;
}

/** A run's usage: the sums, and how many requests there were and how many of them reported usage. */
export interface UsageTotals extends Usage {
  readonly requests: number;
  readonly requests_with_usage: number;
}

/**
 * Sums the usage of a run's answers.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { UsageMeter } from "./usage.ts";
 * const meter = new UsageMeter();
 * meter.add({ prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 });
 * meter.add(undefined); // an answer without usage
 * assert.equal(meter.totals()?.total_tokens, 12);
 * assert.equal(meter.totals()?.requests, 2);
 * ```
 */
export class UsageMeter {
  #requests = 0;
  #reported = 0;
  #prompt = 0;
  #completion = 0;
  #total = 0;
  #cached?: number;
  #reasoning?: number;

  /** Counts one answer, with its usage when it had any. */
  add(usage: Usage | undefined): void {
    this.#requests++;
    if (usage === undefined) return;
    this.#reported++;
    this.#prompt += usage.prompt_tokens;
    this.#completion += usage.completion_tokens;
    this.#total += usage.total_tokens;
    if (usage.cached_tokens !== undefined) this.#cached = (this.#cached ?? 0) + usage.cached_tokens;
    if (usage.reasoning_tokens !== undefined) {
      this.#reasoning = (this.#reasoning ?? 0) + usage.reasoning_tokens;
    }
  }

  /** The sums, or `undefined` when no answer reported usage (an endpoint that says nothing is not zero). */
  totals(): UsageTotals | undefined {
    if (this.#reported === 0) return undefined;
    return {
      prompt_tokens: this.#prompt,
      completion_tokens: this.#completion,
      total_tokens: this.#total,
      ...(this.#cached === undefined ? {} : { cached_tokens: this.#cached }),
      ...(this.#reasoning === undefined ? {} : { reasoning_tokens: this.#reasoning }),
      requests: this.#requests,
      requests_with_usage: this.#reported,
    };
  }
}

const grouped = (n: number) => n.toLocaleString("en-US");

/**
 * The totals as one line for the terminal.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { usageLine } from "./usage.ts";
 * assert.equal(usageLine({ prompt_tokens: 1200, completion_tokens: 30, total_tokens: 1230, requests: 2, requests_with_usage: 2 }), "tokens: 1,200 prompt + 30 completion = 1,230 total, over 2 requests");
 * ```
 */
export function usageLine(totals: UsageTotals): string {
  const details = [
    totals.cached_tokens === undefined ? undefined : `${grouped(totals.cached_tokens)} prompt cached`,
    totals.reasoning_tokens === undefined ? undefined : `${grouped(totals.reasoning_tokens)} reasoning`,
  ].filter((part) => part !== undefined);
  const requests = totals.requests_with_usage === totals.requests
    ? `over ${totals.requests} request${totals.requests === 1 ? "" : "s"}`
    : `over the ${totals.requests_with_usage} of ${totals.requests} requests that reported usage`;
  return `tokens: ${grouped(totals.prompt_tokens)} prompt + ${
    grouped(totals.completion_tokens)
  } completion = ` +
    `${grouped(totals.total_tokens)} total${
      details.length > 0 ? ` (${details.join(", ")})` : ""
    }, ${requests}`;
}
