/**
 * The one decision of every test that needs something of the host (bubblewrap, nats-server, chromium, the
 * gateway's installed MCP servers, the conformance suite, Node 22 for the Inspector, PyPI's servers, a pty, root,
 * python3, a C compiler, bash): {@linkcode requires} says whether it is there, prints why not, and gives the `ignore`
 * value of `Deno.test({ ignore })`, so that a skip is an ignored test counted in `deno test`'s "N ignored", never an
 * early return that passes. Where the facility's `TOOLGATE_REQUIRE_*` variable is 1 (CI sets them), a missing facility
 * throws instead. {@linkcode whyMissing} looks for the facilities this module can find itself.
 *
 * Not here: installing what a facility needs (tests/gateway_support.ts, tests/node22.ts, the conformance and
 * Inspector tests do), the tests' own wrappers (`hostTest`, `poolTest`, ... call this module).
 *
 * @module
 */
import { findProgram } from "../src/base/find_program.ts";
import { probeSandbox } from "../src/sandbox/sandbox.ts";

/** The facilities a test may need, each with the variable that turns its absence into a failure. */
export const FACILITIES = {
  /** bubblewrap that confines (and what the confined tests run inside it: curl, node, perl, a pids cgroup). */
  bwrap: "TOOLGATE_REQUIRE_BWRAP",
  /** nats-server with JetStream. */
  nats: "TOOLGATE_REQUIRE_NATS",
  /** Debian's chromium for the console's browser tests. */
  browser: "TOOLGATE_REQUIRE_BROWSER",
  /** The gateway's real MCP servers from npm, and PyPI's `mcp` SDK in a venv. */
  gateway: "TOOLGATE_REQUIRE_GATEWAY",
  /** The MCP conformance suite from npm. */
  conformance: "TOOLGATE_REQUIRE_CONFORMANCE",
  /** Node 22 from npm (the Inspector and Node's own fetch through a proxy need it). */
  inspector: "TOOLGATE_REQUIRE_INSPECTOR",
  /** MCP servers published on PyPI (this machine's package index may not carry them). */
  pypi_servers: "TOOLGATE_REQUIRE_PYPI_SERVERS",
  /** A pseudo-terminal (python3's pty module). */
  pty: "TOOLGATE_REQUIRE_PTY",
  /** Running as root (giving a folder to another user, making a device node). */
  root: "TOOLGATE_REQUIRE_ROOT",
  /** /usr/bin/python3 (the tool protocol's Python examples). */
  python3: "TOOLGATE_REQUIRE_PYTHON",
  /** A C compiler (cc, gcc or clang), which builds the session starter (src/build/native.ts). */
  cc: "TOOLGATE_REQUIRE_CC",
  /** bash, through which the installed command closes the descriptors from 10 up that its parent left open. */
  bash: "TOOLGATE_REQUIRE_BASH",
  /** No runtime for `deno compile` in Deno's cache, so that its missing download can be seen (CI's fresh home). */
  uncached_denort: "TOOLGATE_REQUIRE_UNCACHED_DENORT",
} as const;

/** A facility a test may need. */
export type Facility = keyof typeof FACILITIES;

/** Whether `facility`'s `TOOLGATE_REQUIRE_*` variable is 1 in `env`: its absence is then a failure. */
export function isRequired(
  facility: Facility,
  env: (name: string) => string | undefined = Deno.env.get,
): boolean {
  return env(FACILITIES[facility]) === "1";
}

/**
 * The `ignore` value for a test `who` that needs `facility`, `missing` saying why it is not there (`undefined`
 * when it is): `false` when it is there; `true`, after printing why, when it is not; a thrown error when it is
 * not and its variable is 1.
 *
 * @example A facility that is there is not ignored; one that is missing and required throws
 * ```ts
 * import assert from "node:assert/strict";
 * import { requires } from "./requires.ts";
 *
 * assert.equal(requires("pty", undefined, "a test"), false);
 * assert.throws(
 *   () => requires("pty", "no pty here", "a test", () => "1"),
 *   /a test: no pty here \(TOOLGATE_REQUIRE_PTY=1\)/,
 * );
 * ```
 */
export function requires(
  facility: Facility,
  missing: string | undefined,
  who: string,
  env: (name: string) => string | undefined = Deno.env.get,
): boolean {
  if (missing === undefined) return false;
  const variable = FACILITIES[facility];
  if (isRequired(facility, env)) throw new Error(`${who}: ${missing} (${variable}=1)`);
  console.log(`skipping ${who}: ${missing} (${variable}=1 fails instead)`);
  return true;
}

/**
 * Registers `Deno.test` `name` needing `facility` (`missing` as {@linkcode requires} takes it): ignored with the
 * reason printed where it is missing; where it is required and missing, the test runs and fails with the reason.
 */
export function facilityTest(
  facility: Facility,
  missing: string | undefined,
  options: Omit<Deno.TestDefinition, "ignore">,
): void {
  let ignore = false;
  let problem: unknown;
  try {
    ignore = requires(facility, missing, `"${options.name}"`);
  } catch (error) {
    problem = error;
  }
  const fn = options.fn;
  Deno.test({
    ...options,
    ignore,
    fn: async (t) => {
      if (problem !== undefined) throw problem;
      await fn(t);
    },
  });
}

/** Where Debian and others put programs a user's PATH may lack (`/usr/sbin` holds Debian's nats-server). */
export const SYSTEM_DIRS = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/**
 * A program by name, looked for on `path` and then in the system folders a user's PATH may lack: the one lookup
 * the tests and the docs harness share. `undefined` where it is nowhere.
 */
export function findHostProgram(name: string, path: string = Deno.env.get("PATH") ?? ""): string | undefined {
  return findProgram(name, path === "" ? SYSTEM_DIRS : `${path}:${SYSTEM_DIRS}`);
}

function isRoot(): boolean {
  try {
    const out = new Deno.Command("id", { args: ["-u"], stdout: "piped", stderr: "null" }).outputSync();
    return new TextDecoder().decode(out.stdout).trim() === "0";
  } catch {
    return false;
  }
}

function noPty(): string | undefined {
  try {
    const status = new Deno.Command("python3", { args: ["-c", "import pty"], stdout: "null", stderr: "null" })
      .outputSync();
    return status.success ? undefined : "python3 has no pty module";
  } catch {
    return "python3 is not installed";
  }
}

const exists = (path: string): boolean => {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
};

/** Debian's chromium, which the browser tests drive. */
export const CHROMIUM = "/usr/bin/chromium";

/**
 * Why `facility` is not on this machine, or `undefined` where it is, for the facilities this module finds itself
 * (bubblewrap, nats-server, chromium, a pty, root, python3, a C compiler); the others are installed by their
 * tests' helpers, which say why they could not.
 */
export async function whyMissing(
  facility: "bwrap" | "nats" | "browser" | "pty" | "root" | "python3" | "cc" | "bash",
): Promise<string | undefined> {
  switch (facility) {
    case "bwrap": {
      const support = await probeSandbox(
        Deno.env.get("PATH") ?? "/usr/bin:/bin",
        "bwrap",
        Deno.env.toObject(),
      );
      return support.ok ? undefined : support.reason;
    }
    case "nats":
      return findHostProgram("nats-server") === undefined
        ? "nats-server is not installed (apt-get install nats-server)"
        : undefined;
    case "browser":
      return exists(CHROMIUM) ? undefined : `no browser at ${CHROMIUM} (apt-get install chromium)`;
    case "pty":
      return noPty();
    case "root":
      return isRoot() ? undefined : "the tests do not run as root";
    case "python3":
      return exists("/usr/bin/python3") ? undefined : "/usr/bin/python3 is missing here";
    case "cc":
      return ["cc", "gcc", "clang"].some((name) => findHostProgram(name) !== undefined)
        ? undefined
        : "no C compiler (cc, gcc or clang) is installed (apt-get install gcc)";
    case "bash":
      return findHostProgram("bash") === undefined
        ? "bash is not installed (apt-get install bash)"
        : undefined;
  }
}
