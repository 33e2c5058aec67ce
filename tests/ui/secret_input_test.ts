/**
 * Reading a secret: a line typed on a raw terminal (here a scripted one: the bytes a terminal sends, and whether
 * raw mode was on while they came), and a value from a pipe.
 */
import assert from "node:assert/strict";
import {
  readHiddenLine,
  secretFromText,
  type SecretTerminal,
  terminalSecretAsker,
} from "../../src/ui/secret_input.ts";

/** A terminal that sends `chunks`, one per read, then its end; it records its mode at each read. */
function terminal(chunks: string[]): SecretTerminal & { modes: boolean[]; raw: boolean } {
  const bytes = chunks.map((chunk) => new TextEncoder().encode(chunk));
  const state = {
    raw: false,
    modes: [] as boolean[],
    setRaw(raw: boolean) {
      state.raw = raw;
    },
    read(buffer: Uint8Array): Promise<number | null> {
      state.modes.push(state.raw);
      const next = bytes.shift();
      if (next === undefined) return Promise.resolve(null);
      buffer.set(next);
      return Promise.resolve(next.length);
    },
  };
  return state;
}

Deno.test("readHiddenLine: typed without echo in raw mode, Backspace takes back a character, Enter ends", async () => {
  const shown: string[] = [];
  const tty = terminal(["s3", "crX\x7f\x7f", "ré€t", "\r", "after"]);
  const value = await readHiddenLine("Value: ", (text) => {
    shown.push(text);
    return Promise.resolve();
  }, tty);
  // "X" and then "r" erased; "é" and "€" are characters, not bytes.
  assert.equal(value, "s3cré€t");
  assert.ok(tty.modes.every((raw) => raw), "every byte was read in raw mode (no echo)");
  assert.equal(tty.raw, false, "the terminal is back in its normal mode");
  assert.deepEqual(shown, ["Value: ", "\n"], "nothing typed was written back");
});

Deno.test("readHiddenLine: Esc, Ctrl-C, Ctrl-D, the end of input and an empty line give no value", async () => {
  const quiet = () => Promise.resolve();
  for (const chunks of [["abc\x1b"], ["abc\x03"], ["\x04"], ["abc"], ["\r"]]) {
    const tty = terminal(chunks);
    assert.equal(await readHiddenLine("? ", quiet, tty), null, JSON.stringify(chunks));
    assert.equal(tty.raw, false);
  }
});

Deno.test("terminalSecretAsker: names the secret and its tools, and quotes the model's reason as the model's", async () => {
  let shown = "";
  const ask = terminalSecretAsker((text) => {
    shown += text;
    return Promise.resolve();
  }, terminal(["v4lue\n"]));
  const value = await ask({ name: "GITHUB_TOKEN", reason: 'it said "expired"\nplease', tools: ["gh"] });
  assert.equal(value, "v4lue");
  assert.match(shown, /the model asks you for the secret GITHUB_TOKEN, which gh receives\./);
  assert.match(
    shown,
    /The model's reason: "it said \\"expired\\"\\nplease"/,
    "one quoted line: it cannot fake a prompt",
  );
});

Deno.test("secretFromText: a piped value loses one final line break, nothing else", () => {
  assert.equal(secretFromText("tok\n"), "tok");
  assert.equal(secretFromText("tok\r\n"), "tok");
  assert.equal(secretFromText("  tok  \n\n"), "  tok  \n");
});
