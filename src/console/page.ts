/**
 * The web console's page, script and style: plain HTML, JavaScript and CSS, served by toolgate itself (no
 * third-party asset, no inline script: the Content-Security-Policy is `default-src 'self'`). The script writes
 * every value as text (never as HTML), so nothing a tool prints can run in the page.
 *
 * @module
 */

/**
 * The page, with the session's CSRF token in a meta tag for the script to send with each POST.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pageHtml } from "./page.ts";
 * assert.ok(pageHtml("abc").includes('content="abc"'));
 * ```
 */
export function pageHtml(csrf: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="csrf-token" content="${csrf.replace(/[^0-9a-f]/g, "")}">
<title>toolgate console</title>
<link rel="stylesheet" href="/console.css">
<script src="/console.js" defer></script>
</head>
<body>
<header><h1>toolgate console</h1><span id="status">connecting</span></header>
<section id="approvals-view"><h2>Waiting for approval</h2><div id="approvals"><p class="none">none</p></div></section>
<section id="calls-view"><h2>Calls</h2>
<table><thead><tr><th>#</th><th>tool</th><th>caller</th><th>arguments</th><th>outcome</th><th>duration</th><th>killed by</th><th>progress, log and stderr</th><th></th></tr></thead>
<tbody id="calls"></tbody></table></section>
<section id="jobs-view"><h2>Background jobs</h2>
<table><thead><tr><th>job</th><th>command</th><th>state</th><th>killed by</th><th>output</th><th></th></tr></thead>
<tbody id="jobs"></tbody></table></section>
<section id="audit-view"><h2>Audit log</h2>
<form id="audit-filter"><label>tool <input id="audit-tool" name="tool"></label>
<label>since <input id="audit-since" name="since" placeholder="1h or 2026-11-26T10:00Z" size="14"></label>
<label>until <input id="audit-until" name="until" placeholder="10m or 2026-11-26" size="14"></label>
<label>outcome <select id="audit-outcome" name="outcome"><option value="">any</option><option>ok</option><option>failed</option>
<option>rejected</option><option>user_denied</option><option>timeout</option><option>cancelled</option></select></label>
<button type="submit" id="audit-apply">Filter</button></form>
<table><thead><tr><th>time</th><th>tool</th><th>outcome</th><th>duration</th><th>approved by</th></tr></thead>
<tbody id="audit"></tbody></table><p id="audit-problem" class="problem"></p></section>
<section id="confinement-view"><h2>Confinement</h2><p id="confinement-summary">reading</p>
<table><thead><tr><th>profile</th><th>runs</th><th>may write and reach</th><th>tools</th></tr></thead>
<tbody id="confinement"></tbody></table></section>
<section id="trust-view"><h2>Trust</h2><p id="trust-manifest">reading</p>
<pre id="trust-changes" class="diff"></pre><div id="trust-servers"></div>
<p><button type="button" id="trust-reload">Check again</button>
<button type="button" id="trust-button" disabled>Trust</button> <span id="trust-status"></span></p></section>
</body>
</html>
`;
}

/** The page's script. */
export const PAGE_JS = `"use strict";
const csrf = document.querySelector('meta[name="csrf-token"]').content;
const $ = (id) => document.getElementById(id);
function cell(row, text, cls) {
  const td = document.createElement("td");
  td.textContent = text === undefined || text === null ? "" : String(text);
  if (cls) td.className = cls;
  row.appendChild(td);
  return td;
}
async function post(path, body) {
  const response = await fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json", "x-csrf-token": csrf },
    body: JSON.stringify(body),
    credentials: "same-origin",
  });
  if (!response.ok) $("status").textContent = path + ": " + response.status;
  return response.ok;
}
function button(text, cls, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  b.className = cls;
  b.addEventListener("click", onClick);
  return b;
}
const shown = {};
function drawn(section, value, render) {
  const text = JSON.stringify(value);
  if (shown[section] === text) return;
  shown[section] = text;
  render(value);
}
function renderApprovals(approvals) {
  const box = $("approvals");
  box.replaceChildren();
  if (approvals.length === 0) {
    const p = document.createElement("p");
    p.className = "none";
    p.textContent = "none";
    box.appendChild(p);
  }
  for (const a of approvals) {
    const card = document.createElement("div");
    card.className = "approval";
    card.dataset.tool = a.tool;
    const pre = document.createElement("pre");
    pre.textContent = a.lines.join("\\n") + "\\n\\nRun " + a.tool + "?";
    card.appendChild(pre);
    card.appendChild(button("Allow", "allow", () => post("/api/approve", { id: a.id, answer: "yes" })));
    card.appendChild(button("Deny", "deny", () => post("/api/approve", { id: a.id, answer: "no" })));
    card.appendChild(button("Always for " + a.tool + " in this session", "always",
      () => post("/api/approve", { id: a.id, answer: "always" })));
    box.appendChild(card);
  }
}
function renderCalls(calls) {
  const body = $("calls");
  body.replaceChildren();
  for (const c of [...calls].reverse()) {
    const row = document.createElement("tr");
    row.className = "call " + c.outcome;
    row.dataset.tool = c.tool;
    row.dataset.outcome = c.outcome;
    cell(row, c.id);
    cell(row, c.tool, "tool");
    cell(row, c.caller);
    cell(row, c.args, "args");
    cell(row, c.outcome, "outcome");
    cell(row, c.durationMs === undefined ? "" : c.durationMs + " ms");
    cell(row, c.killedBy, "killed-by");
    const lines = cell(row, "", "messages");
    for (const [cls, list] of [["events", c.events], ["stderr", c.stderr]]) {
      if (!Array.isArray(list) || list.length === 0) continue;
      const pre = document.createElement("pre");
      pre.className = cls;
      pre.textContent = list.join("\\n");
      lines.appendChild(pre);
    }
    const act = cell(row, "");
    if (c.outcome === "running" && c.stoppable) {
      act.appendChild(button("Stop", "stop", () => post("/api/calls/stop", { id: c.id })));
    }
    if (c.message) row.title = c.message;
    body.appendChild(row);
  }
}
function renderJobs(jobs) {
  const body = $("jobs");
  body.replaceChildren();
  for (const j of jobs) {
    const row = document.createElement("tr");
    row.className = "job " + j.state;
    row.dataset.job = j.job_id;
    row.dataset.state = j.state;
    cell(row, j.job_id);
    cell(row, j.shell !== undefined ? j.shell : JSON.stringify(j.argv));
    cell(row, j.state, "state");
    cell(row, j.killed_by, "killed-by");
    const out = cell(row, "");
    const pre = document.createElement("pre");
    pre.textContent = Array.isArray(j.tail) ? j.tail.join("\\n") : String(j.tail === undefined ? "" : j.tail);
    out.appendChild(pre);
    const act = cell(row, "");
    if (j.state === "running") {
      act.appendChild(button("Stop", "stop", () => post("/api/jobs/stop", { id: j.job_id, scope: j.scope })));
    }
    body.appendChild(row);
  }
}
// One read at a time: a read asked for meanwhile runs after it, so an older answer never paints over a newer one.
let loading = false;
let again = false;
async function loadAudit() {
  if (loading) { again = true; return; }
  loading = true;
  try {
    do {
      again = false;
      await readAudit();
    } while (again);
  } finally {
    loading = false;
  }
}
async function readAudit() {
  const query = new URLSearchParams({
    tool: $("audit-tool").value,
    outcome: $("audit-outcome").value,
    since: $("audit-since").value.trim(),
    until: $("audit-until").value.trim(),
  });
  const response = await fetch("/api/audit?" + query, { credentials: "same-origin" });
  $("audit-problem").textContent = response.ok ? "" : await response.text();
  if (!response.ok) return;
  const records = await response.json();
  const body = $("audit");
  body.replaceChildren();
  for (const r of records.slice(-200).reverse()) {
    const row = document.createElement("tr");
    row.className = "audit";
    row.dataset.tool = r.tool;
    row.dataset.outcome = r.outcome;
    cell(row, r.ts);
    cell(row, r.tool, "tool");
    cell(row, r.outcome, "outcome");
    cell(row, r.ms === undefined ? "" : r.ms + " ms");
    cell(row, r.approved_by, "approved-by");
    body.appendChild(row);
  }
  $("audit-view").dataset.loaded = String(Date.now());
}
async function loadConfinement() {
  const response = await fetch("/api/confinement", { credentials: "same-origin" });
  if (!response.ok) return;
  const view = await response.json();
  if (view === null) { $("confinement-summary").textContent = "not known here"; return; }
  $("confinement-summary").textContent = "sandbox mode " + view.mode + "; " + view.sandbox.detail;
  const body = $("confinement");
  body.replaceChildren();
  for (const p of view.profiles) {
    const row = document.createElement("tr");
    row.className = "profile " + p.runs;
    row.dataset.profile = p.profile;
    row.dataset.runs = p.runs;
    if (p.server !== undefined) row.dataset.server = p.server;
    cell(row, p.server === undefined ? p.profile : "server " + p.server + ": " + p.profile);
    cell(row, p.runs, "runs");
    cell(row, p.detail);
    cell(row, p.tools.join(", "), "tools");
    body.appendChild(row);
  }
  $("confinement-view").dataset.loaded = "1";
}
let trustVersion = "";
async function loadTrust() {
  const response = await fetch("/api/trust", { credentials: "same-origin" });
  if (!response.ok) return;
  const view = await response.json();
  const box = $("trust-view");
  if (view === null) { $("trust-manifest").textContent = "not known here"; return; }
  trustVersion = view.version;
  box.dataset.state = view.manifest.state;
  box.dataset.pending = String(view.pending);
  $("trust-manifest").textContent = view.manifest.path + ": " + view.manifest.state + " (" + view.manifest.detail + ")";
  $("trust-changes").textContent = view.manifest.changes.join("\\n");
  const servers = $("trust-servers");
  servers.replaceChildren();
  for (const s of view.servers) {
    const div = document.createElement("div");
    div.className = "server";
    div.dataset.server = s.server;
    const lines = [];
    if (s.error !== undefined) lines.push("MCP server " + s.server + ": cannot be used: " + s.error);
    else lines.push("MCP server " + s.server + ": " + s.tools.length + " tools");
    for (const t of s.tools) {
      lines.push("  " + t.name + " (" + t.state + ")");
      for (const c of t.changes) lines.push("    " + c);
      for (const w of t.warnings) lines.push("    warning: " + w);
    }
    const pre = document.createElement("pre");
    pre.className = "diff";
    pre.textContent = lines.join("\\n");
    div.appendChild(pre);
    servers.appendChild(div);
  }
  $("trust-button").disabled = !view.pending;
  box.dataset.loaded = String(Date.now());
}
async function trust() {
  const ok = await post("/api/trust", { version: trustVersion });
  $("trust-status").textContent = ok ? "trusted" : "not trusted: it changed since you read it; look again";
  await loadTrust();
}
let audited = -1;
function connect() {
  const events = new EventSource("/events");
  events.addEventListener("open", () => { $("status").textContent = "live"; });
  events.addEventListener("error", () => { $("status").textContent = "disconnected"; });
  events.addEventListener("state", (event) => {
    const state = JSON.parse(event.data);
    // A section is drawn again only when what it shows changed: a button the person is about to press (Allow,
    // Stop) stays the same element while other parts of the page move.
    drawn("approvals", state.approvals, renderApprovals);
    drawn("calls", state.calls, renderCalls);
    drawn("jobs", state.jobs, renderJobs);
    // An audit line was written: the view reads the log again (no polling).
    if (state.audited !== audited) { audited = state.audited; loadAudit(); }
  });
}
document.addEventListener("DOMContentLoaded", () => {
  $("audit-filter").addEventListener("submit", (event) => { event.preventDefault(); loadAudit(); });
  $("trust-reload").addEventListener("click", () => loadTrust());
  $("trust-button").addEventListener("click", () => trust());
  loadConfinement();
  loadTrust();
  connect();
});
`;

/** The page's style. */
export const PAGE_CSS = `body { font: 14px/1.4 system-ui, sans-serif; margin: 0 1.5em 2em; color: #222; }
header { display: flex; align-items: baseline; gap: 1em; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 1.5em; }
#status { color: #666; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 0.2em 0.5em; border-bottom: 1px solid #ddd; vertical-align: top; }
td.args { font-family: monospace; max-width: 40em; overflow-wrap: anywhere; }
tr.running td.outcome { color: #a60; } tr.ok td.outcome { color: #070; }
tr.call:not(.ok):not(.running) td.outcome { color: #b00; }
pre { margin: 0; white-space: pre-wrap; font-size: 12px; }
.approval { border: 2px solid #a60; padding: 0.6em; margin: 0.5em 0; background: #fff8ec; }
.approval button, button.stop { margin: 0.4em 0.4em 0 0; }
.none { color: #888; }
td.messages pre.stderr { color: #555; border-left: 3px solid #ccc; padding-left: 0.4em; }
td.messages pre.events { border-left: 3px solid #7a7; padding-left: 0.4em; }
tr.profile.refused td.runs { color: #b00; } tr.profile.confined td.runs { color: #070; }
tr.profile.unconfined td.runs { color: #a60; }
pre.diff { background: #f6f6f6; padding: 0.4em; }
#trust-view[data-state="changed"] #trust-manifest, #trust-view[data-state="untrusted"] #trust-manifest { color: #b00; }
.problem { color: #b00; }
`;
