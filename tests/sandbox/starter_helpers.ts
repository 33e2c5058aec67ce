/**
 * What the session starter's tests share: a scratch user with the starter built, and one run of it.
 *
 * @module
 */
import assert from "node:assert/strict";
import { buildSessionStart } from "../../src/build/native.ts";
import { sessionStartPath } from "../../src/sandbox/session_start.ts";
import { realTempDir } from "../security/helpers.ts";

const PATH = Deno.env.get("PATH") ?? "/usr/local/bin:/usr/bin:/bin";
const decoder = new TextDecoder();

/** A scratch user whose data folder holds a session starter built now. */
export async function userWithStarter(): Promise<{ env: Record<string, string>; starter: string }> {
  const home = await realTempDir("toolgate_starter_home_");
  const env = { PATH, HOME: home };
  const built = await buildSessionStart(env);
  assert.ok(built.ok, built.ok ? "" : built.reason);
  assert.equal(built.path, sessionStartPath(env));
  return { env, starter: built.path };
}

/** Runs the starter with `args`; its exit code, stdout and stderr. */
export async function start(
  starter: string,
  args: string[],
): Promise<{ code: number; out: string; err: string }> {
  const output = await new Deno.Command(starter, {
    args,
    clearEnv: true,
    env: { PATH: "/usr/bin:/bin" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: output.code, out: decoder.decode(output.stdout), err: decoder.decode(output.stderr) };
}
