/**
 * `tools.schema.json`, the JSON Schema editors check manifests with: it accepts the example manifest, every
 * fixture manifest the loader accepts and every permission profile, and it rejects the shapes the loader rejects.
 */
import assert from "node:assert/strict";
import { join, relative } from "node:path";
import { Ajv, type ValidateFunction } from "ajv";
import { isRecord } from "../src/contract.ts";
import { parseJsonc } from "../src/manifest/jsonc.ts";
import { loadManifest, validateManifest } from "../src/manifest/manifest.ts";
import { BUILTIN_PROFILES } from "../src/manifest/profiles.ts";
import { loadSchemaEngine } from "../src/manifest/schema.ts";
import { REPO } from "./support.ts";

// validateManifest checks schemas with the engine loaded on demand: load it once for these tests.
await loadSchemaEngine();

const FIXTURES = join(REPO, "tests", "fixtures");
const SCHEMA_ID = "tools.schema.json";

async function compile(): Promise<{ manifest: ValidateFunction; profile: ValidateFunction }> {
  const schema = JSON.parse(await Deno.readTextFile(join(REPO, "tools.schema.json")));
  // Strict mode: a keyword ajv does not know, or a type clash inside the schema, is a mistake in it. Only its
  // tuple rule is off: `command` is a tuple of one program followed by any number of arguments, on purpose.
  const ajv = new Ajv({ allErrors: true, strict: true, strictTuples: false });
  ajv.addSchema(schema, SCHEMA_ID);
  return {
    manifest: ajv.getSchema(SCHEMA_ID)!,
    profile: ajv.compile({ $ref: `${SCHEMA_ID}#/definitions/profile` }),
  };
}

function errorsOf(validate: ValidateFunction): string {
  return (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message}`).join("; ");
}

/** Every file under `dir` whose name ends with `suffix`, recursively. */
async function filesUnder(dir: string, suffix: string): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) found.push(...await filesUnder(path, suffix));
    else if (entry.isFile && entry.name.endsWith(suffix)) found.push(path);
  }
  return found.sort();
}

async function readJsonc(path: string): Promise<unknown> {
  const parsed = await parseJsonc(await Deno.readTextFile(path), path);
  return parsed.ok ? parsed.value : undefined;
}

Deno.test("tools.schema.json is a draft-07 schema that compiles in strict mode", async () => {
  const schema = JSON.parse(await Deno.readTextFile(join(REPO, "tools.schema.json")));
  assert.equal(schema.$schema, "http://json-schema.org/draft-07/schema#");
  await compile();
});

Deno.test("the example manifest (tools.json) passes the loader and the schema", async () => {
  const { manifest } = await compile();
  const path = join(REPO, "tools.json");
  const loaded = await loadManifest(path);
  assert.ok(loaded.ok, loaded.ok ? "" : loaded.errors.join("\n"));
  assert.deepEqual(loaded.warnings, [], "the example manifest carries no field the loader does not know");
  const value = await readJsonc(path) as Record<string, unknown>;
  assert.equal(value.$schema, "./tools.schema.json", "editors find the schema through $schema");
  assert.ok(manifest(value), errorsOf(manifest));
});

Deno.test("every fixture manifest the loader accepts passes the schema", async () => {
  const { manifest } = await compile();
  const checked: string[] = [];
  for (const path of await filesUnder(FIXTURES, ".json")) {
    const value = await readJsonc(path);
    // Only manifests: an object with a `tools` array (profiles and other data are not).
    if (!isRecord(value) || !Array.isArray(value.tools)) continue;
    const loaded = await loadManifest(path, { allowAbsoluteCommands: true });
    // Deliberately broken fixtures are for the loader's errors, and fields it warns about are for its warnings.
    if (!loaded.ok || loaded.warnings.length > 0) continue;
    assert.ok(manifest(value), `${relative(REPO, path)}: ${errorsOf(manifest)}`);
    checked.push(relative(REPO, path));
  }
  assert.ok(checked.includes(join("tests", "fixtures", "mcp", "tools.json")), checked.join(", "));
  assert.ok(checked.length >= 2, checked.join(", "));
});

Deno.test("every permission profile, built in or beside a fixture manifest, passes the profile definition", async () => {
  const { profile } = await compile();
  for (const [name, value] of Object.entries(BUILTIN_PROFILES)) {
    assert.ok(profile(value), `${name}: ${errorsOf(profile)}`);
  }
  for (const path of await filesUnder(FIXTURES, ".json")) {
    if (!path.includes("/permissions/")) continue;
    assert.ok(profile(await readJsonc(path)), `${relative(REPO, path)}: ${errorsOf(profile)}`);
  }
});

const TOOL = { name: "t", command: ["./tools/bin/t"] };

/** Shapes the loader refuses; the schema must flag each one while it is typed. */
const BAD: [string, Record<string, unknown>][] = [
  ["a name with a space", { ...TOOL, name: "get time" }],
  ["a name past 64 characters", { ...TOOL, name: "x".repeat(65) }],
  ["a missing name", { command: TOOL.command }],
  ["a missing command", { name: "t" }],
  ["an empty command", { ...TOOL, command: [] }],
  ["a command that is not strings", { ...TOOL, command: ["./tools/bin/t", 1] }],
  ["a relative command outside tools/bin", { ...TOOL, command: ["./bin/t"] }],
  ["a zero timeout", { ...TOOL, timeoutSec: 0 }],
  ["a fractional timeout", { ...TOOL, timeoutSec: 1.5 }],
  ["an env name with a dash", { ...TOOL, envPassthrough: ["MY-TOKEN"] }],
  ["a secret name with a dash", { ...TOOL, secrets: ["GITHUB-TOKEN"] }],
  ["secrets as a string", { ...TOOL, secrets: "GITHUB_TOKEN" }],
  ["the reserved name store_secret", { ...TOOL, name: "store_secret" }],
  ["readOnly as a string", { ...TOOL, readOnly: "yes" }],
  ["concurrent without readOnly", { ...TOOL, concurrent: true }],
  ["a schema that is not an object", { ...TOOL, schema: "object" }],
  ["a profile name with a slash", { ...TOOL, permissions: "../etc" }],
  ["a profile field that does not exist", { ...TOOL, permissions: { network: true } }],
  ["net as a string", { ...TOOL, permissions: { net: "yes" } }],
  ["an empty write path", { ...TOOL, permissions: { write: [""] } }],
  ["a zero limit", { ...TOOL, permissions: { limits: { processes: 0 } } }],
  ["an unknown limit", { ...TOOL, permissions: { limits: { threads: 1024 } } }],
  ["alwaysLoad as a string", { ...TOOL, alwaysLoad: "yes" }],
  ["an outputSchema that is not an object", { ...TOOL, outputSchema: "object" }],
  ["an outputSchema of another type", { ...TOOL, outputSchema: { type: "string" } }],
  ["an outputSchema without a type", { ...TOOL, outputSchema: { properties: {} } }],
  ["a taskSupport MCP does not name", { ...TOOL, execution: { taskSupport: "always" } }],
  ["execution as a string", { ...TOOL, execution: "required" }],
];

for (const [what, tool] of BAD) {
  Deno.test(`the schema and the loader both reject ${what}`, async () => {
    const { manifest } = await compile();
    const value = { tools: [tool] };
    assert.equal(manifest(value), false, `the schema accepted ${JSON.stringify(tool)}`);
    assert.equal(validateManifest(value, "/srv/project/tools.json").ok, false, "the loader accepted it");
  });
}

Deno.test("the schema flags unknown fields, which the loader only warns about", async () => {
  const { manifest } = await compile();
  for (const value of [{ tools: [{ ...TOOL, readonly: true }] }, { tools: [TOOL], tool: [] }]) {
    assert.equal(manifest(value), false, JSON.stringify(value));
    const loaded = validateManifest(value, "/srv/project/tools.json");
    assert.ok(loaded.ok && loaded.warnings.length === 1, JSON.stringify(loaded));
  }
});

Deno.test("the schema accepts every field in its documented forms", async () => {
  const { manifest } = await compile();
  const value = {
    $schema: "./tools.schema.json",
    tools: [
      {
        name: "full",
        description: "All of it.",
        schema: { type: "object", properties: {}, additionalProperties: false },
        command: ["./tools/bin/full", "--flag"],
        execution: { taskSupport: "optional" },
        timeoutSec: 5,
        envPassthrough: ["MY_TOKEN", "tz"],
        readOnly: true,
        concurrent: true,
        alwaysLoad: true,
        outputSchema: {
          type: "object",
          properties: { now: { type: "string" } },
          required: ["now"],
          additionalProperties: false,
        },
        permissions: {
          description: "inline",
          read: ["/usr", "."],
          write: ["out"],
          net: ["example.com"],
          env: ["LANG"],
          limits: { cpuSeconds: 10, fileSizeBytes: 1024, processes: 8 },
        },
      },
      { name: "named", command: ["tools/bin/named"], permissions: "workspace" },
      { name: "absolute", command: ["/usr/bin/true"], permissions: { net: false } },
    ],
  };
  assert.ok(manifest(value), errorsOf(manifest));
  const loaded = validateManifest(value, "/srv/project/tools.json", { allowAbsoluteCommands: true });
  assert.ok(loaded.ok && loaded.warnings.length === 0, JSON.stringify(loaded));
  assert.ok(manifest({}), "a manifest without tools is empty, not wrong");
});

Deno.test("the schema and the loader accept a stdio MCP server's credentials, and both refuse a field they do not know", async () => {
  const { manifest } = await compile();
  const credential = {
    secret: "GH_TOKEN",
    env: "GH_TOKEN",
    hosts: ["api.github.com"],
    header: "Authorization",
  };
  const server = { command: "node", args: ["server.js"], permissions: { net: ["api.github.com"] } };
  const good = { tools: [], mcpServers: { gh: { ...server, credentials: [credential] } } };
  assert.ok(manifest(good), errorsOf(manifest));
  const loaded = validateManifest(good, "/srv/project/tools.json");
  assert.ok(loaded.ok && loaded.warnings.length === 0, JSON.stringify(loaded));
  assert.deepEqual(loaded.ok && loaded.manifest.servers?.[0].credentials, [{ ...credential, format: "{}" }]);
  const bad = { tools: [], mcpServers: { gh: { ...server, credentials: [{ ...credential, hostz: [] }] } } };
  assert.equal(manifest(bad), false, "the schema accepted an unknown credential field");
  assert.equal(validateManifest(bad, "/srv/project/tools.json").ok, false, "the loader accepted it");
});

Deno.test("the schema and the loader accept a tool's credentials (the credentials example), and both refuse a field they do not know", async () => {
  const { manifest } = await compile();
  const path = join(REPO, "docs", "examples", "credentials", "tools.json");
  const loaded = await loadManifest(path);
  assert.ok(loaded.ok && loaded.warnings.length === 0, JSON.stringify(loaded));
  const value = await readJsonc(path) as { tools: Record<string, unknown>[] };
  assert.ok(manifest(value), errorsOf(manifest));
  const credential = (value.tools[0].credentials as Record<string, unknown>[])[0];
  // (Exactly one of header and query is the loader's check, as the schema's description says.)
  const bad = { ...value, tools: [{ ...value.tools[0], credentials: [{ ...credential, hostz: [] }] }] };
  assert.equal(manifest(bad), false, "the schema accepted an unknown credential field");
  assert.equal(validateManifest(bad, path).ok, false, "the loader accepted it");
});
