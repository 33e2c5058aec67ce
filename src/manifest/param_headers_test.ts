import assert from "node:assert/strict";
import { paramHeaderMismatch, paramHeadersProblem } from "./param_headers.ts";
import { validateManifest } from "./manifest.ts";
import { loadSchemaEngine } from "./schema.ts";

const SCHEMA = {
  type: "object",
  properties: {
    region: { type: "string", "x-mcp-header": "Region" },
    priority: { type: "integer", "x-mcp-header": "Priority" },
    verbose: { type: "boolean", "x-mcp-header": "Verbose" },
    query: { type: "string" },
  },
};

Deno.test("param headers: each header agrees with its argument, plain or Base64; numbers and booleans as their JSON text", () => {
  const headers = new Headers({
    "mcp-param-region": " =?base64?w6l0w6k=?= ",
    "mcp-param-priority": "3",
    "mcp-param-verbose": "false",
  });
  assert.equal(
    paramHeaderMismatch(headers, SCHEMA, { region: "été", priority: 3, verbose: false, query: "q" }),
    undefined,
  );
  // Without the wrapper, a Base64-looking value is the value itself.
  assert.equal(
    paramHeaderMismatch(new Headers({ "mcp-param-region": "SGVsbG8=" }), SCHEMA, { region: "SGVsbG8=" }),
    undefined,
  );
});

Deno.test("param headers: a header that differs, is bad Base64, is missing, or has no argument is a mismatch", () => {
  const region = (value: string) => new Headers({ "mcp-param-region": value });
  assert.match(
    paramHeaderMismatch(region("eu"), SCHEMA, { region: "us" })!,
    /does not match the body's region/,
  );
  assert.match(
    paramHeaderMismatch(region("=?base64?SGVsbG8?="), SCHEMA, { region: "Hello" })!,
    /not valid Base64/,
  );
  assert.match(
    paramHeaderMismatch(region("=?base64?SGVs!!!bG8=?="), SCHEMA, { region: "Hello" })!,
    /Base64/,
  );
  assert.match(
    paramHeaderMismatch(new Headers(), SCHEMA, { region: "us" })!,
    /Mcp-Param-Region header is missing/,
  );
  assert.match(paramHeaderMismatch(region("us"), SCHEMA, {})!, /does not carry/);
  // A null argument is no argument: no header is due.
  assert.equal(paramHeaderMismatch(new Headers(), SCHEMA, { region: null }), undefined);
});

Deno.test("param headers: a manifest's declaration must be a token, once, on a string, integer or boolean property", async () => {
  await loadSchemaEngine();
  const load = (properties: Record<string, unknown>) =>
    validateManifest(
      {
        tools: [{ name: "t", command: ["/bin/cat"], schema: { type: "object", properties } }],
      },
      "/tmp/tools.json",
      { allowAbsoluteCommands: true },
    );
  assert.ok(load({ region: { type: "string", "x-mcp-header": "Region" } }).ok);
  for (
    const [properties, problem] of [
      [{ score: { type: "number", "x-mcp-header": "Score" } }, /string, integer or boolean/],
      [{ data: { type: "object", "x-mcp-header": "Data" } }, /string, integer or boolean/],
      [{ v: { type: "string", "x-mcp-header": "" } }, /header name/],
      [{ v: { type: "string", "x-mcp-header": "Region:Primary" } }, /header name/],
      [{ v: { type: "string", "x-mcp-header": "Région" } }, /header name/],
      [
        {
          a: { type: "string", "x-mcp-header": "MyField" },
          b: { type: "string", "x-mcp-header": "myfield" },
        },
        /again/,
      ],
    ] as const
  ) {
    const result = load(properties);
    assert.ok(!result.ok, JSON.stringify(properties));
    assert.match(result.errors.join("\n"), problem);
  }
  assert.equal(paramHeadersProblem({ type: "object" }), undefined);
});
