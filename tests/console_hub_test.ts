/**
 * The console's hub and page without a browser: a call's progress and log messages and its stderr kept as lines,
 * whole lines only, made plain then masked (a secret is masked in its line before anything of it is shown, and an
 * escape sequence inside it cannot hide it), the newest twenty, each cut
 * after masking; how a call ended, from its envelope or its error; and the page's script parses.
 */
import assert from "node:assert/strict";
import { ConsoleHub } from "../src/console/hub.ts";
import { PAGE_CSS, PAGE_JS } from "../src/console/page.ts";
import { failure } from "../src/contract.ts";

const encoder = new TextEncoder();
const SECRET = "s3cr3t-value-0123456789";
const redact = (text: string) => text.replaceAll(SECRET, "[REDACTED]");

Deno.test("console hub: stderr as whole lines, a secret split across pieces masked, the newest twenty, each cut", () => {
  const hub = new ConsoleHub(redact);
  const seen = hub.started({ tool: "t", caller: "model", args: { key: SECRET } });
  const half = SECRET.length / 2;
  seen.stderr(encoder.encode(`token \x1b]0;title\x07${SECRET.slice(0, half)}`));
  assert.deepEqual(hub.state().calls[0].stderr, [], "no line before its end");
  // An escape sequence inside the secret does not hide it from the masking: lines are made plain first.
  seen.stderr(
    encoder.encode(`${SECRET.slice(half, half + 2)}\x1b[0m${SECRET.slice(half + 2)} used\r\nsecond`),
  );
  assert.deepEqual(hub.state().calls[0].stderr, ["token [REDACTED] used"]);
  for (let i = 0; i < 30; i++) seen.stderr(encoder.encode(`\nline ${i}`));
  seen.stderr(encoder.encode(`\n${"x".repeat(600)}\n`));
  seen.ended(failure("execution_error", `exit status 1 (${SECRET})`));
  const [call] = hub.state().calls;
  assert.equal(call.stderr.length, 20);
  assert.equal(call.stderr.at(-2), "line 29");
  assert.equal(call.stderr.at(-1), `${"x".repeat(500)}...`);
  assert.equal(call.outcome, "execution_error");
  assert.equal(call.message, "exit status 1 ([REDACTED])");
  assert.equal(call.args, '{"key":"[REDACTED]"}');
  hub.close();
});

Deno.test("console hub: progress and log messages as lines; the end of a stop by the user, and of an error", () => {
  const hub = new ConsoleHub(redact);
  const seen = hub.started({ tool: "t", caller: "pool call 1234abcd", args: {} });
  seen.toolEvent({ kind: "progress", progress: 3, total: 10, message: "copying" });
  seen.toolEvent({ kind: "progress", progress: 4 });
  seen.toolEvent({ kind: "log", level: "warning", message: `key ${SECRET} expires` });
  seen.stderr(encoder.encode("10%\r50%\r100%\r\nno newline at the end"));
  seen.ended(failure("execution_error", "stopped", { metadata: { cancelled: true, killed_by: "user" } }));
  const [call] = hub.state().calls;
  assert.deepEqual(call.events, ["progress 3/10 copying", "progress 4", "[warning] key [REDACTED] expires"]);
  assert.deepEqual(
    call.stderr,
    ["100%", "no newline at the end"],
    "a redrawn line's last drawing; the rest at the end",
  );
  assert.equal(call.killedBy, "user");
  const broken = hub.started({ tool: "u", caller: "model", args: {} });
  broken.ended(new Error("a bug"));
  assert.deepEqual([hub.state().calls[1].outcome, hub.state().calls[1].message], ["error", "a bug"]);
  hub.close();
});

Deno.test("console page: its browser script type-checks with the DOM's types and the hub's, in a program of its own", async () => {
  const checked = await new Deno.Command(Deno.execPath(), {
    args: ["check", "--config", "src/console/browser_check.json", "src/console/page_script.js"],
    cwd: new URL("..", import.meta.url),
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(checked.code, 0, new TextDecoder().decode(checked.stderr));
});

Deno.test("console page: the script and style served are their files as they are (code, not strings)", async () => {
  const folder = new URL("../src/console/", import.meta.url);
  assert.equal(PAGE_JS, await Deno.readTextFile(new URL("page_script.js", folder)));
  assert.equal(PAGE_CSS, await Deno.readTextFile(new URL("page_style.css", folder)));
});
