/**
 * The web console of `serve --console` in a real browser (issue 29): Debian's chromium, headless, driven by
 * puppeteer-core (no browser download). It opens the console from the link printed on stderr, sees a call wait
 * for approval and allows it with a click, sees it run and finish, stops a background job and a call in flight
 * (their envelopes say `killed_by: "user"`), and filters the audit view. Screenshots of each view go to `$TOOLGATE_ARTIFACTS` when set.
 * Skipped with a printed reason where chromium is missing; failed instead under TOOLGATE_REQUIRE_BROWSER=1.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { spawnConsole, startConsoleServer, trustedWorkspace, until } from "./console_helpers.ts";
import { answer, callTools, startChatServer } from "./agent/chat_server.ts";
import { cliArgs, FIXTURES, GRANTS, runProgram } from "./support.ts";
import { envelopeOf } from "./mcp/helpers.ts";
import { CHROMIUM, facilityTest, whyMissing } from "./requires.ts";

const ARTIFACTS = Deno.env.get("TOOLGATE_ARTIFACTS");
const MISSING = await whyMissing("browser");
const NAME =
  "console in chromium: approve with a click, see the call run, stop a job and a running call, filter the audit";

/** A test that needs chromium: ignored with a printed reason where it is missing, failed instead on CI. */
function browserTest(name: string, fn: () => Promise<void>): void {
  facilityTest("browser", MISSING, {
    name,
    // The browser's own helpers outlive its close by a moment.
    sanitizeResources: false,
    sanitizeOps: false,
    fn,
  });
}

/** Headless chromium, closed at the end of the scope that holds it. */
async function openBrowser(): Promise<Browser & AsyncDisposable> {
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  return Object.assign(browser, { [Symbol.asyncDispose]: () => browser.close() });
}

/** Saves a screenshot of the page as `name`.png in the artifacts folder, when there is one. */
async function snap(page: Page, name: string): Promise<void> {
  if (ARTIFACTS === undefined || ARTIFACTS === "") return;
  await Deno.mkdir(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, `console_${name}.png`) as `${string}.png`, fullPage: true });
}

browserTest(NAME, async () => {
  await using server = await startConsoleServer(["--sandbox", "off"]);
  await using browser = await openBrowser();
  const page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 900 });
  await page.goto(server.link.href);
  assert.equal(new URL(page.url()).search, "", "the token left the address bar");
  await page.waitForFunction('document.getElementById("status")?.textContent === "live"');

  // A call no client can be asked about waits for the console: the same question the terminal shows.
  await using connected = await server.connect();
  const waiting = connected.client.callTool({ name: "exec", arguments: { argv: ["sleep", "1.5"] } });
  // Awaited below; a failure before then must show as itself, not as this call's closed connection.
  waiting.catch(() => {});
  const card = await page.waitForSelector('.approval[data-tool="exec"]');
  const question = await card!.$eval("pre", (pre) => pre.textContent ?? "");
  assert.match(question, /the model asks to run exec/);
  assert.match(question, /argv: \["sleep","1.5"\]/);
  await snap(page, "approval");
  await (await card!.$("button.always"))!.click();
  // The call now runs: it is in flight, then finished.
  await page.waitForSelector('tr.call[data-tool="exec"][data-outcome="running"]');
  await until(async () => (await page.$(".approval")) === null, "the question is gone once answered");
  await snap(page, "call_running");
  await page.waitForSelector('tr.call[data-tool="exec"][data-outcome="ok"]', { timeout: 20_000 });
  const result = await waiting;
  assert.notEqual(result.isError, true, JSON.stringify(result));

  // A background job (exec was allowed for the session): Stop ends its tree as the user.
  const started = envelopeOf(
    await connected.client.callTool({
      name: "exec",
      arguments: { shell: "echo job-started; sleep 60", background: true },
    }),
  );
  assert.equal(started.ok, true, JSON.stringify(started));
  const jobId = (started.result as { job_id: string }).job_id;
  await page.waitForSelector(`tr.job[data-job="${jobId}"][data-state="running"] button.stop`);
  await snap(page, "job_running");
  // Clicked in the page's own turn: a job's row is drawn again as its output grows, so a handle held across
  // two round trips may point at a row that is gone.
  await page.$eval(
    `tr.job[data-job="${jobId}"] button.stop`,
    (button) => (button as unknown as { click(): void }).click(),
  );
  await page.waitForSelector(`tr.job[data-job="${jobId}"][data-state="killed"]`, { timeout: 20_000 });
  const killedBy = await page.$eval(
    `tr.job[data-job="${jobId}"] td.killed-by`,
    (td) => td.textContent,
  );
  assert.equal(killedBy, "user");
  await snap(page, "job_stopped");
  const polled = envelopeOf(
    await connected.client.callTool({ name: "job", arguments: { action: "poll", job_id: jobId } }),
  );
  assert.equal((polled.result as { killed_by?: string }).killed_by, "user", JSON.stringify(polled));

  // A call in flight (not a job): its row's Stop ends its tree as the user, and the client hears so.
  const long = connected.client.callTool({ name: "exec", arguments: { argv: ["sleep", "60"] } });
  long.catch(() => {});
  const running = 'tr.call[data-tool="exec"][data-outcome="running"]';
  await page.waitForSelector(`${running} button.stop`);
  await snap(page, "call_stoppable");
  await page.$eval(
    `${running} button.stop`,
    (button) => (button as unknown as { click(): void }).click(),
  );
  const stopped = envelopeOf(await long);
  assert.equal(stopped.ok, false, JSON.stringify(stopped));
  assert.equal(stopped.killed_by, "user", JSON.stringify(stopped));
  assert.equal(stopped.cancelled, true, JSON.stringify(stopped));
  await until(
    async () => (await page.$$(`${running}`)).length === 0,
    "the stopped call's row is no longer running",
  );
  const stoppedBy = await page.$$eval(
    'tr.call[data-tool="exec"] td.killed-by',
    (tds) => tds.map((td) => td.textContent),
  );
  assert.ok(stoppedBy.includes("user"), JSON.stringify(stoppedBy));
  assert.equal(await page.$("tr.call button.stop"), null, "no Stop on a call that ended");

  // The audit view: every call so far, then only those the filter keeps.
  // The poll's record reaches the view on its own update, perhaps after the exec calls' ones.
  await until(
    async () =>
      (await page.$$('tr.audit[data-tool="exec"]')).length >= 2 &&
      (await page.$$('tr.audit[data-tool="job"]')).length >= 1,
    "the audit view lists the exec calls and the poll",
  );
  await page.type("#audit-tool", "job");
  await page.click("#audit-apply");
  await until(
    async () => (await page.$$('tr.audit[data-tool="exec"]')).length === 0,
    "the filter drops the other tools",
  );
  assert.ok((await page.$$('tr.audit[data-tool="job"]')).length >= 1);
  const approvedBy = await page.$$eval(
    "tr.audit td.approved-by",
    (tds) => tds.map((td) => td.textContent),
  );
  assert.ok(approvedBy.length > 0);
  await snap(page, "audit_filtered");
  await page.select("#audit-outcome", "failed");
  await page.click("#audit-apply");
  await until(async () => (await page.$$("tr.audit")).length === 0, "no failed call of job");
});

const RUN_NAME =
  "console in chromium on the agent loop: allow a call, see its progress, log and stderr; confinement; trust a changed manifest; the audit's time filter";

browserTest(RUN_NAME, async () => {
  await using ws = await trustedWorkspace();
  // The model calls report twice, then answers: the second call waits in the console while the views are read.
  await using chat = startChatServer([
    callTools([{ id: "c1", name: "report", args: { topic: "sales" } }]),
    callTools([{ id: "c2", name: "report", args: { topic: "later" } }]),
    answer("all reported"),
  ]);
  await using run = await spawnConsole(
    ["run", "--prompt", "report", "--model", "m", "--base-url", chat.baseUrl, "--console", "0"],
    { cwd: ws.workspace, env: ws.env },
  );
  await using browser = await openBrowser();
  const page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 1100 });
  await page.goto(run.link.href);
  await page.waitForFunction('document.getElementById("status")?.textContent === "live"');

  // The agent loop's question, in the console (no terminal here): Allow runs it.
  const card = await page.waitForSelector('.approval[data-tool="report"]');
  assert.match(await card!.$eval("pre", (pre) => pre.textContent ?? ""), /\{"topic":"sales"\}/);
  await (await card!.$("button.allow"))!.click();
  // Its progress and log messages and its stderr, live, then its end.
  const row = 'tr.call[data-tool="report"]';
  await page.waitForSelector(`${row} td.messages pre.stderr`, { timeout: 20_000 });
  await page.waitForSelector(`${row}[data-outcome="ok"]`, { timeout: 20_000 });
  const events = await page.$eval(`${row}[data-outcome="ok"] pre.events`, (pre) => pre.textContent);
  assert.match(events ?? "", /progress 1\/2 half way/);
  assert.match(events ?? "", /\[info\] counted the lines/);
  const stderr = await page.$eval(`${row}[data-outcome="ok"] pre.stderr`, (pre) => pre.textContent);
  assert.equal(stderr, "report: warming up\nreport: written");
  assert.match(await page.$eval(`${row}[data-outcome="ok"]`, (tr) => tr.textContent ?? ""), /model/);
  await snap(page, "run_call_messages");

  // Confinement: what each profile gets here, as `toolgate doctor` says.
  await page.waitForSelector('#confinement-view[data-loaded="1"]');
  const shown = await page.$$eval(
    "tr.profile",
    (rows) => rows.map((r) => [r.getAttribute("data-profile"), r.getAttribute("data-runs")]),
  );
  const doctor = await runProgram(Deno.execPath(), cliArgs(GRANTS.broad, ["doctor", "--json"]), {
    cwd: ws.workspace,
    env: ws.env,
    clearEnv: true,
  });
  const profiles = JSON.parse(doctor.stdout).confinement.profiles as { profile: string; runs: string }[];
  assert.deepEqual(shown, profiles.map((p) => [p.profile, p.runs]));
  await snap(page, "confinement");

  // Trust: trusted now; a change to the manifest shows as what changed, and Trust records it as `trust` does.
  await page.waitForSelector('#trust-view[data-state="trusted"]');
  const manifestPath = join(ws.workspace, "tools.json");
  const manifest = JSON.parse(await Deno.readTextFile(manifestPath));
  manifest.tools.push({ ...manifest.tools[0], name: "report_again" });
  await Deno.writeTextFile(manifestPath, JSON.stringify(manifest, null, 2));
  await page.click("#trust-reload");
  await page.waitForSelector('#trust-view[data-state="changed"][data-pending="true"]');
  assert.match(
    await page.$eval("#trust-changes", (pre) => pre.textContent ?? ""),
    /\+ added report_again/,
  );
  await snap(page, "trust_changed");
  await page.click("#trust-button");
  await page.waitForSelector('#trust-view[data-state="trusted"][data-pending="false"]');
  assert.equal(await page.$eval("#trust-status", (span) => span.textContent), "trusted");
  await snap(page, "trust_trusted");
  const again = await runProgram(Deno.execPath(), cliArgs(GRANTS.broad, ["trust"]), {
    cwd: ws.workspace,
    env: ws.env,
    clearEnv: true,
  });
  assert.match(again.stdout, /is trusted already .*unchanged/, again.stdout + again.stderr);

  // The audit's time filter, read as `toolgate log --since` reads it: an age, or a time.
  await until(
    async () => (await page.$$('tr.audit[data-tool="report"]')).length === 1,
    "the call's line",
  );
  assert.equal(await page.$eval("tr.audit td.approved-by", (td) => td.textContent), "console");
  await page.type("#audit-since", "2999-01-01");
  await page.click("#audit-apply");
  await until(async () => (await page.$$("tr.audit")).length === 0, "nothing since a time to come");
  await page.$eval(
    "#audit-since",
    (input) => void ((input as unknown as { value: string }).value = "1h"),
  );
  await page.type("#audit-until", "2000-01-01");
  await page.click("#audit-apply");
  await until(async () => (await page.$$("tr.audit")).length === 0, "nothing until a time long gone");
  await page.$eval("#audit-until", (input) => void ((input as unknown as { value: string }).value = ""));
  await page.click("#audit-apply");
  await until(async () => (await page.$$("tr.audit")).length === 1, "the call within the last hour");
  await snap(page, "audit_time");
  await page.$eval(
    "#audit-since",
    (input) => void ((input as unknown as { value: string }).value = "yesterday"),
  );
  await page.click("#audit-apply");
  await page.waitForFunction(
    'document.getElementById("audit-problem").textContent.includes("since takes")',
  );

  // The second question: Deny, and the run ends with the model's answer.
  const second = await page.waitForSelector('.approval[data-tool="report"]');
  await (await second!.$("button.deny"))!.click();
  assert.equal(await run.exited, 0, run.stderr());
  assert.equal(run.stdout(), "all reported\n");
});

browserTest("console in chromium: a tool's form waits in the console and is answered there", async () => {
  await using server = await startConsoleServer(
    ["--sandbox", "off"],
    {},
    join(FIXTURES, "mcp", "questions.json"),
  );
  await using browser = await openBrowser();
  const page = await browser.newPage();
  await page.goto(server.link.href);
  await page.waitForFunction('document.getElementById("status")?.textContent === "live"');
  // The client shows no form: the tool's question waits in the console, its field a list of its choices.
  await using connected = await server.connect();
  const asking = connected.client.callTool({ name: "ask_user", arguments: {} });
  // Awaited below; a failure before then must show as itself, not as this call's closed connection.
  asking.catch(() => {});
  const card = await page.waitForSelector('.form[data-tool="ask_user"]');
  assert.match(await card!.$eval("pre", (pre) => pre.textContent ?? ""), /Deploy where\?/);
  await (await card!.$('select[name="target"]'))!.select("1");
  await snap(page, "form");
  await (await card!.$("button.allow"))!.click();
  const result = await asking;
  assert.match(JSON.stringify(result.content), /\\"target\\":\\"prod\\"/);
  await until(async () => (await page.$(".form")) === null, "the form is gone once answered");
});
