/**
 * Asking a person on the terminal: the approval question on stderr (never stdout, which holds the answer), one
 * line read from stdin, yes / no / always for this tool.
 *
 * @module
 */
import type { Ask } from "./policy.ts";

/**
 * Writes a question and returns the line typed, or `null` when input ended; rejects when `signal` aborts (the
 * question was answered elsewhere, in the web console).
 */
export type ReadLine = (question: string, signal?: AbortSignal) => Promise<string | null>;

/** After this many answers that are not yes, no or always, the call is denied. */
const MAX_ASKS = 3;

const YES = new Set(["y", "yes"]);
const NO = new Set(["n", "no", ""]);
const ALWAYS = new Set(["a", "always"]);

/**
 * Reads one line from `stdin` after writing the question.
 *
 * @example Not run as a doc test: it reads a line at the terminal.
 * ```ts ignore
 * import { terminalReadLine } from "./ask.ts";
 * const readLine = terminalReadLine((text) => Deno.stderr.write(new TextEncoder().encode(text)).then(() => {}));
 * const line = await readLine("Proceed? ");
 * ```
 */
export function terminalReadLine(
  write: (text: string) => Promise<void>,
  stdin: { read(buffer: Uint8Array): Promise<number | null> } = Deno.stdin,
): ReadLine {
  const decoder = new TextDecoder();
  const buffer = new Uint8Array(1024);
  // A read of stdin cannot be called off: one withdrawn question leaves its read pending, and the next question
  // takes it over (so that no two reads of stdin ever race).
  let pending: Promise<number | null> | undefined;
  return async (question, signal) => {
    signal?.throwIfAborted();
    await write(question);
    let line = "";
    while (true) {
      pending ??= stdin.read(buffer);
      const n = await withdrawable(pending, signal);
      pending = undefined;
      if (n === null) return line === "" ? null : line;
      line += decoder.decode(buffer.subarray(0, n), { stream: true });
      const end = line.indexOf("\n");
      if (end !== -1) return line.slice(0, end).replace(/\r$/, "");
    }
  };
}

/** `promise`, or a rejection as soon as `signal` aborts (the promise itself goes on). */
function withdrawable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason ?? new Error("the question was withdrawn"));
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/**
 * The line left on the terminal once a person answered: what was decided, for the rest of the run to show.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decided } from "./ask.ts";
 * assert.equal(decided("exec", "yes"), "toolgate: approved: exec runs this once\n");
 * ```
 */
export function decided(tool: string, answer: "yes" | "no" | "always", why?: string): string {
  if (answer === "yes") return `toolgate: approved: ${tool} runs this once\n`;
  if (answer === "always") {
    return `toolgate: approved: ${tool} runs without asking for the rest of this run\n`;
  }
  return `toolgate: denied: ${tool} does not run${why ? ` (${why})` : ""}; the model is told so\n`;
}

/**
 * Asks approval questions on the terminal: the question's lines, then `Run TOOL? (a letter, then Enter) [y]es /
 * [n]o / [a]lways for TOOL: `. An unclear answer is asked again (three times at most); an empty line or the end
 * of input is a no. With `tell`, one line says what was decided, so that it stays on screen.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { terminalAsker } from "./ask.ts";
 * const shown: string[] = [];
 * const write = (text: string) => Promise.resolve(void shown.push(text));
 * const typed = ["maybe", "a"]; // at a terminal: terminalReadLine(write)
 * const ask = terminalAsker((prompt) => Promise.resolve(void shown.push(prompt)).then(() => typed.shift() ?? null), write);
 * const question = { tool: "fs_remove", reason: "it writes files", lines: ["  path: build"] };
 * assert.equal(await ask(question), "always"); // asked again after the unclear answer; then new Policy({ ask })
 * assert.ok(shown.join("").includes("Run fs_remove?"));
 * ```
 */
export function terminalAsker(readLine: ReadLine, tell?: (text: string) => Promise<void>): Ask {
  return async (question, signal) => {
    const tool = question.tool;
    const prompt = `${
      question.lines.join("\n")
    }\nRun ${tool}? (a letter, then Enter) [y]es / [n]o / [a]lways for ${tool}: `;
    const settle = async (answer: "yes" | "no" | "always", why?: string) => {
      if (tell) await tell(decided(tool, answer, why));
      return answer;
    };
    for (let i = 0; i < MAX_ASKS; i++) {
      const line = await readLine(
        i === 0 ? prompt : "Please answer y (yes), n (no) or a (always), then Enter: ",
        signal,
      );
      if (line === null) return await settle("no", "no answer: input ended");
      const answer = line.trim().toLowerCase();
      if (YES.has(answer)) return await settle("yes");
      if (ALWAYS.has(answer)) return await settle("always");
      if (NO.has(answer)) return await settle("no");
    }
    return await settle("no", `no clear answer in ${MAX_ASKS} tries`);
  };
}
