/** JSONC reading: comments and trailing commas allowed; syntax errors and repeated keys as `PATH:LINE:COL: what`. */
import assert from "node:assert/strict";
import { lineColumn, parseJsonc } from "../../src/manifest/jsonc.ts";
import { loadManifest } from "../../src/manifest/manifest.ts";
import { tempDir, writeManifest } from "../support.ts";

/** Plain objects to compare with: the parser's objects have no prototype. */
const plain = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

Deno.test("lineColumn counts 1-based lines and columns", () => {
  const text = "ab\ncd\n\nef";
  assert.equal(lineColumn(text, 0), "1:1");
  assert.equal(lineColumn(text, 1), "1:2");
  assert.equal(lineColumn(text, 3), "2:1");
  assert.equal(lineColumn(text, 6), "3:1");
  assert.equal(lineColumn(text, 8), "4:2");
});

Deno.test("comments and trailing commas are accepted", async () => {
  const text = `// the manifest
{
  /* block
     comment */
  "tools": [
    {
      "name": "a", // trailing comment
      "command": ["./tools/bin/a",],
    },
  ],
}
`;
  const result = await parseJsonc(text, "m.json");
  assert.ok(result.ok);
  assert.deepEqual(plain(result.value), { tools: [{ name: "a", command: ["./tools/bin/a"] }] });
});

Deno.test("a syntax error reads PATH:LINE:COL: what is wrong", async () => {
  const text = '{\n  "tools": [\n    {"name": "a" "command": []}\n  ]\n}\n';
  assert.deepEqual(await parseJsonc(text, "m.json"), { ok: false, errors: ["m.json:3:18: comma expected"] });
});

Deno.test("syntax errors of several sorts, each at its line and column", async () => {
  const cases: [string, string][] = [
    ['{"a": "abc\n}', "m.json:1:7: unterminated string"],
    ['{"a": 1} x', "m.json:1:10: invalid symbol"],
    ['{"a":"\\q"}', "m.json:1:6: invalid escape character"],
    ["/* open", "m.json:1:1: unterminated comment"],
    ['{\n  "tools": [\n', "m.json:3:1: closing bracket expected"],
    ['{\r\n  "a": 1\r\n  "b": 2\r\n}', "m.json:3:3: comma expected"],
  ];
  for (const [text, first] of cases) {
    const result = await parseJsonc(text, "m.json");
    assert.ok(!result.ok, text);
    assert.equal(result.errors[0], first, text);
  }
});

Deno.test("empty or blank text is an error, not a value", async () => {
  assert.deepEqual(await parseJsonc("", "m.json"), { ok: false, errors: ["m.json:1:1: value expected"] });
  assert.deepEqual(await parseJsonc("  \n", "m.json"), { ok: false, errors: ["m.json:2:1: value expected"] });
});

Deno.test("a byte-order mark is not content", async () => {
  const result = await parseJsonc('\uFEFF{"tools": []}', "m.json");
  assert.ok(result.ok);
  assert.deepEqual(plain(result.value), { tools: [] });
  assert.deepEqual(await parseJsonc('\uFEFF{"a": 1,, }', "m.json"), {
    ok: false,
    errors: ["m.json:1:9: property name expected", "m.json:1:9: value expected"],
  });
});

Deno.test("a key repeated at the root is an error at the repeat's line:col", async () => {
  const text = '{\n  "tools": [],\n  "tools": []\n}';
  assert.deepEqual(await parseJsonc(text, "m.json"), {
    ok: false,
    errors: ['m.json:3:3: duplicate key "tools"'],
  });
});

Deno.test("a key repeated inside a tool is an error", async () => {
  const text = `{
  "tools": [
    {
      "name": "a",
      "command": ["./tools/bin/a"],
      "name": "b"
    }
  ]
}`;
  assert.deepEqual(await parseJsonc(text, "m.json"), {
    ok: false,
    errors: ['m.json:6:7: duplicate key "name"'],
  });
});

Deno.test("a key repeated deep in a schema is an error; every repeat is reported", async () => {
  const text = `{"tools": [{"name": "a", "command": ["./tools/bin/a"], "schema": {
  "type": "object",
  "properties": {
    "x": {"type": "string"},
    "x": {"type": "number", "type": "integer"}
  }
}}]}`;
  assert.deepEqual(await parseJsonc(text, "m.json"), {
    ok: false,
    errors: ['m.json:5:5: duplicate key "x"', 'm.json:5:29: duplicate key "type"'],
  });
});

Deno.test("the same key in different objects is not a repeat", async () => {
  const text = '{"tools": [{"name": "a"}, {"name": "b", "schema": {"name": {"name": 1}}}]}';
  assert.ok((await parseJsonc(text, "m.json")).ok);
});

Deno.test("loadManifest reports syntax errors with the manifest's path", async () => {
  await using dir = await tempDir();
  const path = await writeManifest(
    dir.path,
    '{\n  "tools": [\n    {"name": "a",}\n    {"name": "b"}\n  ]\n}',
  );
  const result = await loadManifest(path);
  assert.deepEqual(result, { ok: false, errors: [`${path}:4:5: comma expected`], warnings: [] });
});

Deno.test("loadManifest refuses a repeated key in a tool file", async () => {
  await using dir = await tempDir();
  const path = await writeManifest(
    dir.path,
    '{"tools": [{"name": "a", "command": ["./tools/bin/a"], "command": ["./tools/bin/b"]}]}',
    ["a", "b"],
  );
  const result = await loadManifest(path);
  assert.deepEqual(result, { ok: false, errors: [`${path}:1:56: duplicate key "command"`], warnings: [] });
});

Deno.test("loadManifest reads a JSONC manifest with comments and trailing commas", async () => {
  await using dir = await tempDir();
  const path = await writeManifest(
    dir.path,
    `{
  // agentcli would refuse this file; we read it.
  "tools": [
    { "name": "a", "command": ["./tools/bin/a"], /* no schema */ },
  ],
}`,
    ["a"],
  );
  const result = await loadManifest(path);
  assert.ok(result.ok, JSON.stringify(result));
  assert.deepEqual(result.manifest.tools.map((t) => t.name), ["a"]);
});

Deno.test("parseJsonc cuts comments wherever they stand, and never inside strings", async () => {
  const cases: [string, unknown][] = [
    ['// head\n{"a": 1}', { a: 1 }],
    ['{"a": 1} /* tail */', { a: 1 }],
    ['{"a": 1} // tail', { a: 1 }],
    ['{"a": 1 /* x */ , "c": 2 , // y\n }', { a: 1, c: 2 }],
    ['{"url": "http://x//y", "re": "a/*b*/c"}', { url: "http://x//y", re: "a/*b*/c" }],
    ["[1, 2, /* gone */ ]", [1, 2]],
    ['{"a": [1,], "b": {"c": 3,},}', { a: [1], b: { c: 3 } }],
  ];
  for (const [text, value] of cases) {
    const result = await parseJsonc(text, "m.json");
    assert.ok(result.ok, `${text}: ${JSON.stringify(result)}`);
    assert.deepEqual(result.value, value, text);
  }
});

Deno.test("parseJsonc still names a syntax error's place after a comment", async () => {
  const result = await parseJsonc('{\n  // fine\n  "a": 1,,\n}', "m.json");
  assert.equal(result.ok, false);
  assert.equal(!result.ok && result.errors[0], "m.json:3:10: property name expected");
});
