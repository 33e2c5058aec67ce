/**
 * A gateway call's audit line is written before its answer is handed back, with those of the calls answering in
 * the same turn (src/run/audit_trail.ts, `AuditTrail.before`); a line written behind (`AuditTrail.behind`) on the
 * next turn of the event loop, and never later than the next line written through the trail, the trail's close,
 * or the process's end; in the order the calls answered; redacted with the secrets known when it is written; a
 * flood of answers in one turn is written at once; a file that cannot be written is reported once.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after } from "../../src/base/timer.ts";
import { success } from "../../src/contract.ts";
import { validateManifest } from "../../src/manifest/manifest.ts";
import { writePins } from "../../src/manifest/pins.ts";
import { jobAnswerRecord } from "../../src/run/audit.ts";
import { AuditTrail, type AuditTrailOptions, MAX_PENDING_LINES } from "../../src/run/audit_trail.ts";
import { Executor } from "../../src/run/executor.ts";
import { makeRedactor } from "../../src/state/redact.ts";
import { stateRoot } from "../../src/state/state.ts";
import { EVERYTHING_STDIO, installNode, skipOrFail } from "../gateway_support.ts";
import { AUDIT_KEY, readAudit, scratch } from "../executor_helpers.ts";
import { REPO } from "../support.ts";

/** A trail writing to `dir`, signed with the tests' key. */
function trailIn(dir: string, options: Partial<AuditTrailOptions> = {}): AuditTrail {
  return new AuditTrail({
    dir,
    key: AUDIT_KEY,
    env: {},
    redact: (text) => text,
    clock: () => new Date(),
    workspace: "/srv/project",
    cwd: ".",
    holdOpen: true,
    ...options,
  });
}

/** A gateway call's line, behind its answer, as `GatewayLink.call` writes it. */
function answered(trail: AuditTrail, tool: string, extra: Record<string, unknown> = {}): void {
  trail.behind(trail.now(), tool, '{"message":"hi"}', (facts) => ({
    ...jobAnswerRecord(facts, { ms: 1, envelope: success({}) }),
    server: "ev",
    ...extra,
  }));
}

/** The tools of the lines in `dir`'s files, in file order (none when the folder is not made yet). */
async function toolsIn(dir: string): Promise<unknown[]> {
  try {
    return (await readAudit(dir)).map((line) => line.tool);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
}

/** The tools of the lines in `dir`'s files, read at once: no turn of the event loop goes by. */
function toolsNow(dir: string): unknown[] {
  let names: string[];
  try {
    names = [...Deno.readDirSync(dir)].map((entry) => entry.name).sort();
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
  return names.flatMap((name) =>
    Deno.readTextFileSync(join(dir, name)).split("\n").filter((line) => line !== "").map((line) =>
      JSON.parse(line).tool
    )
  );
}

/** Waits `ms`: turns of the event loop go by. */
const turns = (ms = 20) => new Promise<void>((resolve) => after(ms, resolve));

Deno.test("audit behind: the line waits for the next turn of the event loop, then is written, signed, with its digest", async () => {
  await using dir = await scratch();
  const audit = join(dir.path, "audit");
  const trail = trailIn(audit);
  answered(trail, "mcp__ev__echo");
  assert.deepEqual(toolsNow(audit), [], "written before the answer was handed back");
  await turns();
  const [line] = await readAudit(audit);
  assert.equal(line.tool, "mcp__ev__echo");
  assert.equal(line.argsBytes, 16);
  assert.match(String(line.argsHmac), /^[0-9a-f]{64}$/);
  assert.match(String(line.mac), /^[0-9a-f]{64}$/);
  // The digest's fields where a line written at once has them: before `outcome`, the signature last.
  const keys = Object.keys(line);
  assert.ok(keys.indexOf("argsHmac") < keys.indexOf("outcome"), keys.join());
  assert.equal(keys.at(-1), "mac");
  trail.close();
});

Deno.test("audit behind: a line written through the trail first writes out every pending line: the file's order is the answers'", async () => {
  await using dir = await scratch();
  const audit = join(dir.path, "audit");
  const trail = trailIn(audit);
  answered(trail, "mcp__ev__first");
  answered(trail, "mcp__ev__second");
  // A refusal answered after both, in the same turn: written at once, so after them.
  await trail.unrun("refused", "{}", success({}));
  await trail.write({
    ...jobAnswerRecord(await trail.facts(trail.now(), "foreground", "{}"), {
      ms: 1,
      envelope: success({}),
    }),
  });
  answered(trail, "mcp__ev__third");
  await turns();
  assert.deepEqual(await toolsIn(audit), [
    "mcp__ev__first",
    "mcp__ev__second",
    "refused",
    "foreground",
    "mcp__ev__third",
  ]);
  trail.close();
});

Deno.test("audit behind: close writes out every pending line before letting the file go", async () => {
  await using dir = await scratch();
  const audit = join(dir.path, "audit");
  const trail = trailIn(audit);
  answered(trail, "mcp__ev__echo");
  answered(trail, "mcp__ev__add");
  trail.close();
  // Read in this very turn: nothing was left to a timer.
  assert.deepEqual(toolsNow(audit), ["mcp__ev__echo", "mcp__ev__add"]);
  // Nothing is written twice when the turn comes.
  await turns();
  assert.equal((await readAudit(audit)).length, 2);
});

Deno.test("audit behind: more lines answered in one turn than the bound (MAX_PENDING_LINES) are written at once, none lost", async () => {
  await using dir = await scratch();
  const audit = join(dir.path, "audit");
  const trail = trailIn(audit);
  for (let i = 0; i < MAX_PENDING_LINES; i++) answered(trail, `mcp__ev__t${i}`);
  assert.deepEqual(toolsNow(audit), []);
  answered(trail, "mcp__ev__flood");
  // The flood's lines did not wait for the turn: the queue never holds more than the bound.
  const written = toolsNow(audit);
  assert.equal(written.length, MAX_PENDING_LINES + 1);
  assert.equal(written.at(-1), "mcp__ev__flood");
  answered(trail, "mcp__ev__after");
  await turns();
  assert.equal((await readAudit(audit)).length, MAX_PENDING_LINES + 2);
  trail.close();
});

Deno.test("audit behind: a secret known by the time the line is written is masked in it, though stored after the answer", async () => {
  await using dir = await scratch();
  const audit = join(dir.path, "audit");
  const secret = "s3cr3t-upstream-name-4711";
  let redact = makeRedactor([]);
  const trail = trailIn(audit, { redact: (text) => redact(text) });
  // A value the line holds (here a server's own tool name) turns out to be a secret, stored right after the answer.
  answered(trail, "mcp__ev__echo", { upstream_tool: secret });
  redact = makeRedactor([secret]);
  trail.close();
  const text = await Deno.readTextFile(join(audit, (await Array.fromAsync(Deno.readDir(audit)))[0].name));
  assert.doesNotMatch(text, /s3cr3t/);
  assert.match(text, /\[REDACTED/);
});

Deno.test("audit behind: a folder that cannot be written is reported once, however many lines wait", async () => {
  await using dir = await scratch();
  const blocker = join(dir.path, "not-a-folder");
  await Deno.writeTextFile(blocker, "a file where the audit folder should be\n");
  const warnings: string[] = [];
  const trail = trailIn(blocker, { onWarning: (message) => warnings.push(message) });
  for (let i = 0; i < 3; i++) answered(trail, "mcp__ev__echo");
  await turns();
  answered(trail, "mcp__ev__echo");
  trail.close();
  assert.equal(warnings.length, 1, warnings.join("\n"));
  assert.match(warnings[0], /cannot write the audit log/);
});

Deno.test("audit behind: a process that exits in the very turn of the answer (Deno.exit) still writes the line", async () => {
  await using dir = await scratch();
  const audit = join(dir.path, "audit");
  // As the registry's signal shutdown and main's exit grace do: Deno.exit, with the line still pending.
  const script = `
    import { AuditTrail } from ${JSON.stringify(join(REPO, "src", "run", "audit_trail.ts"))};
    import { jobAnswerRecord } from ${JSON.stringify(join(REPO, "src", "run", "audit.ts"))};
    import { success } from ${JSON.stringify(join(REPO, "src", "contract.ts"))};
    const trail = new AuditTrail({
      dir: ${JSON.stringify(audit)}, key: new Uint8Array(32), env: {}, redact: (t) => t,
      clock: () => new Date(), workspace: "/srv/p", cwd: ".",
    });
    trail.behind(trail.now(), "mcp__ev__echo", "{}", (facts) => jobAnswerRecord(facts, { ms: 1, envelope: success({}) }));
    Deno.exit(0);
  `;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--config", join(REPO, "deno.json"), "--no-check", script],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  assert.deepEqual(await toolsIn(audit), ["mcp__ev__echo"]);
});

const missing = skipOrFail("audit_behind_test", await installNode());

/** The tools of the lines in the audit folder `dir`, read at once. */
function linesNow(dir: string): string[] {
  return [...Deno.readDirSync(dir)].filter((entry) => entry.name.endsWith(".log")).flatMap((entry) =>
    Deno.readTextFileSync(join(dir, entry.name)).trim().split("\n").filter((line) => line !== "")
      .map((line) => JSON.parse(line).tool as string)
  );
}

Deno.test({
  name:
    "audit: a real gateway call's line is in the file when its answer is handed back, and before a refusal that answered after it",
  ignore: missing !== undefined,
  async fn() {
    await using dir = await scratch();
    const manifestPath = join(dir.path, "tools.json");
    const manifest = {
      tools: [],
      mcpServers: {
        ev: { ...EVERYTHING_STDIO, allow: ["echo"] },
      },
    };
    await Deno.writeTextFile(manifestPath, JSON.stringify(manifest));
    const loaded = validateManifest(manifest, manifestPath);
    if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
    const env = {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      HOME: dir.path,
      XDG_STATE_HOME: join(dir.path, "state"),
      XDG_CONFIG_HOME: join(dir.path, "config"),
    };
    const audit = join(dir.path, "audit");
    const executor = (auditDir: string | null) =>
      new Executor({
        manifest: loaded.manifest,
        env,
        cwd: dir.path,
        auditDir,
        auditKey: AUDIT_KEY,
        keepAuditOpen: true,
        sandbox: "off",
        graceMs: 500,
        openGateway: async (wiring) => new (await import("../../src/gateway/gateway.ts")).Gateway(wiring),
      });
    // What `toolgate trust` does: the server's tools pinned as they are.
    const trusting = executor(null);
    try {
      await trusting.connectGateway();
      writePins(stateRoot(env), await Deno.realPath(manifestPath), {
        ev: Object.fromEntries((await trusting.serverDefinitions("ev")).map((d) => [d.name, d])),
      });
    } finally {
      await trusting.close();
    }

    const calling = executor(audit);
    let closed = false;
    try {
      assert.deepEqual(await calling.connectGateway(), []);
      const answer = await calling.call("mcp__ev__echo", '{"message":"hello"}');
      assert.ok(answer.ok, JSON.stringify(answer));
      // On disk when the answer is handed back (read at once, no turn of the event loop in between).
      assert.deepEqual(linesNow(audit), ["mcp__ev__echo"], "the line was not on disk when the call answered");
      // Answered after the echo, in the same turn: a tool that does not exist.
      const refused = await calling.call("no_such_tool", "{}");
      assert.equal(refused.ok, false);
      await calling.close();
      closed = true;
      const lines = await readAudit(audit);
      assert.deepEqual(lines.map((line) => line.tool), ["mcp__ev__echo", "no_such_tool"]);
      assert.equal(lines[0].server, "ev");
      assert.equal(lines[0].upstream_tool, "echo");
      assert.equal(lines[0].outcome, "ok");
    } finally {
      if (!closed) await calling.close();
    }
  },
});
