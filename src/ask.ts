/**
 * Asking a person on the terminal: the approval question on stderr (never stdout, which holds the answer), one
 * line read from stdin, yes / no / always for this tool.
 *
 * @module
 */
import type { Ask } from "./policy.ts";

/** Writes a question and returns the line typed, or `null` when input ended. */
export type ReadLine = (question: string) => Promise<string | null>;

/** After this many answers that are not yes, no or always, the call is denied. */
const MAX_ASKS = 3;

const YES = new Set(["y", "yes"]);
const NO = new Set(["n", "no", ""]);
const ALWAYS = new Set(["a", "always"]);

/**
 * Reads one line from `stdin` after writing the question.
 *
 * @example
 * ```ts
 * import { terminalReadLine } from "./ask.ts";
 * const readLine = terminalReadLine((text) => Deno.stderr.write(new TextEncoder().encode(text)).then(() => {}));
 * // const line = await readLine("Proceed? ");
 * ```
 */
export function terminalReadLine(
  write: (text: string) => Promise<void>,
  stdin: { read(buffer: Uint8Array): Promise<number | null> } = Deno.stdin,
): ReadLine {
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

/**
 * Asks approval questions on the terminal: the question's lines, then `Run TOOL? [y]es / [n]o / [a]lways for
 * TOOL: `. An unclear answer is asked again (three times at most); an empty line or the end of input is a no.
 *
 * @example
 * ```ts
 * import { terminalAsker, terminalReadLine } from "./ask.ts";
 * const ask = terminalAsker(terminalReadLine((text) => Deno.stderr.write(new TextEncoder().encode(text)).then(() => {})));
 * // new Policy({ ask })
 * ```
 */
export function terminalAsker(readLine: ReadLine): Ask {
  return async (question) => {
    const tool = question.tool;
    const prompt = `${question.lines.join("\n")}\nRun ${tool}? [y]es / [n]o / [a]lways for ${tool}: `;
    for (let i = 0; i < MAX_ASKS; i++) {
      const line = await readLine(i === 0 ? prompt : "Please answer y (yes), n (no) or a (always): ");
      if (line === null) return "no";
      const answer = line.trim().toLowerCase();
      if (YES.has(answer)) return "yes";
      if (ALWAYS.has(answer)) return "always";
      if (NO.has(answer)) return "no";
    }
    return "no";
  };
}
