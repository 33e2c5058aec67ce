/** The tools' shared library: address classification, globs, head-and-tail truncation and argument reading. */
import assert from "node:assert/strict";
import { serialize } from "../../src/contract.ts";
import { parseIPv6, refusedAddress } from "../../tools/lib/address.ts";
import { Args, type ArgsSchema, readArgs } from "../../tools/lib/args.ts";
import { TOOL_ARGS } from "../../tools/schemas/mod.ts";
import { ToolFailure } from "../../tools/lib/envelope.ts";
import { compileGlob } from "../../tools/lib/glob.ts";
import { HeadTail } from "../../tools/lib/truncate.ts";

Deno.test("address: refused classes, IPv4 and IPv6, embedded IPv4 forms included", () => {
  const refused: Record<string, string> = {
    "127.0.0.1": "loopback",
    "127.255.255.254": "loopback",
    "0.0.0.0": "unspecified",
    "0.1.2.3": "unspecified",
    "10.1.2.3": "private",
    "172.16.0.1": "private",
    "172.31.255.255": "private",
    "192.168.0.1": "private",
    "169.254.169.254": "link-local",
    "100.64.0.0": "CGNAT (shared address space)",
    "100.127.255.255": "CGNAT (shared address space)",
    "224.0.0.1": "multicast",
    "239.255.255.255": "multicast",
    "255.255.255.255": "limited broadcast",
    "::ffff:8.8.8.8": "IPv4-mapped",
    "::": "unspecified",
    "::1": "loopback",
    "::ffff:127.0.0.1": "IPv4-mapped loopback",
    "::ffff:7f00:1": "IPv4-mapped loopback",
    "::ffff:0.0.0.0": "IPv4-mapped unspecified",
    "::ffff:a00:1": "IPv4-mapped private",
    "::ffff:169.254.0.1": "IPv4-mapped link-local",
    "::ffff:100.64.0.1": "IPv4-mapped CGNAT (shared address space)",
    "::ffff:224.0.0.1": "IPv4-mapped multicast",
    "::ffff:0:127.0.0.1": "IPv4-translated loopback",
    "::127.0.0.1": "IPv4-compatible (deprecated)",
    "64:ff9b::10.0.0.1": "NAT64 private",
    "2002:7f00:1::": "6to4 loopback",
    "fc00::1": "private (unique local)",
    "fdff:ffff::1": "private (unique local)",
    "fe80::1": "link-local",
    "fe80::1%eth0": "link-local",
    "febf::1": "link-local",
    "ff02::1": "multicast",
    "not-an-ip": "not an IP address",
  };
  for (const [address, reason] of Object.entries(refused)) {
    assert.equal(refusedAddress(address), reason, address);
  }
  for (
    const address of [
      "8.8.8.8",
      "100.63.255.255",
      "100.128.0.0",
      "172.15.255.255",
      "172.32.0.0",
      "2606:4700::1111",
      "64:ff9b::8.8.8.8",
      "2002:808:808::",
    ]
  ) {
    assert.equal(refusedAddress(address), undefined, address);
  }
});

Deno.test("address: IPv6 parsing", () => {
  assert.deepEqual(parseIPv6("1:2:3:4:5:6:7:8"), [1, 2, 3, 4, 5, 6, 7, 8]);
  assert.deepEqual(parseIPv6("[1::8]"), [1, 0, 0, 0, 0, 0, 0, 8]);
  assert.deepEqual(parseIPv6("::ffff:1.2.3.4"), [0, 0, 0, 0, 0, 0xffff, 0x102, 0x304]);
  for (
    const bad of [
      "1::2::3",
      "1:2:3:4:5:6:7:8:9",
      "1:2:3",
      "12345::",
      "::1.2.3",
      "1.2.3.4",
      "1::2:3:4:5:6:7:8",
    ]
  ) {
    assert.equal(parseIPv6(bad), undefined, bad);
  }
});

Deno.test("glob: names, paths, classes and alternatives", () => {
  const cases: Array<[string, string, string, boolean]> = [
    ["*.ts", "a.ts", "x/a.ts", true],
    ["*.ts", "a.tsx", "a.tsx", false],
    ["src/*.ts", "a.ts", "src/a.ts", true],
    ["src/*.ts", "a.ts", "src/x/a.ts", false],
    ["src/**/*.ts", "a.ts", "src/a.ts", true],
    ["src/**/*.ts", "a.ts", "src/x/y/a.ts", true],
    ["?.md", "a.md", "a.md", true],
    ["[ab].md", "c.md", "c.md", false],
    ["[!ab].md", "c.md", "c.md", true],
    ["*.{js,ts}", "a.js", "a.js", true],
    ["a.b", "axb", "axb", false],
  ];
  for (const [pattern, name, path, expected] of cases) {
    assert.equal(compileGlob(pattern).matches(name, path), expected, `${pattern} ~ ${path}`);
  }
  assert.throws(() => compileGlob("{a,b"), ToolFailure);
});

/** The whole text through the streaming collector at once. */
function truncateMiddle(text: string, max: number): string {
  const kept = new HeadTail(max);
  kept.push(text);
  return kept.text();
}

Deno.test("truncate: 40% head, 60% tail, a marker with counts, never over the limit, streaming or not", () => {
  assert.equal(truncateMiddle("short", 100), "short");
  const text = Array.from({ length: 5000 }, (_, i) => `${i},`).join("");
  for (const max of [200, 1000, 4000]) {
    const out = truncateMiddle(text, max);
    assert.ok(out.length <= max, `${out.length} <= ${max}`);
    const match = /\n…\[truncated (\d+) of (\d+) characters\]…\n/.exec(out)!;
    assert.equal(Number(match[2]), text.length);
    const head = out.slice(0, match.index);
    const tail = out.slice(match.index + match[0].length);
    assert.ok(text.startsWith(head) && text.endsWith(tail));
    assert.equal(Number(match[1]) + head.length + tail.length, text.length);
    const streamed = new HeadTail(max);
    for (let i = 0; i < text.length; i += 37) streamed.push(text.slice(i, i + 37));
    assert.equal(streamed.text(), out, "streaming keeps the same text");
  }
  const emoji = "😀".repeat(500);
  const cut = truncateMiddle(emoji, 301);
  assert.doesNotMatch(
    cut,
    /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/,
    "no lone surrogate",
  );
});

Deno.test("args: lenient scalars, strict unknown keys, invalid_args naming the field", () => {
  const args = Args.parse('{"n":"12","b":"yes","e":"Base64","s":"","arr":"[1,2]"}');
  assert.equal(args.integer("n", 0), 12);
  assert.equal(args.boolean("b", false), true);
  assert.equal(args.choice("e", ["text", "base64"] as const, "text"), "base64");
  assert.equal(args.optionalString("s", "fallback"), "fallback");
  assert.deepEqual(args.raw("arr"), [1, 2]);
  args.done();
  const failure = (fn: () => unknown) => {
    try {
      fn();
    } catch (error) {
      assert.ok(error instanceof ToolFailure);
      return error.toEnvelope();
    }
    assert.fail("expected a failure");
  };
  assert.equal(failure(() => Args.parse('{"x":1}').done()).field, "x");
  assert.equal(failure(() => Args.parse('{"n":1.5}').integer("n", 0)).field, "n");
  assert.equal(failure(() => Args.parse('{"n":9}').integer("n", 0, { max: 5 })).field, "n");
  assert.equal(failure(() => Args.parse("[]")).field, "arguments");
  // What the tool prints: the contract's serialization, `ok` first and then sorted keys.
  assert.deepEqual(Object.keys(JSON.parse(serialize(failure(() => Args.parse('{"p":1}').string("p"))))), [
    "ok",
    "expected",
    "field",
    "kind",
    "message",
    "retryable",
  ]);
});

/** The `invalid_args` envelope `fn` throws. */
function refusal(fn: () => unknown): Record<string, unknown> {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof ToolFailure, String(error));
    assert.equal(error.kind, "invalid_args");
    return error.toEnvelope() as unknown as Record<string, unknown>;
  }
  assert.fail("expected a failure");
}

const SAMPLE = {
  type: "object",
  properties: {
    path: { type: "string", minLength: 1, description: "Relative path, e.g. a.txt" },
    text: { type: "string" },
    glob: { type: "string", default: "*" },
    mode: { type: "string", enum: ["text", "base64"], default: "text" },
    limit: { type: "integer", minimum: 1, maximum: 10, default: 5 },
    deep: { type: "boolean", default: false },
    argv: { type: "array", items: { type: "string" }, default: [] },
  },
  required: ["path", "text"],
  additionalProperties: false,
} as const satisfies ArgsSchema;

Deno.test("readArgs: the schema's names, types, bounds, enums and defaults, read leniently", () => {
  const read = readArgs(SAMPLE, Args.parse('{"path":"a","text":"","glob":"","mode":"Base64","limit":"7"}'));
  assert.deepEqual(read, { path: "a", text: "", glob: "*", mode: "base64", limit: 7, deep: false, argv: [] });
  const more = readArgs(SAMPLE, Args.parse('{"path":"a","text":"t","deep":"yes","argv":"[\\"ls\\"]"}'));
  assert.equal(more.deep, true);
  assert.deepEqual(more.argv, ["ls"]);
});

Deno.test("readArgs: missing first, then undeclared, then each argument in order, naming the field", () => {
  const missing = refusal(() => readArgs(SAMPLE, Args.parse('{"text":"t","x":1,"limit":99}')));
  assert.equal(missing.field, "path");
  assert.equal(missing.expected, "a non-empty string (Relative path, e.g. a.txt)");
  const unknown = refusal(() => readArgs(SAMPLE, Args.parse('{"path":"a","text":"t","x":1,"limit":99}')));
  assert.equal(unknown.field, "x");
  assert.equal(unknown.expected, "only path, text, glob, mode, limit, deep, argv");
  const bounds = refusal(() => readArgs(SAMPLE, Args.parse('{"path":"a","text":"t","limit":11}')));
  assert.deepEqual([bounds.field, bounds.expected], ["limit", "an integer from 1 to 10"]);
  const empty = refusal(() => readArgs(SAMPLE, Args.parse('{"path":"","text":"t"}')));
  assert.equal(empty.field, "path");
  const choice = refusal(() => readArgs(SAMPLE, Args.parse('{"path":"a","text":"t","mode":"hex"}')));
  assert.deepEqual([choice.field, choice.expected], ["mode", "one of text, base64"]);
  const required = {
    type: "object",
    properties: { action: { type: "string", enum: ["poll", "kill"] } },
    required: ["action"],
    additionalProperties: false,
  } as const satisfies ArgsSchema;
  assert.equal(readArgs(required, Args.of({ action: "KILL" })).action, "kill");
  assert.equal(refusal(() => readArgs(required, Args.of({ action: null }))).field, "action");
});

Deno.test("readArgs: every shipped tool's defaults and bounds are its schema's", () => {
  for (const [tool, schema] of Object.entries(TOOL_ARGS)) {
    const given: Record<string, unknown> = {};
    for (const name of schema.required ?? []) {
      const property = schema.properties[name];
      given[name] = property.type === "string" && property.enum ? property.enum[0] : "x";
    }
    const read = readArgs(schema, Args.of(given)) as Record<string, unknown>;
    for (const [name, property] of Object.entries(schema.properties)) {
      if (name in given) continue;
      assert.deepEqual(read[name], property.default, `${tool}.${name}: the schema's default`);
      if (property.type === "integer" && property.maximum !== undefined) {
        const over = refusal(() => readArgs(schema, Args.of({ ...given, [name]: property.maximum! + 1 })));
        assert.equal(over.field, name, `${tool}.${name}: its maximum holds`);
      }
      if (property.type === "integer" && property.minimum !== undefined) {
        const under = refusal(() => readArgs(schema, Args.of({ ...given, [name]: property.minimum! - 1 })));
        assert.equal(under.field, name, `${tool}.${name}: its minimum holds`);
      }
    }
    for (const name of schema.required ?? []) {
      const without = { ...given };
      delete without[name];
      assert.equal(
        refusal(() => readArgs(schema, Args.of(without))).field,
        name,
        `${tool}.${name}: required`,
      );
    }
  }
});
