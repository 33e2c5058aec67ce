// `toolgate doctor`, through the launcher under the least permission set: the resolved setup with bubblewrap,
// without it (hidden by a bind mount in a mount namespace of the test's own), and with a broken manifest; exit 1
// exactly when something the manifest needs cannot work here.
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  hasStackTrace,
  launcherArgv,
  type ProcessResult,
  runProgram,
  runToolgate,
  tempDir,
  writeFiles,
} from "./support.ts";
import { facilityTest, whyMissing } from "./requires.ts";

/** Can this test hide bwrap in a mount namespace of its own (root, or user namespaces), and is there one? */
const HIDE = await (async () => {
  const bwrap = new Deno.Command("sh", { args: ["-c", "command -v bwrap"], stdout: "piped" }).outputSync();
  if (!bwrap.success) return { ok: true, reason: "bwrap is not installed: nothing to hide" };
  const probe = await new Deno.Command("unshare", {
    args: [
      "-m",
      "sh",
      "-c",
      'mount --bind /dev/null "$(command -v bwrap)" && ! test -x "$(command -v bwrap)"',
    ],
    stdout: "null",
    stderr: "piped",
  }).output().catch((error) => error as Error);
  if (probe instanceof Error) return { ok: false, reason: `unshare cannot run: ${probe.message}` };
  return probe.success ? { ok: true, reason: "" } : {
    ok: false,
    reason: `unshare -m cannot hide bwrap here: ${new TextDecoder().decode(probe.stderr).trim()}`,
  };
})();

/** `toolgate doctor ARGS` through the launcher with bubblewrap hidden (`mount --bind /dev/null` over it). */
function doctorWithoutBwrap(
  args: readonly string[],
  cwd: string,
  env: Record<string, string>,
): Promise<ProcessResult> {
  const toolgate = launcherArgv(["doctor", ...args]);
  const script =
    'b="$(command -v bwrap)"; if [ -n "$b" ]; then mount --bind /dev/null "$b" || exit 97; fi; exec "$@"';
  return runProgram("unshare", ["-m", "sh", "-c", script, "sh", ...toolgate], { cwd, env });
}

/** A manifest with a read-only tool (profile none) and one that writes the workspace. */
async function project(root: string): Promise<void> {
  const program = "#!/bin/sh\necho '{}'\n";
  await writeFiles(root, {
    "tools.json": {
      tools: [
        { name: "read_notes", command: ["./tools/bin/read_notes"], readOnly: true, permissions: "none" },
        { name: "write_notes", command: ["./tools/bin/write_notes"], permissions: "workspace" },
      ],
    },
    "tools/bin/read_notes": program,
    "tools/bin/write_notes": program,
  });
}

function expectClean(result: ProcessResult): void {
  assert.ok(!hasStackTrace(result.stderr), result.stderr);
  assert.doesNotMatch(result.stderr, /broader|NotCapable|Requires/, result.stderr);
}

facilityTest("bwrap", await whyMissing("bwrap"), {
  name: "doctor with bubblewrap: the setup, each profile confined, and exit 0 with only warnings",
  fn: async () => {
    await using dir = await tempDir();
    await using state = await tempDir();
    await project(dir.path);
    const env = { XDG_STATE_HOME: state.path, XDG_CONFIG_HOME: state.path, OAI_MODEL: "", OAI_BASE_URL: "" };
    const result = await runToolgate(["doctor", "--locked"], dir.path, env);
    expectClean(result);
    assert.equal(result.code, 0, result.stdout + result.stderr);
    const out = result.stdout;
    assert.match(
      out,
      new RegExp(`manifest +${join(dir.path, "tools.json")} \\(tools\\.json in the current folder\\)`),
    );
    assert.match(out, /valid, 2 tools/);
    assert.match(out, /bubblewrap +\/\S+bwrap, works/);
    // Each confined profile's line says what its syscall filter refuses too.
    assert.match(
      out,
      /profile none +confined \(writes nothing; no network; seccomp: [^)]*AF_UNIX[^)]*\): read_notes/,
    );
    assert.match(out, /profile workspace +confined \(writes \.; no network; seccomp: [^)]*\): write_notes/);
    assert.match(out, /model +not set/);
    assert.match(out, /warning: no model is configured: the agent loop will not start/);
    assert.match(out, new RegExp(`audit log +${state.path}/toolgate/workspaces/`));

    const json = await runToolgate(["doctor", "--json"], dir.path, {
      ...env,
      OAI_MODEL: "qwen3",
      OAI_BASE_URL: "http://127.0.0.1:8080/v1",
    });
    assert.equal(json.code, 0, json.stderr);
    const report = JSON.parse(json.stdout);
    assert.equal(report.manifest.why, "tools.json in the current folder");
    assert.deepEqual(report.agent.model, { value: "qwen3", from: "OAI_MODEL" });
    assert.deepEqual(report.agent.endpoint, { value: "http://127.0.0.1:8080/v1", from: "OAI_BASE_URL" });
    assert.equal(report.confinement.bubblewrap.works, true);
    assert.deepEqual(report.confinement.profiles.map((p: { runs: string }) => p.runs), [
      "confined",
      "confined",
    ]);
    assert.equal(report.manifest.trust.state, "untrusted");
    assert.deepEqual(report.problems.map((p: { fix: string }) => p.fix), [
      "read what it runs, then run `toolgate trust`",
    ], "a local endpoint needs no key; a model is set; only the trust is missing");
    const trust = await runToolgate(["trust"], dir.path, env);
    assert.equal(trust.code, 0, trust.stderr);
    const trusted = JSON.parse(
      (await runToolgate(["doctor", "--json"], dir.path, {
        ...env,
        OAI_MODEL: "q",
        OAI_BASE_URL: "http://127.0.0.1:8080/v1",
      }))
        .stdout,
    );
    assert.equal(trusted.manifest.trust.state, "trusted");
    assert.deepEqual(trusted.problems, []);
  },
});

// Hiding bwrap takes a mount namespace: root's (or a user namespace's) to make.
facilityTest("root", HIDE.ok ? undefined : HIDE.reason, {
  name: "doctor without bubblewrap: the writing tool will not run, said with its fix, and exit 1",
  fn: async () => {
    await using dir = await tempDir();
    await using state = await tempDir();
    await project(dir.path);
    const env = { XDG_STATE_HOME: state.path, XDG_CONFIG_HOME: state.path, OAI_MODEL: "m" };
    const result = await doctorWithoutBwrap(["--locked"], dir.path, env);
    expectClean(result);
    assert.equal(result.code, 1, result.stdout + result.stderr);
    assert.match(result.stdout, /bubblewrap +not found \(bubblewrap \(bwrap\) is not installed\)/);
    assert.match(result.stdout, /profile none +unconfined .*read_notes/);
    assert.match(result.stdout, /profile workspace +WILL NOT RUN .*write_notes/);
    assert.match(result.stdout, /error: 1 tool cannot run here \(write_notes\)/);
    assert.match(result.stdout, /fix: install bubblewrap .*--sandbox off/);

    // Only read-only tools: they run unconfined, which is a warning, not a failure.
    await using readOnly = await tempDir();
    await writeFiles(readOnly.path, {
      "tools.json": {
        tools: [{
          name: "read_notes",
          command: ["./tools/bin/read_notes"],
          readOnly: true,
          permissions: "none",
        }],
      },
      "tools/bin/read_notes": "#!/bin/sh\necho '{}'\n",
    });
    const mild = await doctorWithoutBwrap(["--json"], readOnly.path, env);
    assert.equal(mild.code, 0, mild.stdout + mild.stderr);
    const report = JSON.parse(mild.stdout);
    assert.equal(report.confinement.bubblewrap.works, false);
    assert.ok(report.problems.every((p: { blocking: boolean }) => !p.blocking), mild.stdout);
    assert.ok(
      report.problems.some((p: { problem: string }) => /the read-only ones run unconfined/.test(p.problem)),
      mild.stdout,
    );
    // With no tools.json, the built-in belt: its writing tools cannot run here, which is said, not a failure
    // (the belt is toolgate's default, not a manifest the user wrote; its read-only tools work).
    await using empty = await tempDir();
    const belt = await doctorWithoutBwrap(["--json"], empty.path, env);
    assert.equal(belt.code, 0, belt.stdout + belt.stderr);
    const beltReport = JSON.parse(belt.stdout);
    assert.ok(
      beltReport.problems.some((p: { problem: string; blocking: boolean }) =>
        /tools? cannot run here \(fs_write_file/.test(p.problem) && !p.blocking
      ),
      belt.stdout,
    );
    // --sandbox off says what a run with it would do: everything runs, unconfined.
    const off = await doctorWithoutBwrap(["--sandbox", "off"], dir.path, env);
    assert.equal(off.code, 0, off.stdout + off.stderr);
    assert.match(off.stdout, /profile workspace +unconfined/);
  },
});

Deno.test("doctor with a broken manifest: its errors, a missing program, and exit 1", async () => {
  await using dir = await tempDir();
  await using state = await tempDir();
  const env = { XDG_STATE_HOME: state.path, XDG_CONFIG_HOME: state.path };
  await writeFiles(dir.path, {
    "tools.json": '{"tools": [{"name": "a", "command": []}, {"command": ["./tools/bin/b"]}]}',
  });
  const broken = await runToolgate(["doctor", "--locked"], dir.path, env);
  expectClean(broken);
  assert.equal(broken.code, 1, broken.stdout + broken.stderr);
  assert.match(broken.stdout, /INVALID/);
  assert.match(
    broken.stdout,
    /manifest errors:\n {2}tool\[0\] "a": command must have at least program name\n {2}tool\[1\]: name is required/,
  );
  assert.match(broken.stdout, /error: the manifest .* is invalid \(2 errors/);
  assert.match(broken.stdout, /fix: run `toolgate validate`/);

  await using missing = await tempDir();
  await writeFiles(missing.path, {
    "tools.json": { tools: [{ name: "gone", command: ["./tools/bin/gone"] }] },
  });
  const gone = await runToolgate(["doctor", "--json"], missing.path, env);
  assert.equal(gone.code, 1, gone.stdout + gone.stderr);
  const report = JSON.parse(gone.stdout);
  assert.ok(
    report.problems.some((p: { problem: string; blocking: boolean }) =>
      p.blocking && /tool "gone": its program .*tools\/bin\/gone does not exist/.test(p.problem)
    ),
    gone.stdout,
  );

  // With no tools.json, the built-in belt, and why.
  await using empty = await tempDir();
  const belt = await runToolgate(["doctor", "--json"], empty.path, env);
  assert.match(
    JSON.parse(belt.stdout).manifest.why,
    /no tools\.json here or up to the project's root: toolgate's built-in tool belt/,
  );
});
