/**
 * One approval question put to several people at once (the terminal and the web console): the first answer wins,
 * the other questions are withdrawn, and who answered is remembered per question for the audit line. A side that
 * cannot answer (its question failed or timed out) leaves it to the others.
 *
 * @module
 */
import type { Answer, ApprovalQuestion, Ask } from "./policy.ts";

/** One side that can be asked, by name (`terminal`, `console`, `client`). */
export interface Asker {
  readonly name: string;
  readonly ask: Ask;
}

/** The sides raced as one {@linkcode Ask}, and who answered each question. */
export interface FirstAnswer {
  readonly ask: Ask;
  /** The name of the side that answered `question` (the very object asked), `undefined` before or without one. */
  answeredBy(question: ApprovalQuestion): string | undefined;
}

/**
 * Races `sides`: the first to answer wins and the others' questions are withdrawn (their signal aborts); when
 * every side fails, the last failure is the answer's.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { firstAnswer } from "./first_answer.ts";
 * const never = () => new Promise<"yes">(() => {});
 * const race = firstAnswer([{ name: "terminal", ask: never }, { name: "console", ask: () => Promise.resolve("yes") }]);
 * const question = { tool: "exec", reason: "it runs programs", lines: [] };
 * assert.equal(await race.ask(question), "yes");
 * assert.equal(race.answeredBy(question), "console");
 * ```
 */
export function firstAnswer(sides: readonly Asker[]): FirstAnswer {
  const by = new WeakMap<ApprovalQuestion, string>();
  const ask: Ask = async (question, signal) => {
    const withdraw = new AbortController();
    const both = signal ? AbortSignal.any([signal, withdraw.signal]) : withdraw.signal;
    try {
      return await Promise.any(sides.map(async (side): Promise<Answer> => {
        const answer = await side.ask(question, both);
        if (!by.has(question)) by.set(question, side.name);
        return answer;
      }));
    } catch (error) {
      throw error instanceof AggregateError ? error.errors.at(-1) : error;
    } finally {
      withdraw.abort();
    }
  };
  return { ask, answeredBy: (question) => by.get(question) };
}
