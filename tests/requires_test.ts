/**
 * Skips are counted and held (issue 43): a test needing a missing facility is an ignored test that `deno test`
 * counts, with its reason printed, and a failure where the facility's TOOLGATE_REQUIRE_* variable is 1; and no
 * test file decides a skip another way (its own variable, an early return that passes, a loop that registers no
 * confined variant, a root-only or pty-only `ignore`).
 */
import assert from "node:assert/strict";
import { join, relative } from "node:path";
import { FACILITIES, requires } from "./requires.ts";
import { REPO, runProgram, tempDir } from "./support.ts";

/** A test file of two tests, one needing a pty that `missing` says is missing. */
const PROBE = (requiresModule: string) => `
import { facilityTest } from ${JSON.stringify(requiresModule)};
facilityTest("pty", "no pty in this probe", { name: "needs a pty", fn: () => {} });
Deno.test("needs nothing", () => {});
`;

async function runProbe(env: Record<string, string>) {
  await using dir = await tempDir();
  const file = join(dir.path, "probe_test.ts");
  await Deno.writeTextFile(file, PROBE(join(REPO, "tests", "requires.ts")));
  return await runProgram(Deno.execPath(), ["test", "--no-prompt", "--allow-all", "--no-check", file], {
    cwd: dir.path,
    env: { NO_COLOR: "1", TOOLGATE_REQUIRE_PTY: "", ...env },
  });
}

Deno.test("requires: a missing facility is an ignored test with its reason, counted by deno test", async () => {
  const run = await runProbe({});
  assert.equal(run.code, 0, run.stdout + run.stderr);
  assert.match(
    run.stdout,
    /skipping "needs a pty": no pty in this probe \(TOOLGATE_REQUIRE_PTY=1 fails instead\)/,
  );
  assert.match(run.stdout, /needs a pty \.\.\. ignored/);
  assert.match(run.stdout, /ok \| 1 passed \| 0 failed \| 1 ignored/);
});

Deno.test("requires: a missing facility its variable requires fails the test that needs it, with the reason", async () => {
  const run = await runProbe({ TOOLGATE_REQUIRE_PTY: "1" });
  assert.equal(run.code, 1, run.stdout + run.stderr);
  assert.match(run.stdout + run.stderr, /"needs a pty": no pty in this probe \(TOOLGATE_REQUIRE_PTY=1\)/);
  assert.match(run.stdout, /FAILED \| 1 passed \| 1 failed/);
});

Deno.test("requires: a facility that is there is not ignored, whatever the variable says", () => {
  assert.equal(requires("root", undefined, "x", () => "1"), false);
  assert.equal(requires("root", undefined, "x", () => undefined), false);
  assert.throws(() => requires("nats", "gone", "x", () => "1"), /x: gone \(TOOLGATE_REQUIRE_NATS=1\)/);
});

Deno.test("requires: the variables .ci/run sets are the facilities' own", async () => {
  const ci = await Deno.readTextFile(join(REPO, ".ci", "run"));
  const set = new Set(ci.match(/TOOLGATE_REQUIRE_[A-Z_0-9]+/g) ?? []);
  const known = new Set<string>(Object.values(FACILITIES));
  for (const variable of set) {
    assert.ok(known.has(variable), `.ci/run sets ${variable}, which no facility reads`);
  }
  for (const variable of ["BWRAP", "NATS", "CONFORMANCE", "GATEWAY", "INSPECTOR", "BROWSER", "PTY", "ROOT"]) {
    assert.ok(set.has(`TOOLGATE_REQUIRE_${variable}`), `.ci/run requires TOOLGATE_REQUIRE_${variable}`);
  }
});

/** Every test source under tests/ but the bench (which prints figures, not tests) and this module's own two. */
async function testSources(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(dir)) {
      const path = join(dir, entry.name);
      if (entry.isDirectory && ![".cache", "bench", "fixtures"].includes(entry.name)) await walk(path);
      else if (entry.isFile && entry.name.endsWith(".ts")) {
        out.set(relative(REPO, path), await Deno.readTextFile(path));
      }
    }
  };
  await walk(join(REPO, "tests"));
  out.delete("tests/requires.ts");
  out.delete("tests/requires_test.ts");
  return out;
}

Deno.test("requires: no test file decides a skip any other way", async () => {
  const problems: string[] = [];
  for (const [path, text] of await testSources()) {
    const lines = text.split("\n");
    lines.forEach((line, index) => {
      const where = `${path}:${index + 1}: ${line.trim()}`;
      if (/Deno\.env\.get\(\s*"TOOLGATE_REQUIRE_/.test(line)) {
        problems.push(`${where}: reads a variable requires owns`);
      }
      if (/ignore:\s*(true|!?IS_ROOT|NO_PTY|!?SUPPORT|!?HIDE|.*REQUIRED)/.test(line)) {
        problems.push(`${where}: an ignore requires does not decide`);
      }
      if (/^\s*Deno\.test\(\s*`[^`]*\(sandbox \$\{/.test(line)) {
        problems.push(`${where}: a confined variant registered without requires (modeTest or confinedTest)`);
      }
      if (/SUPPORT\.ok \|\| REQUIRED/.test(line)) {
        problems.push(`${where}: a confined variant registered only with bwrap`);
      }
      if (/console\.(log|error)\(.*\bskip(ped|ping)?\b/i.test(line)) {
        const next = lines.slice(index + 1, index + 4).join("\n");
        if (/^\s*return( \[\])?;/m.test(next)) {
          problems.push(`${where}: a printed skip that returns and passes`);
        }
      }
    });
  }
  assert.deepEqual(problems, []);
});
