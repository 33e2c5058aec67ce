/** Asking on the terminal: the question's lines, then yes / no / always; unclear answers asked again. */
import assert from "node:assert/strict";
import { type ReadLine, terminalAsker, terminalReadLine } from "../../src/policy/ask.ts";
import type { ApprovalQuestion } from "../../src/policy/policy.ts";

const QUESTION: ApprovalQuestion = {
  tool: "note",
  reason: "it can change files or run programs",
  lines: ["toolgate: the model asks to run note: it can change files or run programs.", '  path: "a"'],
};

/** A line reader that plays `answers` and records what it was asked. */
function scripted(...answers: (string | null)[]): { readLine: ReadLine; asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    readLine: (question) => {
      asked.push(question);
      return Promise.resolve(answers.length > 0 ? answers.shift()! : null);
    },
  };
}

Deno.test("terminalAsker: the question's lines, then the choice naming the tool", async () => {
  const { readLine, asked } = scripted("y");
  assert.equal(await terminalAsker(readLine)(QUESTION), "yes");
  assert.equal(
    asked[0],
    // The keys, and that Enter ends the answer (issue 26: the prompt needed Enter without saying so).
    `${QUESTION.lines.join("\n")}\nRun note? (a letter, then Enter) [y]es / [n]o / [a]lways for note: `,
  );
});

Deno.test("terminalAsker: yes, no, always in any case; an empty line and the end of input are no", async () => {
  const cases: [string | null, string][] = [
    ["YES", "yes"],
    ["n", "no"],
    [" Always ", "always"],
    ["a", "always"],
    ["", "no"],
    [null, "no"],
  ];
  for (const [line, answer] of cases) {
    assert.equal(await terminalAsker(scripted(line).readLine)(QUESTION), answer, String(line));
  }
});

Deno.test("terminalAsker: one line says what was decided, and stays on screen", async () => {
  const cases: [(string | null)[], string][] = [
    [["y"], "toolgate: approved: note runs this once\n"],
    [["a"], "toolgate: approved: note runs without asking for the rest of this run\n"],
    [["n"], "toolgate: denied: note does not run; the model is told so\n"],
    [[null], "toolgate: denied: note does not run (no answer: input ended); the model is told so\n"],
    [
      ["?", "?", "?"],
      "toolgate: denied: note does not run (no clear answer in 3 tries); the model is told so\n",
    ],
  ];
  for (const [answers, line] of cases) {
    const told: string[] = [];
    await terminalAsker(scripted(...answers).readLine, (text) => Promise.resolve(void told.push(text)))(
      QUESTION,
    );
    assert.deepEqual(told, [line], JSON.stringify(answers));
  }
});

Deno.test("terminalAsker: an unclear answer is asked again, three times at most, then no", async () => {
  const again = scripted("maybe", "yes");
  assert.equal(await terminalAsker(again.readLine)(QUESTION), "yes");
  assert.match(again.asked[1], /Please answer y \(yes\), n \(no\) or a \(always\)/);
  const stubborn = scripted("maybe", "perhaps", "later", "yes");
  assert.equal(await terminalAsker(stubborn.readLine)(QUESTION), "no");
  assert.equal(stubborn.asked.length, 3);
});

Deno.test("terminalReadLine: writes the question and reads one line, CRLF or LF", async () => {
  const written: string[] = [];
  const input = new TextEncoder().encode("yes\r\nrest");
  let offset = 0;
  const stdin = {
    read(buffer: Uint8Array): Promise<number | null> {
      if (offset >= input.length) return Promise.resolve(null);
      const n = Math.min(2, input.length - offset, buffer.length);
      buffer.set(input.subarray(offset, offset + n));
      offset += n;
      return Promise.resolve(n);
    },
  };
  const readLine = terminalReadLine((text) => Promise.resolve(void written.push(text)), stdin);
  assert.equal(await readLine("Proceed? "), "yes");
  assert.deepEqual(written, ["Proceed? "]);
});

Deno.test("terminalReadLine: a question withdrawn (answered in the console) leaves its read to the next question, never two reads at once", async () => {
  // A terminal whose reads resolve only when the test types a line; it counts the reads in flight.
  let pending: ((line: string) => void) | undefined;
  let inFlight = 0;
  let most = 0;
  const stdin = {
    read(buffer: Uint8Array): Promise<number | null> {
      inFlight++;
      most = Math.max(most, inFlight);
      return new Promise((resolve) => {
        pending = (line) => {
          inFlight--;
          const bytes = new TextEncoder().encode(line);
          buffer.set(bytes);
          resolve(bytes.length);
        };
      });
    },
  };
  const written: string[] = [];
  const readLine = terminalReadLine((text) => Promise.resolve(void written.push(text)), stdin);
  const withdraw = new AbortController();
  const first = readLine("First? ", withdraw.signal);
  await new Promise((resolve) => setTimeout(resolve, 0));
  withdraw.abort(new Error("answered in the console"));
  await assert.rejects(first, /answered in the console/);
  const second = readLine("Second? ");
  await new Promise((resolve) => setTimeout(resolve, 0));
  pending!("y\n");
  assert.equal(await second, "y", "the line typed goes to the question on screen");
  assert.equal(most, 1, "stdin was never read twice at once");
  assert.deepEqual(written, ["First? ", "Second? "]);
  // A question withdrawn before it is asked is not written at all.
  const gone = new AbortController();
  gone.abort(new Error("withdrawn"));
  await assert.rejects(readLine("Third? ", gone.signal), /withdrawn/);
  assert.deepEqual(written, ["First? ", "Second? "]);
});
