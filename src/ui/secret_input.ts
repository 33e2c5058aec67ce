/**
 * Reading a secret from a person: on a terminal, one line typed without echo (raw mode: nothing typed is shown,
 * Enter ends it, Backspace takes back a character, Ctrl-C, Ctrl-D or Esc give up); from a pipe, the whole input,
 * less one final line break.
 *
 * @module
 */
import type { AskSecret } from "../run/store_secret.ts";

/** What a terminal's stdin offers: Deno's own has it all. */
export interface SecretTerminal {
  read(buffer: Uint8Array): Promise<number | null>;
  setRaw(raw: boolean): void;
}

const ENTER = new Set([0x0a, 0x0d]);
const GIVE_UP = new Set([0x03, 0x04, 0x1b]);
const ERASE = new Set([0x08, 0x7f]);

/**
 * Asks on the terminal (the question on `write`, stderr) and reads one line without echo; `null` when the person
 * gave up (Ctrl-C, Ctrl-D, Esc, end of input) or typed nothing. The terminal is back in its normal mode afterwards,
 * whatever happened.
 *
 * @example Not run as a doc test: it reads the terminal with echo off.
 * ```ts ignore
 * import { readHiddenLine } from "./secret_input.ts";
 * const write = (text: string) => Deno.stderr.write(new TextEncoder().encode(text)).then(() => {});
 * const value = await readHiddenLine("GITHUB_TOKEN (typing is not shown): ", write);
 * ```
 */
export async function readHiddenLine(
  question: string,
  write: (text: string) => Promise<void>,
  stdin: SecretTerminal = Deno.stdin,
): Promise<string | null> {
  const bytes: number[] = [];
  const buffer = new Uint8Array(256);
  let ended: "enter" | "gave-up" | undefined;
  // Raw before the question shows: what is typed as soon as it appears is never echoed. (Deno's raw mode keeps
  // output processing: a line feed still starts a new line.)
  stdin.setRaw(true);
  try {
    await write(question);
    while (ended === undefined) {
      const n = await stdin.read(buffer);
      if (n === null) {
        ended = "gave-up";
        break;
      }
      for (const byte of buffer.subarray(0, n)) {
        if (ENTER.has(byte)) ended = "enter";
        else if (GIVE_UP.has(byte)) ended = "gave-up";
        else if (ERASE.has(byte)) {
          // One character, not one byte: drop UTF-8 continuation bytes with their lead.
          while (bytes.length > 0 && (bytes[bytes.length - 1] & 0xc0) === 0x80) bytes.pop();
          bytes.pop();
        } else bytes.push(byte);
        if (ended !== undefined) break;
      }
    }
  } finally {
    stdin.setRaw(false);
    buffer.fill(0);
  }
  await write("\n");
  const value = new TextDecoder().decode(new Uint8Array(bytes));
  bytes.fill(0);
  return ended === "enter" && value !== "" ? value : null;
}

/**
 * A secret given on a pipe: the whole text, less one final line break (`echo "$TOKEN" | toolgate secrets set X`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { secretFromText } from "./secret_input.ts";
 * assert.equal(secretFromText("ghp_example\n"), "ghp_example");
 * ```
 */
export function secretFromText(text: string): string {
  return text.replace(/\r?\n$/, "");
}

/**
 * Asks for a secret on the terminal, on behalf of `store_secret`: which secret, which tools receive it, and the
 * model's reason (quoted, as the model's words: it may be a lie), then the value typed without echo.
 *
 * @example Not run as a doc test: it asks at the terminal.
 * ```ts ignore
 * import { terminalSecretAsker } from "./secret_input.ts";
 * const ask = terminalSecretAsker((text) => Deno.stderr.write(new TextEncoder().encode(text)).then(() => {}));
 * await ask({ name: "GITHUB_TOKEN", reason: "the token expired", tools: ["gh_issues"] });
 * ```
 */
export function terminalSecretAsker(
  write: (text: string) => Promise<void>,
  stdin: SecretTerminal = Deno.stdin,
): AskSecret {
  return (request) => {
    const tools = request.tools.length > 0 ? request.tools.join(", ") : "no tool";
    const question = [
      `toolgate: the model asks you for the secret ${request.name}, which ${tools} receive${
        request.tools.length === 1 ? "s" : ""
      }.`,
      `  The model's reason: ${JSON.stringify(request.reason)}`,
      "  The value is stored encrypted and given to those tools only; the model never sees it.",
      `Value of ${request.name} (typing is not shown; Enter to store, Esc to refuse): `,
    ].join("\n");
    return readHiddenLine(question, write, stdin);
  };
}
