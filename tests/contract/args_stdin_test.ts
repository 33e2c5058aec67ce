// A built-in tool reads its arguments with plain reads: the same text `Response.text()` gave, for any input.
import assert from "node:assert/strict";
import { join } from "node:path";
import { REPO } from "../support.ts";
import { readAllText } from "../../src/contract/args.ts";

/** A reader that hands out `bytes` in reads of at most `step` bytes, as a pipe may. */
function chunked(bytes: Uint8Array, step: number) {
  let at = 0;
  return {
    read(buffer: Uint8Array): Promise<number | null> {
      if (at >= bytes.length) return Promise.resolve(null);
      const n = Math.min(step, buffer.length, bytes.length - at);
      buffer.set(bytes.subarray(at, at + n));
      at += n;
      return Promise.resolve(n);
    },
  };
}

Deno.test("readAllText: the text Response.text() decodes, whatever the reads' sizes", async () => {
  const encoder = new TextEncoder();
  const inputs = [
    new Uint8Array(),
    encoder.encode('{"timezone":"Europe/Helsinki"}'),
    // A byte-order mark, a character split across reads, a byte that is not UTF-8.
    new Uint8Array([0xef, 0xbb, 0xbf, ...encoder.encode('{"a":"ä€😀"}'), 0xff]),
    encoder.encode(JSON.stringify({ text: "ä".repeat(70_000) })),
  ];
  for (const bytes of inputs) {
    const expected = await new Response(bytes).text();
    for (const step of bytes.length > 1_000 ? [4_093, 65_536, 1 << 20] : [1, 3, 65_536]) {
      assert.equal(
        await readAllText(chunked(bytes, step)),
        expected,
        `${bytes.length} bytes, reads of ${step}`,
      );
    }
  }
});

Deno.test("readStdinArgs: a built-in tool reads arguments larger than one read from its stdin", async () => {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", "--no-config", join(REPO, "tools", "src", "get_time.ts")],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(JSON.stringify({ timezone: "UTC" }) + " ".repeat(200_000)));
  await writer.close();
  const output = await child.output();
  assert.ok(output.success, new TextDecoder().decode(output.stderr));
  assert.equal(JSON.parse(new TextDecoder().decode(output.stdout)).timezone, "UTC");
});
