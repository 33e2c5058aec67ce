/** The manifest loader: every rule of the agentcli seed and toolgate's stricter ones, with their exact messages. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadManifest, validateManifest } from "../../src/manifest/manifest.ts";
import { type ManifestOptions, type ManifestResult } from "../../src/manifest/manifest_types.ts";
import { REPO, tempDir, writeFiles, writeManifest } from "../support.ts";
import { loadSchemaEngine, SchemaCompiler } from "../../src/manifest/schema.ts";

// validateManifest checks schemas with the engine loaded on demand: load it once for these tests.
await loadSchemaEngine();

/** Writes `manifest` and the `programs` into a fresh temp folder, loads it, and hands back the folder too. */
async function load(
  manifest: unknown,
  { programs = [], options = {} }: { programs?: string[]; options?: ManifestOptions } = {},
): Promise<{ result: ManifestResult; dir: string; path: string }> {
  await using dir = await tempDir();
  const path = await writeManifest(dir.path, manifest, programs);
  return { result: await loadManifest(path, options), dir: dir.path, path };
}

/** The errors of a manifest of these tools (the test fails when it is valid). */
async function errorsOf(tools: unknown[], options: ManifestOptions = {}): Promise<readonly string[]> {
  const { result } = await load({ tools }, { options });
  assert.ok(!result.ok, "expected the manifest to be refused");
  return result.errors;
}

/** The single error of a one-tool manifest. */
async function errorOf(tool: Record<string, unknown>, options: ManifestOptions = {}): Promise<string> {
  const errors = await errorsOf([tool], options);
  assert.equal(errors.length, 1, errors.join("\n"));
  return errors[0];
}

/** The tools of a valid manifest. */
async function toolsOf(tools: unknown[], programs: string[] = [], options: ManifestOptions = {}) {
  const { result, dir } = await load({ tools }, { programs, options });
  assert.ok(result.ok, result.ok ? "" : result.errors.join("\n"));
  return { tools: result.manifest.tools, dir, manifest: result.manifest };
}

const plain = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

// --- the seed's examples ----------------------------------------------------------------------------------------

Deno.test("the seed's minimal example loads into a spec resolved against the manifest's folder", async () => {
  const schema = {
    type: "object",
    properties: {
      timezone: { type: "string", description: "IANA timezone, e.g. Europe/Helsinki" },
      tz: { type: "string", description: "Alias for timezone (deprecated)" },
    },
    required: ["timezone"],
    additionalProperties: false,
  };
  const { tools, dir, manifest } = await toolsOf([{
    name: "get_time",
    description: "Get current time for an IANA timezone",
    schema,
    command: ["./tools/bin/get_time"],
    timeoutSec: 5,
    envPassthrough: ["TZ", "OAI_HTTP_TIMEOUT"],
  }], ["get_time"]);
  assert.equal(tools.length, 1);
  const tool = tools[0];
  const expected = {
    index: 0,
    name: "get_time",
    description: "Get current time for an IANA timezone",
    schema,
    command: ["./tools/bin/get_time"],
    program: join(dir, "tools/bin/get_time"),
    args: [],
    timeoutSec: 5,
    envPassthrough: ["TZ", "OAI_HTTP_TIMEOUT"],
    readOnly: false,
    concurrent: false,
  };
  // The fields the seed describes; later issues may add more.
  const fields = Object.fromEntries(
    Object.keys(expected).map((key) => [key, tool[key as keyof typeof tool]]),
  );
  assert.deepEqual({ ...fields, schema: plain(tool.schema) }, expected);
  assert.equal(manifest.dir, dir);
  assert.equal(manifest.binDir, join(dir, "tools", "bin"));
  assert.equal(manifest.byName.get("get_time"), tool);
});

Deno.test("the seed's Windows example (.exe) loads", async () => {
  const { tools, dir } = await toolsOf([{
    name: "get_time",
    schema: {
      type: "object",
      properties: { timezone: { type: "string" } },
      required: ["timezone"],
      additionalProperties: false,
    },
    command: ["./tools/bin/get_time.exe"],
    timeoutSec: 5,
  }]);
  assert.equal(tools[0].program, join(dir, "tools/bin/get_time.exe"));
  assert.deepEqual(tools[0].envPassthrough, []);
});

Deno.test("the example tools.json at the root is valid, schemas compiled", async () => {
  const result = await loadManifest(join(REPO, "tools.json"), { compileSchemas: true });
  assert.ok(result.ok, result.ok ? "" : result.errors.join("\n"));
  assert.deepEqual(result.warnings, []);
  const getTime = result.manifest.byName.get("get_time");
  assert.ok(getTime);
  assert.equal(getTime.schema?.additionalProperties, false);
});

Deno.test('{}, {"tools": []}, {"tools": null} and a missing tools key are valid with zero tools', async () => {
  for (const manifest of [{}, { tools: [] }, { tools: null }, { $schema: "./tools.schema.json" }]) {
    const { result } = await load(manifest);
    assert.ok(result.ok, JSON.stringify(manifest));
    assert.equal(result.manifest.tools.length, 0);
    assert.deepEqual(result.warnings, []);
  }
});

Deno.test("the root must be an object and tools an array", async () => {
  const notObject = await load([]);
  assert.deepEqual(notObject.result, {
    ok: false,
    errors: [`${notObject.path}: the manifest must be a JSON object`],
    warnings: [],
  });
  const notArray = await load({ tools: { name: "a" } });
  assert.deepEqual(notArray.result, {
    ok: false,
    errors: [`${notArray.path}: "tools" must be an array`],
    warnings: [],
  });
});

Deno.test("a missing manifest file is an error naming the path", async () => {
  await using dir = await tempDir();
  const path = join(dir.path, "nope.json");
  assert.deepEqual(await loadManifest(path), {
    ok: false,
    errors: [`${path}: cannot read the manifest: no such file`],
    warnings: [],
  });
});

// --- name ---------------------------------------------------------------------------------------------------------

Deno.test("name is required: missing, empty or null", async () => {
  for (const name of [undefined, "", null]) {
    assert.equal(await errorOf({ name, command: ["./tools/bin/x"] }), "tool[0]: name is required");
  }
  const errors = await errorsOf([{ name: "a", command: ["./tools/bin/a"] }, { command: ["./tools/bin/b"] }]);
  assert.deepEqual(errors, ["tool[1]: name is required"]);
});

Deno.test("name must be a string; a tool must be an object", async () => {
  assert.equal(await errorOf({ name: 7, command: ["./tools/bin/x"] }), "tool[0]: name must be a string");
  assert.deepEqual(await errorsOf(["get_time", null, []]), [
    "tool[0]: must be an object",
    "tool[1]: must be an object",
    "tool[2]: must be an object",
  ]);
});

Deno.test("a duplicate name is refused at each repeat, with the index and name", async () => {
  const errors = await errorsOf([
    { name: "a", command: ["./tools/bin/a"] },
    { name: "b", command: ["./tools/bin/b"] },
    { name: "a", command: ["./tools/bin/a"] },
    { name: "a", command: ["./tools/bin/a"] },
  ]);
  assert.deepEqual(errors, ['tool[2] "a": duplicate name', 'tool[3] "a": duplicate name']);
});

Deno.test("a name must match ^[A-Za-z0-9_-]{1,64}$ (the OpenAI function-name rule)", async () => {
  for (const name of ["has space", "a.b", "ünï", "x".repeat(65), "a/b"]) {
    assert.equal(
      await errorOf({ name, command: ["./tools/bin/x"] }),
      `tool[0] ${JSON.stringify(name)}: name must match ^[A-Za-z0-9_-]{1,64}$`,
    );
  }
  const { tools } = await toolsOf([
    { name: "x".repeat(64), command: ["./tools/bin/x"] },
    { name: "Get_Time-2", command: ["./tools/bin/x"] },
  ]);
  assert.equal(tools.length, 2);
});

// --- command ------------------------------------------------------------------------------------------------------

Deno.test("command must have at least program name: empty, missing or null", async () => {
  for (const command of [[], undefined, null]) {
    assert.equal(
      await errorOf({ name: "x", command }),
      'tool[0] "x": command must have at least program name',
    );
  }
});

Deno.test("command must be an array of strings", async () => {
  for (const command of ["./tools/bin/x", ["./tools/bin/x", 3], [null], { 0: "./tools/bin/x" }]) {
    assert.equal(await errorOf({ name: "x", command }), 'tool[0] "x": command must be an array of strings');
  }
});

Deno.test("the fixed arguments after the program are kept in order", async () => {
  const { tools } = await toolsOf([{ name: "x", command: ["./tools/bin/x", "--flag", "v", ""] }]);
  assert.deepEqual(tools[0].command, ["./tools/bin/x", "--flag", "v", ""]);
  assert.deepEqual(tools[0].args, ["--flag", "v", ""]);
});

Deno.test("accepted relative commands, resolved against the manifest's folder", async () => {
  const cases: [string, string][] = [
    ["./tools/bin/x", "tools/bin/x"],
    ["tools/bin/x", "tools/bin/x"],
    ["./tools/bin/./x", "tools/bin/x"],
    ["./tools/bin/a/../b", "tools/bin/b"],
    [".\\tools\\bin\\x", "tools/bin/x"],
    ["././tools/bin/x", "tools/bin/x"],
    ["./tools/bin/sub/x", "tools/bin/sub/x"],
  ];
  const { tools, dir } = await toolsOf(cases.map(([command], i) => ({ name: `t${i}`, command: [command] })));
  assert.deepEqual(
    tools.map((t) => t.program),
    cases.map(([, relative]) => join(dir, relative)),
  );
  assert.deepEqual(tools.map((t) => t.command[0]), cases.map(([command]) => command), "written as given");
});

Deno.test("a relative command outside ./tools/bin/ is refused", async () => {
  for (const command of ["echo", "", "./tools/binx", "./tools/bin", "tools", "./bin/x", "C:tools/bin/x"]) {
    assert.equal(
      await errorOf({ name: "x", command: [command] }),
      'tool[0] "x": relative command[0] must start with ./tools/bin/',
      JSON.stringify(command),
    );
  }
});

Deno.test("a relative command that starts above the manifest's folder is refused as an escape", async () => {
  assert.equal(
    await errorOf({ name: "x", command: ["../tools/bin/x"] }),
    'tool[0] "x": command[0] escapes ./tools/bin after normalization (got "../tools/bin/x" -> "../tools/bin/x")',
  );
  assert.equal(
    await errorOf({ name: "x", command: ["..\\hack"] }),
    String.raw`tool[0] "x": command[0] escapes ./tools/bin after normalization (got "..\\hack" -> "../hack")`,
  );
});

Deno.test("a command that leaves ./tools/bin after normalization is refused, raw -> normalized", async () => {
  assert.equal(
    await errorOf({ name: "x", command: ["./tools/bin/../hack"] }),
    'tool[0] "x": command[0] escapes ./tools/bin after normalization (got "./tools/bin/../hack" -> "./tools/hack")',
  );
  assert.equal(
    await errorOf({ name: "x", command: [".\\tools\\bin\\..\\hack"] }),
    String
      .raw`tool[0] "x": command[0] escapes ./tools/bin after normalization (got ".\\tools\\bin\\..\\hack" -> "./tools/hack")`,
  );
  assert.equal(
    await errorOf({ name: "x", command: ["./tools/bin/a/../../../etc/passwd"] }),
    'tool[0] "x": command[0] escapes ./tools/bin after normalization ' +
      '(got "./tools/bin/a/../../../etc/passwd" -> "./etc/passwd")',
  );
});

Deno.test("./tools/bin itself names no program", async () => {
  for (const command of ["./tools/bin/", "./tools/bin/.", "./tools/bin/a/.."]) {
    assert.equal(
      await errorOf({ name: "x", command: [command] }),
      `tool[0] "x": command[0] must name a program inside ./tools/bin/ (got ${JSON.stringify(command)})`,
    );
  }
});

Deno.test("a symlink in tools/bin that points outside is refused; one that stays inside is fine", async () => {
  await using dir = await tempDir();
  await writeFiles(dir.path, { "outside/evil": "#!/bin/sh\n", "tools/bin/real": "#!/bin/sh\n" });
  await Deno.symlink(join(dir.path, "outside/evil"), join(dir.path, "tools/bin/evil"));
  await Deno.symlink("real", join(dir.path, "tools/bin/alias"));
  await Deno.symlink(join(dir.path, "outside"), join(dir.path, "tools/bin/sub"));
  const path = await writeManifest(dir.path, {
    tools: [
      { name: "evil", command: ["./tools/bin/evil"] },
      { name: "alias", command: ["./tools/bin/alias"] },
      { name: "sub", command: ["./tools/bin/sub/evil"] },
    ],
  });
  const real = await Deno.realPath(join(dir.path, "outside/evil"));
  const result = await loadManifest(path);
  assert.ok(!result.ok);
  assert.deepEqual(result.errors, [
    `tool[0] "evil": command[0] "./tools/bin/evil" resolves outside ./tools/bin through a symlink (-> ${
      JSON.stringify(real)
    })`,
    `tool[2] "sub": command[0] "./tools/bin/sub/evil" resolves outside ./tools/bin through a symlink (-> ${
      JSON.stringify(real)
    })`,
  ]);
});

Deno.test("a tools/bin that is itself a symlink is followed before the check", async () => {
  await using dir = await tempDir();
  await writeFiles(dir.path, { "elsewhere/bin/x": "#!/bin/sh\n" });
  await Deno.mkdir(join(dir.path, "tools"));
  await Deno.symlink(join(dir.path, "elsewhere/bin"), join(dir.path, "tools/bin"));
  const path = await writeManifest(dir.path, { tools: [{ name: "x", command: ["./tools/bin/x"] }] });
  const result = await loadManifest(path);
  assert.ok(result.ok, result.ok ? "" : result.errors.join("\n"));
});

Deno.test("an absolute command is refused unless allowAbsoluteCommands, and the message names the flag", async () => {
  for (const command of ["/bin/echo", "C:\\tools\\bin\\x.exe", "\\\\server\\share\\x"]) {
    assert.equal(
      await errorOf({ name: "x", command: [command] }),
      `tool[0] "x": absolute command[0] ${
        JSON.stringify(command)
      } is refused; pass --allow-absolute-commands to allow it (meant for tests)`,
    );
  }
  const { tools } = await toolsOf([{ name: "x", command: ["/bin/echo", "hi"] }], [], {
    allowAbsoluteCommands: true,
  });
  assert.equal(tools[0].program, "/bin/echo");
  assert.deepEqual(tools[0].args, ["hi"]);
});

Deno.test("relative commands resolve against the manifest's folder, not the process's cwd", async () => {
  await using dir = await tempDir();
  const path = await writeManifest(join(dir.path, "deep/er"), {
    tools: [{ name: "x", command: ["./tools/bin/x"] }],
  });
  assert.notEqual(Deno.cwd(), join(dir.path, "deep/er"));
  const result = await loadManifest(path);
  assert.ok(result.ok);
  assert.equal(result.manifest.tools[0].program, join(dir.path, "deep/er/tools/bin/x"));
  const direct = validateManifest(
    { tools: [{ name: "x", command: ["tools/bin/x"] }] },
    "/srv/app/tools.json",
  );
  assert.ok(direct.ok);
  assert.equal(direct.manifest.tools[0].program, "/srv/app/tools/bin/x");
});

// --- envPassthrough -----------------------------------------------------------------------------------------------

Deno.test("envPassthrough is trimmed, upper-cased and de-duplicated keeping first occurrences", async () => {
  const { tools } = await toolsOf([{
    name: "x",
    command: ["./tools/bin/x"],
    envPassthrough: [" tz ", "oai_http_timeout", "B", "TZ", "\tPath", "b", "_A1", "OAI_HTTP_TIMEOUT"],
  }]);
  assert.deepEqual(tools[0].envPassthrough, ["TZ", "OAI_HTTP_TIMEOUT", "B", "PATH", "_A1"]);
});

Deno.test("envPassthrough: an empty or blank entry is refused by index", async () => {
  for (const entry of ["", "   ", "\t"]) {
    assert.equal(
      await errorOf({ name: "x", command: ["./tools/bin/x"], envPassthrough: ["TZ", entry] }),
      'tool[0] "x": envPassthrough[1]: empty name',
    );
  }
});

Deno.test("envPassthrough: an invalid name is refused, quoted as written", async () => {
  assert.equal(
    await errorOf({ name: "x", command: ["./tools/bin/x"], envPassthrough: ["TZ", "OAI-API-KEY"] }),
    'tool[0] "x": envPassthrough[1]: invalid name "OAI-API-KEY" (must match [A-Z_][A-Z0-9_]*)',
  );
  assert.equal(
    await errorOf({ name: "x", command: ["./tools/bin/x"], envPassthrough: ["1BAD"] }),
    'tool[0] "x": envPassthrough[0]: invalid name "1BAD" (must match [A-Z_][A-Z0-9_]*)',
  );
  assert.equal(
    await errorOf({ name: "x", command: ["./tools/bin/x"], envPassthrough: [" oai-key "] }),
    'tool[0] "x": envPassthrough[0]: invalid name " oai-key " (must match [A-Z_][A-Z0-9_]*)',
  );
});

Deno.test("envPassthrough: every bad entry is reported, and the shape is checked", async () => {
  assert.deepEqual(
    await errorsOf([{ name: "x", command: ["./tools/bin/x"], envPassthrough: ["A-B", "", 3, "OK"] }]),
    [
      'tool[0] "x": envPassthrough[0]: invalid name "A-B" (must match [A-Z_][A-Z0-9_]*)',
      'tool[0] "x": envPassthrough[1]: empty name',
      'tool[0] "x": envPassthrough[2]: must be a string',
    ],
  );
  assert.equal(
    await errorOf({ name: "x", command: ["./tools/bin/x"], envPassthrough: "TZ" }),
    'tool[0] "x": envPassthrough must be an array of strings',
  );
});

// --- timeoutSec, description, flags --------------------------------------------------------------------------------

Deno.test("timeoutSec must be a positive integer", async () => {
  for (const timeoutSec of [0, -1, 1.5, "5", null, true]) {
    assert.equal(
      await errorOf({ name: "x", command: ["./tools/bin/x"], timeoutSec }),
      `tool[0] "x": timeoutSec must be a positive integer (got ${JSON.stringify(timeoutSec)})`,
    );
  }
  const { tools } = await toolsOf([
    { name: "a", command: ["./tools/bin/x"], timeoutSec: 1 },
    { name: "b", command: ["./tools/bin/x"] },
  ]);
  assert.deepEqual(tools.map((t) => t.timeoutSec), [1, undefined]);
});

Deno.test("timeoutSec fits a runtime timer (2^31-1 ms): a longer one would fire at once", async () => {
  assert.equal(
    await errorOf({ name: "x", command: ["./tools/bin/x"], timeoutSec: 2_147_484 }),
    'tool[0] "x": timeoutSec must be at most 2147483 (got 2147484)',
  );
  const { tools } = await toolsOf([{ name: "x", command: ["./tools/bin/x"], timeoutSec: 2_147_483 }]);
  assert.equal(tools[0].timeoutSec, 2_147_483);
});

Deno.test("description must be a string", async () => {
  assert.equal(
    await errorOf({ name: "x", command: ["./tools/bin/x"], description: ["a"] }),
    'tool[0] "x": description must be a string',
  );
});

Deno.test("readOnly and concurrent are booleans that default to false", async () => {
  assert.equal(
    await errorOf({ name: "x", command: ["./tools/bin/x"], readOnly: "yes" }),
    'tool[0] "x": readOnly must be a boolean',
  );
  assert.equal(
    await errorOf({ name: "x", command: ["./tools/bin/x"], readOnly: true, concurrent: 1 }),
    'tool[0] "x": concurrent must be a boolean',
  );
  const { tools } = await toolsOf([
    { name: "plain", command: ["./tools/bin/x"] },
    { name: "ro", command: ["./tools/bin/x"], readOnly: true },
    { name: "both", command: ["./tools/bin/x"], readOnly: true, concurrent: true },
    { name: "off", command: ["./tools/bin/x"], readOnly: false, concurrent: false },
  ]);
  assert.deepEqual(tools.map((t) => [t.name, t.readOnly, t.concurrent]), [
    ["plain", false, false],
    ["ro", true, false],
    ["both", true, true],
    ["off", false, false],
  ]);
});

Deno.test("a concurrent tool must be readOnly", async () => {
  for (const readOnly of [undefined, false]) {
    assert.equal(
      await errorOf({ name: "x", command: ["./tools/bin/x"], concurrent: true, readOnly }),
      'tool[0] "x": concurrent requires readOnly: true',
    );
  }
});

// --- schema --------------------------------------------------------------------------------------------------------

Deno.test("schema must be a JSON object", async () => {
  for (const schema of ["object", [], null, 1]) {
    assert.equal(
      await errorOf({ name: "x", command: ["./tools/bin/x"], schema }),
      'tool[0] "x": schema must be a JSON object',
    );
  }
});

Deno.test("a schema that fails the meta-schema is refused with ajv's reason", async () => {
  assert.equal(
    await errorOf({ name: "x", command: ["./tools/bin/x"], schema: { type: "bogus" } }),
    'tool[0] "x": schema is invalid: /type must be equal to one of the allowed values; /type must be array; ' +
      "/type must match a schema in anyOf",
  );
  assert.equal(
    await errorOf({
      name: "x",
      command: ["./tools/bin/x"],
      schema: { type: "object", properties: { a: { type: "string", minLength: -1 } } },
    }),
    'tool[0] "x": schema is invalid: /properties/a/minLength must be >= 0',
  );
});

Deno.test("a schema that does not compile passes the lazy load but not compileSchemas", async () => {
  const tool = {
    name: "x",
    command: ["./tools/bin/x"],
    schema: { type: "object", properties: { a: { $ref: "#/definitions/nope" } } },
  };
  const { manifest } = await toolsOf([tool]);
  const compiled = new SchemaCompiler().compile(manifest.tools[0].schema as Record<string, unknown>);
  assert.deepEqual(compiled, { ok: false, reason: "can't resolve reference #/definitions/nope from id #" });
  assert.equal(
    await errorOf(tool, { compileSchemas: true }),
    `tool[0] "x": schema is invalid: can't resolve reference #/definitions/nope from id #`,
  );
});

Deno.test("schemas of drafts 07, 2019-09 and 2020-12 are checked against their own meta-schema", async () => {
  const { manifest } = await toolsOf(
    [
      {
        name: "d7",
        command: ["./tools/bin/x"],
        schema: { $schema: "http://json-schema.org/draft-07/schema#" },
      },
      {
        name: "d2019",
        command: ["./tools/bin/x"],
        schema: {
          $schema: "https://json-schema.org/draft/2019-09/schema",
          type: "object",
          unevaluatedProperties: false,
        },
      },
      {
        name: "d2020",
        command: ["./tools/bin/x"],
        schema: { $schema: "https://json-schema.org/draft/2020-12/schema", type: "array", prefixItems: [{}] },
      },
    ],
    [],
    { compileSchemas: true },
  );
  const d2019 = new SchemaCompiler().compile(manifest.byName.get("d2019")!.schema as Record<string, unknown>);
  assert.ok(d2019.ok);
  assert.equal(d2019.validate({ extra: 1 }), false);
  assert.equal(
    await errorOf({
      name: "x",
      command: ["./tools/bin/x"],
      schema: { $schema: "https://json-schema.org/draft/2020-12/schema", prefixItems: [] },
    }),
    'tool[0] "x": schema is invalid: /prefixItems must NOT have fewer than 1 items',
  );
});

Deno.test("compiled schemas are compiled once and validate arguments", async () => {
  const { manifest } = await toolsOf([{
    name: "x",
    command: ["./tools/bin/x"],
    schema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
  }]);
  const schema = manifest.tools[0].schema as Record<string, unknown>;
  // The executor owns one compiler per manifest it runs: it compiles each schema once.
  const schemas = new SchemaCompiler();
  const first = schemas.compile(schema);
  assert.equal(schemas.compile(schema), first);
  assert.ok(first.ok);
  assert.equal(first.validate({ n: 1 }), true);
  assert.equal(first.validate({ n: "1" }), false, "no coercion inside ajv");
});

// --- alwaysLoad and outputSchema ----------------------------------------------------------------------------------

const RESULT_SCHEMA = {
  type: "object",
  properties: { timezone: { type: "string" }, iso8601: { type: "string" } },
  required: ["timezone", "iso8601"],
  additionalProperties: false,
};

Deno.test("alwaysLoad is a boolean that defaults to false; outputSchema is kept as written", async () => {
  const { tools, manifest } = await toolsOf([
    { name: "plain", command: ["./tools/bin/x"] },
    { name: "loaded", command: ["./tools/bin/x"], alwaysLoad: true, outputSchema: RESULT_SCHEMA },
    { name: "off", command: ["./tools/bin/x"], alwaysLoad: false },
  ]);
  assert.deepEqual(tools.map((t) => [t.name, t.alwaysLoad]), [["plain", false], ["loaded", true], [
    "off",
    false,
  ]]);
  assert.equal(tools[0].outputSchema, undefined);
  assert.deepEqual(plain(tools[1].outputSchema), RESULT_SCHEMA);
  assert.ok(Object.isFrozen(tools[1].outputSchema));
  assert.deepEqual(manifest.warnings, [], "both are fields the loader knows");
});

Deno.test("alwaysLoad must be a boolean", async () => {
  for (const alwaysLoad of ["yes", 1, null]) {
    assert.equal(
      await errorOf({ name: "x", command: ["./tools/bin/x"], alwaysLoad }),
      'tool[0] "x": alwaysLoad must be a boolean',
    );
  }
});

Deno.test("outputSchema must be a JSON object", async () => {
  for (const outputSchema of ["object", [], null, 1]) {
    assert.equal(
      await errorOf({ name: "x", command: ["./tools/bin/x"], outputSchema }),
      'tool[0] "x": outputSchema must be a JSON object',
    );
  }
});

Deno.test("outputSchema is checked against the meta-schema like schema, and compiled by compileSchemas", async () => {
  assert.equal(
    await errorOf({ name: "x", command: ["./tools/bin/x"], outputSchema: { type: "object", required: "a" } }),
    'tool[0] "x": outputSchema is invalid: /required must be array',
  );
  const tool = {
    name: "x",
    command: ["./tools/bin/x"],
    outputSchema: { type: "object", properties: { a: { $ref: "#/definitions/nope" } } },
  };
  await toolsOf([tool]);
  assert.equal(
    await errorOf(tool, { compileSchemas: true }),
    `tool[0] "x": outputSchema is invalid: can't resolve reference #/definitions/nope from id #`,
  );
});

Deno.test('outputSchema must be of "type": "object", as MCP requires of structured results', async () => {
  const cases: [unknown, string][] = [
    [{ type: "string" }, '(got "string")'],
    [{ type: ["object", "null"] }, '(got ["object","null"])'],
    [{ properties: {} }, "(got no type)"],
  ];
  for (const [outputSchema, got] of cases) {
    assert.equal(
      await errorOf({ name: "x", command: ["./tools/bin/x"], outputSchema }),
      `tool[0] "x": outputSchema must have "type": "object", as MCP requires ${got}`,
    );
  }
});

// --- warnings, every error, immutability --------------------------------------------------------------------------

Deno.test("unknown fields are warnings, not errors", async () => {
  const { result, path } = await load({
    $schema: "./schema.json",
    version: 2,
    tools: [{ name: "x", command: ["./tools/bin/x"], extra: true, "x-vendor": {} }],
  });
  assert.ok(result.ok);
  assert.deepEqual(result.warnings, [
    `${path}: unknown field "version" (ignored)`,
    'tool[0] "x": unknown field "extra" (ignored)',
    'tool[0] "x": unknown field "x-vendor" (ignored)',
  ]);
  assert.deepEqual(result.manifest.warnings, result.warnings);
});

Deno.test("every error is reported, one per line in manifest order, and the warnings alongside", async () => {
  const { result } = await load({
    tools: [
      { name: "ok", command: ["./tools/bin/ok"] },
      { name: "bad name", command: [], timeoutSec: 0, extra: 1 },
      { command: ["./tools/bin/x"] },
      { name: "ok", command: ["echo"], envPassthrough: ["A-B"], concurrent: true },
      { name: "esc", command: ["./tools/bin/../x"], schema: "nope", readOnly: 1 },
    ],
  });
  assert.ok(!result.ok);
  assert.deepEqual(result.errors, [
    'tool[1] "bad name": name must match ^[A-Za-z0-9_-]{1,64}$',
    'tool[1] "bad name": command must have at least program name',
    'tool[1] "bad name": timeoutSec must be a positive integer (got 0)',
    "tool[2]: name is required",
    'tool[3] "ok": duplicate name',
    'tool[3] "ok": relative command[0] must start with ./tools/bin/',
    'tool[3] "ok": envPassthrough[0]: invalid name "A-B" (must match [A-Z_][A-Z0-9_]*)',
    'tool[3] "ok": concurrent requires readOnly: true',
    'tool[4] "esc": schema must be a JSON object',
    'tool[4] "esc": command[0] escapes ./tools/bin after normalization (got "./tools/bin/../x" -> "./tools/x")',
    'tool[4] "esc": readOnly must be a boolean',
  ]);
  assert.deepEqual(result.warnings, ['tool[1] "bad name": unknown field "extra" (ignored)']);
});

Deno.test("tool specs are frozen", async () => {
  const { tools, manifest } = await toolsOf([{
    name: "x",
    command: ["./tools/bin/x", "a"],
    envPassthrough: ["A"],
  }]);
  assert.ok(Object.isFrozen(manifest));
  assert.ok(Object.isFrozen(manifest.tools));
  assert.ok(Object.isFrozen(tools[0]));
  assert.ok(Object.isFrozen(tools[0].command));
  assert.ok(Object.isFrozen(tools[0].args));
  assert.ok(Object.isFrozen(tools[0].envPassthrough));
});

// --- secrets ------------------------------------------------------------------------------------------------------

Deno.test("secrets are validated like envPassthrough: trimmed, upper-cased, de-duplicated, bad names by index", async () => {
  const { tools } = await toolsOf([
    { name: "x", command: ["./tools/bin/x"], secrets: [" github_token ", "GITHUB_TOKEN", "NPM_TOKEN"] },
  ], ["x"]);
  assert.deepEqual(tools[0].secrets, ["GITHUB_TOKEN", "NPM_TOKEN"]);
  assert.deepEqual(tools[0].envPassthrough, [], "a secret is not a passthrough name");
  assert.deepEqual(
    await errorsOf([{ name: "x", command: ["./tools/bin/x"], secrets: ["GH-TOKEN", "", 3] }]),
    [
      'tool[0] "x": secrets[0]: invalid name "GH-TOKEN" (must match [A-Z_][A-Z0-9_]*)',
      'tool[0] "x": secrets[1]: empty name',
      'tool[0] "x": secrets[2]: must be a string',
    ],
  );
  assert.equal(
    await errorOf({ name: "x", command: ["./tools/bin/x"], secrets: "GITHUB_TOKEN" }),
    'tool[0] "x": secrets must be an array of strings',
  );
});

Deno.test("store_secret is toolgate's own: no manifest tool may take the name", async () => {
  assert.equal(
    await errorOf({ name: "store_secret", command: ["./tools/bin/x"] }),
    `tool[0] "store_secret": the name is toolgate's own (the secret tool every caller offers); rename the tool`,
  );
});

Deno.test("validate's schema cache: a changed manifest compiles only its new schemas, and a new bad one is still an error", async () => {
  await using dir = await tempDir();
  const state = join(dir.path, "state");
  await Deno.mkdir(state, { mode: 0o700 });
  const tool = (name: string, schema: unknown) => ({ name, command: ["./tools/bin/t"], schema });
  const good = (i: number) => ({
    type: "object",
    properties: { [`p${i}`]: { type: "string", default: "" } },
    additionalProperties: false,
  });
  const options = { compileSchemas: true, cacheDir: state };
  const first = await writeManifest(dir.path, { tools: [tool("a", good(1)), tool("b", good(2))] }, ["t"]);
  assert.ok((await loadManifest(first, options)).ok);
  const cached = JSON.parse(await Deno.readTextFile(join(state, "cache", "compiled-schemas.json")));
  assert.equal(cached.value.length, 2, "both schemas are remembered as compiled");
  // The same schemas with a new one that no engine compiles (an unknown type): the error is still said.
  const changed = await writeManifest(
    dir.path,
    { tools: [tool("a", good(1)), tool("b", good(2)), tool("c", { type: "nope" })] },
    ["t"],
  );
  const result = await loadManifest(changed, options);
  assert.equal(result.ok, false);
  assert.match(result.errors.join("\n"), /tool\[2\] "c".*schema is invalid/);
  // A remembered schema still answers its risk marks: the cache skips the engine, never the manifest's own rules.
  const marked = {
    ...good(1),
    properties: { p1: { type: "string", default: "", "x-toolgate-risk": "yes" } },
  };
  const risky = await writeManifest(dir.path, { tools: [tool("a", marked)] }, ["t"]);
  assert.equal((await loadManifest(risky, options)).ok, false);
});

Deno.test("mcpServers: each mistake is one precise error naming the server", async () => {
  const { validateManifest } = await import("../../src/manifest/manifest.ts");
  const result = validateManifest(
    {
      tools: [],
      mcpServers: {
        fs: { command: "npx", url: "https://x.example/mcp" },
        web: { url: "ftp://x.example" },
        h: { url: "https://x.example/mcp", headers: { Authorization: "Bearer ${TOKEN}" } },
        "a__b": { command: "node" },
        t: { command: "node", timeoutSec: -1, readOnly: "read", permissions: "nope" },
      },
    },
    "/srv/p/tools.json",
  );
  assert.equal(result.ok, false);
  const errors = result.ok ? [] : result.errors;
  assert.ok(
    errors.includes('mcpServers "fs": needs exactly one of "command" (stdio) and "url" (Streamable HTTP)'),
  );
  assert.ok(errors.includes('mcpServers "web": url must be an http or https URL (got "ftp://x.example")'));
  assert.ok(
    errors.includes(
      'mcpServers "h": headers "Authorization" names the secret TOKEN, which "secrets" does not list',
    ),
  );
  assert.ok(errors.some((e) => e.startsWith('mcpServers "a__b": the name must be')));
  assert.ok(errors.includes('mcpServers "t": timeoutSec must be a positive integer up to 2147483 (got -1)'));
  assert.ok(errors.includes('mcpServers "t": readOnly must be an array of strings'));
  assert.ok(errors.some((e) => e.startsWith('mcpServers "t": permissions: unknown profile "nope"')));
  const good = validateManifest(
    { mcpServers: { fs: { command: "node", args: ["s.js"], readOnly: ["read"] } } },
    "/srv/p/tools.json",
  );
  assert.ok(good.ok);
  assert.deepEqual(good.warnings, []);
  assert.equal(good.ok && good.manifest.servers[0].profile.name, "none");
});
