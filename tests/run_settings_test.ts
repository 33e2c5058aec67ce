import assert from "node:assert/strict";
import { join } from "node:path";
import { type Io, parseCommandArgs, UsageError } from "../src/commands/cli.ts";
import { runCommand } from "../src/commands/run.ts";
import { AGENT_DEFAULTS, parseSeconds, resolveSettings } from "../src/commands/run_settings.ts";

function io(env: Record<string, string> = {}, stdin = "", cwd = "/tmp"): Io {
  return {
    env,
    cwd,
    stdout: () => Promise.resolve(),
    stderr: () => Promise.resolve(),
    stdin: () => Promise.resolve(stdin),
    interactive: false,
  };
}

/** The settings of `argv`, with a model configured (OAI_MODEL) unless `env` says otherwise. */
const settingsOf = (argv: string[], env: Record<string, string> = {}, stdin = "") =>
  resolveSettings(parseCommandArgs(argv, runCommand), io({ OAI_MODEL: "test-model", ...env }, stdin));

Deno.test("settings: no model configured anywhere is a usage error naming --model and OAI_MODEL", async () => {
  const bare = (env: Record<string, string>) =>
    resolveSettings(parseCommandArgs(["--prompt", "hi"], runCommand), io(env));
  await usageError(bare({}), /^no model is configured: pass --model NAME or set OAI_MODEL/);
  await usageError(bare({ OAI_MODEL: " " }), /api\.openai\.com/);
  await usageError(bare({ OAI_BASE_URL: "http://127.0.0.1:8080/v1" }), /a model 127\.0\.0\.1:8080 serves/);
  assert.equal((await settingsOf(["--prompt", "hi"], { OAI_MODEL: "qwen3" })).model, "qwen3");
});

async function usageError(promise: Promise<unknown>, pattern: RegExp): Promise<void> {
  const error = await promise.then(() => undefined, (e) => e);
  assert.ok(error instanceof UsageError, `expected a UsageError, got ${error}`);
  assert.match(error.message, pattern);
}

Deno.test("settings: defaults", async () => {
  // The model has no default (issue 26): a run names it.
  const settings = await settingsOf(["--prompt", "hi", "--model", "m"]);
  assert.equal(settings.baseUrl, AGENT_DEFAULTS.baseUrl);
  assert.equal(settings.model, "m");
  assert.equal(settings.apiKey, undefined);
  assert.equal(settings.maxSteps, 8);
  assert.equal(settings.httpTimeoutMs, 90_000);
  assert.equal(settings.httpRetries, 2);
  assert.equal(settings.temperature, undefined);
  assert.equal(settings.system, undefined);
  assert.equal(settings.prompt, "hi");
  assert.deepEqual([settings.stream, settings.yes, settings.quiet, settings.debug], [
    false,
    false,
    false,
    false,
  ]);
});

Deno.test("settings: the environment over the defaults, a flag over the environment", async () => {
  const env = {
    OAI_BASE_URL: "http://env.example/v1/",
    OAI_MODEL: "env-model",
    OAI_API_KEY: "env-key",
    OPENAI_API_KEY: "openai-key",
    OAI_HTTP_TIMEOUT: "30s",
    OAI_HTTP_RETRIES: "5",
  };
  const fromEnv = await settingsOf(["--prompt", "hi"], env);
  assert.equal(fromEnv.baseUrl, "http://env.example/v1", "a trailing slash is dropped");
  assert.equal(fromEnv.model, "env-model");
  assert.equal(fromEnv.apiKey, "env-key");
  assert.equal(fromEnv.httpTimeoutMs, 30_000);
  assert.equal(fromEnv.httpRetries, 5);
  const fromFlags = await settingsOf([
    "--prompt",
    "hi",
    "--base-url",
    "https://flag.example/api",
    "--model",
    "flag-model",
    "--api-key",
    "flag-key",
    "--http-timeout",
    "12.5",
    "--http-retries",
    "0",
    "--max-steps",
    "3",
    "--temperature",
    "0",
  ], env);
  assert.equal(fromFlags.baseUrl, "https://flag.example/api");
  assert.equal(fromFlags.model, "flag-model");
  assert.equal(fromFlags.apiKey, "flag-key");
  assert.equal(fromFlags.httpTimeoutMs, 12_500);
  assert.equal(fromFlags.httpRetries, 0);
  assert.equal(fromFlags.maxSteps, 3);
  assert.equal(fromFlags.temperature, 0);
});

Deno.test("settings: OPENAI_API_KEY when OAI_API_KEY is not set", async () => {
  assert.equal((await settingsOf(["--prompt", "hi"], { OPENAI_API_KEY: "k2" })).apiKey, "k2");
  assert.equal(
    (await settingsOf(["--prompt", "hi"], { OAI_API_KEY: "", OPENAI_API_KEY: "k2" })).apiKey,
    "k2",
  );
});

Deno.test("settings: --prompt-file and --system-file read files, `-` reads stdin", async () => {
  const dir = await Deno.makeTempDir({ prefix: "toolgate_settings_" });
  try {
    await Deno.writeTextFile(join(dir, "system.txt"), "Be terse.");
    const settings = await resolveSettings(
      parseCommandArgs(["--prompt-file", "-", "--system-file", "system.txt"], runCommand),
      io({ OAI_MODEL: "m" }, "from stdin", dir),
    );
    assert.equal(settings.prompt, "from stdin");
    assert.equal(settings.system, "Be terse.");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("settings: usage errors name the offending value", async () => {
  await usageError(settingsOf([]), /--prompt TEXT or --prompt-file PATH/);
  await usageError(settingsOf(["--prompt", "a", "--prompt-file", "b"]), /cannot be used together/);
  await usageError(
    settingsOf(["--system", "a", "--system-file", "b", "--prompt", "x"]),
    /cannot be used together/,
  );
  await usageError(settingsOf(["--prompt-file", "-", "--system-file", "-"]), /both read stdin/);
  await usageError(
    settingsOf(["--prompt-file", "/no/such/file"]),
    /--prompt-file "\/no\/such\/file": cannot read it/,
  );
  await usageError(settingsOf(["--prompt", "  "]), /empty/);
  await usageError(settingsOf(["--prompt", "a", "--max-steps", "0"]), /--max-steps must be an integer > 0/);
  await usageError(settingsOf(["--prompt", "a", "--max-steps", "2.5"]), /--max-steps/);
  await usageError(
    settingsOf(["--prompt", "a"], { OAI_HTTP_TIMEOUT: "soon" }),
    /OAI_HTTP_TIMEOUT must be a number/,
  );
  await usageError(
    settingsOf(["--prompt", "a", "--http-retries=-1"]),
    /--http-retries must be an integer >= 0/,
  );
  await usageError(settingsOf(["--prompt", "a", "--temperature", "hot"]), /--temperature/);
  await usageError(
    settingsOf(["--prompt", "a", "--base-url", "ftp://x"]),
    /--base-url must be an http\(s\) URL/,
  );
  await usageError(settingsOf(["--prompt", "a"], { OAI_BASE_URL: "not a url" }), /OAI_BASE_URL must be/);
});

Deno.test("settings: --load-messages alone is enough", async () => {
  const settings = await settingsOf(["--load-messages", "run.json"]);
  assert.equal(settings.prompt, undefined);
  assert.equal(settings.loadMessages, "/tmp/run.json");
});

Deno.test("settings: timeouts in seconds or as Go durations", () => {
  assert.equal(parseSeconds("90", "x"), 90);
  assert.equal(parseSeconds("90s", "x"), 90);
  assert.equal(parseSeconds("1m30s", "x"), 90);
  assert.equal(parseSeconds("500ms", "x"), 0.5);
  assert.throws(() => parseSeconds("0s", "x"), UsageError);
  assert.throws(() => parseSeconds("-1", "x"), UsageError);
});

Deno.test("settings: the answer size cap: 16 MiB by default, OAI_HTTP_MAX_BYTES, --http-max-bytes over it", async () => {
  assert.equal((await settingsOf(["--prompt", "hi"])).httpMaxBytes, 16 * 1024 * 1024);
  assert.equal((await settingsOf(["--prompt", "hi"], { OAI_HTTP_MAX_BYTES: "2048" })).httpMaxBytes, 2048);
  const both = await settingsOf(["--prompt", "hi", "--http-max-bytes", "4096"], {
    OAI_HTTP_MAX_BYTES: "2048",
  });
  assert.equal(both.httpMaxBytes, 4096);
  await usageError(
    settingsOf(["--prompt", "hi", "--http-max-bytes", "0"]),
    /--http-max-bytes must be an integer > 0/,
  );
  await usageError(
    settingsOf(["--prompt", "hi"], { OAI_HTTP_MAX_BYTES: "lots" }),
    /OAI_HTTP_MAX_BYTES must be/,
  );
});

Deno.test("settings: OPENAI_BASE_URL names the endpoint when OAI_BASE_URL does not, as the launch plan reads it", async () => {
  const { planLaunch } = await import("../src/launcher/launch_plan.ts");
  const env = { OPENAI_BASE_URL: "http://127.0.0.1:8080/v1", HOME: "/tmp" };
  assert.equal((await settingsOf(["--prompt", "hi"], env)).baseUrl, "http://127.0.0.1:8080/v1");
  // The launch grants that very host, and no other endpoint.
  const plan = await planLaunch(["--prompt", "hi"], env, "/tmp");
  assert.equal(plan.facts.endpoint, "http://127.0.0.1:8080/v1");
  const both = { ...env, OAI_BASE_URL: "http://127.0.0.1:9090/v1" };
  assert.equal(
    (await settingsOf(["--prompt", "hi"], both)).baseUrl,
    "http://127.0.0.1:9090/v1",
    "agentcli's first",
  );
  assert.equal(
    (await planLaunch(["--prompt", "hi"], both, "/tmp")).facts.endpoint,
    "http://127.0.0.1:9090/v1",
  );
});

Deno.test("settings: images and audio are off unless --images / --audio or OAI_IMAGES / OAI_AUDIO say so", async () => {
  const off = await settingsOf(["--prompt", "hi"]);
  assert.deepEqual([off.images, off.audio], [false, false]);
  const flags = await settingsOf(["--prompt", "hi", "--images", "--audio"]);
  assert.deepEqual([flags.images, flags.audio], [true, true]);
  const env = await settingsOf(["--prompt", "hi"], { OAI_IMAGES: "1", OAI_AUDIO: "0" });
  assert.deepEqual([env.images, env.audio], [true, false]);
  await usageError(
    settingsOf(["--prompt", "hi"], { OAI_IMAGES: "maybe" }),
    /^OAI_IMAGES must be 1 or 0 \(got "maybe"\)/,
  );
});
