// Attacks on the event loop through a schema (issue 11, "What was seen" 5): a model's arguments against a pattern
// that backtracks catastrophically (`pattern`, `patternProperties`) or polynomially (the `url` format) answer
// within 100 ms; a pattern only a backtracking engine can match is refused, said at load, never run.
import assert from "node:assert/strict";
import type { FailureEnvelope } from "../../src/contract.ts";
import { Executor } from "../../src/run/executor.ts";
import { loadManifest, validateManifest } from "../../src/manifest/manifest.ts";
import { HOSTILE } from "./hostile.ts";
import { realTempDir } from "./helpers.ts";
import { loadSchemaEngine } from "../../src/manifest/schema.ts";

// validateManifest checks schemas with the engine loaded on demand: load it once for these tests.
await loadSchemaEngine();

async function hostileExecutor(): Promise<Executor> {
  const loaded = await loadManifest(HOSTILE);
  assert.ok(loaded.ok, loaded.ok ? "" : loaded.errors.join("\n"));
  return new Executor({
    manifest: loaded.manifest,
    env: { PATH: "/usr/bin:/bin" },
    cwd: await realTempDir(),
    auditDir: null,
    sandbox: "off",
  });
}

/** The preflight's verdict on `args` for the `spell` tool, and how long it took. */
async function timed(executor: Executor, args: unknown): Promise<{ ok: boolean; ms: number; kind?: string }> {
  const started = performance.now();
  const prepared = await executor.prepare("spell", JSON.stringify(args));
  const ms = performance.now() - started;
  return { ok: prepared.ok, ms, kind: prepared.ok ? undefined : prepared.envelope.kind };
}

Deno.test("a catastrophic pattern, ^(a+)+$, against a 29-character argument answers within 100 ms", async () => {
  const executor = await hostileExecutor();
  // The schema compiles at the first call: that is not the match being timed.
  assert.equal((await timed(executor, { word: "aaaa" })).ok, true);
  const verdict = await timed(executor, { word: "a".repeat(28) + "!" });
  assert.equal(verdict.kind, "invalid_args");
  assert.ok(verdict.ms < 100, `answered in ${verdict.ms.toFixed(1)} ms`);
  // Linear, not merely lucky at 29: a million characters too.
  const long = await timed(executor, { word: "a".repeat(1_000_000) + "!" });
  assert.equal(long.kind, "invalid_args");
  assert.ok(long.ms < 1000, `a million characters answered in ${long.ms.toFixed(1)} ms`);
});

Deno.test("a catastrophic patternProperties key against a 29-character argument name answers within 100 ms", async () => {
  const executor = await hostileExecutor();
  assert.equal((await timed(executor, { xxy: "fine" })).ok, true);
  const verdict = await timed(executor, { ["x".repeat(29)]: "v" });
  assert.equal(verdict.kind, "invalid_args");
  assert.ok(verdict.ms < 100, `answered in ${verdict.ms.toFixed(1)} ms`);
});

Deno.test("the url format answers a polynomial attack within 100 ms, and still keeps private addresses out", async () => {
  const executor = await hostileExecutor();
  assert.equal((await timed(executor, { link: "https://example.com/a?b=c" })).ok, true);
  // recheck's attack on ajv-formats' url expression: quadratic under backtracking (~0.3 s at 20,000 characters).
  const attack = "ftp://172.30.3.56" + "4.1.6.7:155".repeat(20_000) + "\u0000";
  const verdict = await timed(executor, { link: attack });
  assert.equal(verdict.kind, "invalid_args");
  assert.ok(verdict.ms < 100, `answered in ${verdict.ms.toFixed(1)} ms`);
  for (
    const [link, ok] of [
      ["http://93.184.216.34/", true],
      ["http://user:pass@example.org:8080/path", true],
      ["http://10.0.0.1/", false],
      ["http://127.0.0.1:8080/", false],
      ["http://169.254.169.254/latest/meta-data", false],
      ["http://192.168.1.1/", false],
      ["http://172.16.0.1/", false],
      ["http://172.32.0.1/", true],
      ["http://192.169.0.1/", true],
      ["ftp://caf\u00e9.fr/x", true],
      ["http://localhost/", false],
    ] as const
  ) {
    assert.equal((await timed(executor, { link })).ok, ok, link);
  }
});

Deno.test("a pattern only a backtracking engine can match is said at load and its calls are answered unavailable", async () => {
  const tool = {
    name: "pin",
    command: ["/bin/cat"],
    schema: { type: "object", properties: { pin: { type: "string", pattern: "^(?=.*\\d)(\\w)\\1+$" } } },
  };
  const loaded = validateManifest({ tools: [tool] }, "/srv/tools.json", { allowAbsoluteCommands: true });
  assert.ok(loaded.ok);
  assert.equal(loaded.warnings.length, 1);
  assert.match(
    loaded.warnings[0],
    /^tool\[0\] "pin": schema: the pattern .* cannot be matched in linear time/,
  );
  assert.match(loaded.warnings[0], /calls of this tool will be answered unavailable/);
  const executor = new Executor({
    manifest: loaded.manifest,
    env: { PATH: "/usr/bin:/bin" },
    cwd: await realTempDir(),
    auditDir: null,
    sandbox: "off",
  });
  const envelope = await executor.call("pin", '{"pin":"1111"}') as FailureEnvelope;
  assert.equal(envelope.kind, "unavailable");
  assert.equal(envelope.retryable, false);
  assert.match(envelope.message, /schema does not compile: .*linear time/);
  // `toolgate validate` compiles every schema: there it is an error.
  const strict = validateManifest({ tools: [tool] }, "/srv/tools.json", {
    allowAbsoluteCommands: true,
    compileSchemas: true,
  });
  assert.equal(strict.ok, false);
});
