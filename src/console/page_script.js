/**
 * The web console's browser script, served byte for byte as `/console.js` (an ES module: `page.ts` loads it with
 * `<script type="module">`). It runs in the browser, not in Deno: `deno task check` (and a test) type-checks it
 * with the DOM's types by `browser_check.json`, a program of its own (the DOM's globals stay out of the server's
 * code), against the server's own types for what it reads (the hub's state, the trust and confinement views);
 * `deno lint` lints it. It writes every value as text (never as HTML), so nothing a tool prints can run in the page.
 *
 * Not here: the page's HTML and the serving of this file (`page.ts`, `http.ts`), the state it draws (`hub.ts`).
 *
 * @module
 */

/** @import { ConsoleHub } from "./hub.ts" */
/** @import { TrustView } from "./trust_view.ts" */
/** @import { ConfinementView } from "./confinement_view.ts" */
/** @typedef {ReturnType<ConsoleHub["state"]>} ConsoleState */
/** @typedef {ConsoleState["calls"][number]} CallState */
/** @typedef {ConsoleState["approvals"][number]} ApprovalState */
/** @typedef {ConsoleState["forms"][number]} FormState */
/**
 * A background job as `poll` answers for it, with its owner's scope (the hub's `jobs`).
 * @typedef {{ scope: string, job_id: string, state: string, shell?: string, argv?: string[], killed_by?: string,
 *   tail?: string[] | string }} JobState
 */
/**
 * An audit record, as `/api/audit` answers with it (the fields the view shows).
 * @typedef {{ ts: string, tool: string, outcome: string, ms?: number, approved_by?: string }} AuditRecord
 */

/**
 * The element of that id; the page holds every id the script names.
 * @param {string} id
 * @returns {HTMLElement}
 */
function $(id) {
  const element = document.getElementById(id);
  if (element === null) throw new Error(`the page has no #${id}`);
  return element;
}

/**
 * The value of a form field of the page.
 * @param {string} id
 * @returns {string}
 */
function fieldValue(id) {
  const field = $(id);
  if (field instanceof HTMLInputElement || field instanceof HTMLSelectElement) return field.value;
  throw new Error(`#${id} is not a form field`);
}

const csrf = document.querySelector('meta[name="csrf-token"]')?.getAttribute("content") ?? "";

/**
 * Appends a cell holding `text` as text.
 * @param {HTMLTableRowElement} row
 * @param {unknown} text
 * @param {string} [cls]
 * @returns {HTMLTableCellElement}
 */
function cell(row, text, cls) {
  const td = document.createElement("td");
  td.textContent = text === undefined || text === null ? "" : String(text);
  if (cls) td.className = cls;
  row.appendChild(td);
  return td;
}

/**
 * Posts JSON with the session's CSRF token; a refusal shows in the status line.
 * @param {string} path
 * @param {unknown} body
 * @returns {Promise<boolean>}
 */
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

/**
 * @param {string} text
 * @param {string} cls
 * @param {() => unknown} onClick
 * @returns {HTMLButtonElement}
 */
function button(text, cls, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  b.className = cls;
  b.addEventListener("click", onClick);
  return b;
}

/** @type {Record<string, string>} */
const shown = {};

/**
 * Draws a section again only when what it shows changed.
 * @template T
 * @param {string} section
 * @param {T} value
 * @param {(value: T) => void} render
 */
function drawn(section, value, render) {
  const text = JSON.stringify(value);
  if (shown[section] === text) return;
  shown[section] = text;
  render(value);
}

/** @param {ApprovalState[]} approvals */
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
    pre.textContent = a.lines.join("\n") + "\n\nRun " + a.tool + "?";
    card.appendChild(pre);
    card.appendChild(button("Allow", "allow", () => post("/api/approve", { id: a.id, answer: "yes" })));
    card.appendChild(button("Deny", "deny", () => post("/api/approve", { id: a.id, answer: "no" })));
    card.appendChild(
      button(
        "Always for " + a.tool + " in this session",
        "always",
        () => post("/api/approve", { id: a.id, answer: "always" }),
      ),
    );
    box.appendChild(card);
  }
}

/**
 * One field of a form: a checkbox (boolean), a list (choices), a number or a text box; its value read back as
 * the field's type (an empty box: left out).
 * @param {HTMLElement} card
 * @param {string} name
 * @param {Record<string, unknown>} field
 * @returns {() => unknown}
 */
function formField(card, name, field) {
  const label = document.createElement("label");
  label.textContent = String(field.title ?? name) +
    (field.description ? " (" + String(field.description) + ")" : "") +
    " ";
  card.appendChild(label);
  const choices = Array.isArray(field.enum)
    ? field.enum.map((value) => ({ value, title: String(value) }))
    : Array.isArray(field.oneOf)
    ? field.oneOf.map((/** @type {Record<string, unknown>} */ o) => ({
      value: o.const,
      title: String(o.title ?? o.const),
    }))
    : undefined;
  if (field.type === "boolean") {
    const box = document.createElement("input");
    box.type = "checkbox";
    box.name = name;
    box.checked = field.default === true;
    label.appendChild(box);
    return () => box.checked;
  }
  const items = /** @type {Record<string, unknown> | undefined} */ (field.items);
  if (field.type === "array" && Array.isArray(items?.enum)) {
    const many = document.createElement("select");
    many.multiple = true;
    many.name = name;
    for (const value of items.enum) {
      const option = document.createElement("option");
      option.value = String(value);
      option.textContent = String(value);
      many.appendChild(option);
    }
    label.appendChild(many);
    return () => [...many.selectedOptions].map((option) => option.value);
  }
  if (choices !== undefined) {
    const select = document.createElement("select");
    select.name = name;
    for (const [i, choice] of choices.entries()) {
      const option = document.createElement("option");
      option.value = String(i);
      option.textContent = choice.title;
      option.selected = choice.value === field.default;
      select.appendChild(option);
    }
    label.appendChild(select);
    return () => choices[Number(select.value)]?.value;
  }
  const input = document.createElement("input");
  input.name = name;
  input.type = field.type === "number" || field.type === "integer" ? "number" : "text";
  if (field.default !== undefined) input.value = String(field.default);
  label.appendChild(input);
  return () => input.value === "" ? undefined : input.type === "number" ? Number(input.value) : input.value;
}

/** @param {FormState[]} forms */
function renderForms(forms) {
  const box = $("forms");
  box.replaceChildren();
  if (forms.length === 0) {
    const p = document.createElement("p");
    p.className = "none";
    p.textContent = "none";
    box.appendChild(p);
  }
  for (const f of forms) {
    const card = document.createElement("div");
    card.className = "form";
    card.dataset.tool = f.tool;
    const pre = document.createElement("pre");
    pre.textContent = f.tool + " asks you:\n" + f.message;
    card.appendChild(pre);
    const schema = f.requestedSchema;
    const properties = /** @type {Record<string, Record<string, unknown>>} */ (schema.properties ?? {});
    /** @type {[string, () => unknown][]} */
    const values = Object.entries(properties).map(([name, field]) => [name, formField(card, name, field)]);
    const send = () => {
      /** @type {Record<string, unknown>} */
      const content = {};
      for (const [name, value] of values) {
        const v = value();
        if (v !== undefined) content[name] = v;
      }
      return post("/api/form", { id: f.id, action: "accept", content });
    };
    card.appendChild(button("Send", "allow", send));
    card.appendChild(button("Decline", "deny", () => post("/api/form", { id: f.id, action: "decline" })));
    box.appendChild(card);
  }
}

/** @param {CallState[]} calls */
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
    for (const [cls, list] of /** @type {const} */ ([["events", c.events], ["stderr", c.stderr]])) {
      if (!Array.isArray(list) || list.length === 0) continue;
      const pre = document.createElement("pre");
      pre.className = cls;
      pre.textContent = list.join("\n");
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

/** @param {JobState[]} jobs */
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
    pre.textContent = Array.isArray(j.tail) ? j.tail.join("\n") : String(j.tail === undefined ? "" : j.tail);
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
  if (loading) {
    again = true;
    return;
  }
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
    tool: fieldValue("audit-tool"),
    outcome: fieldValue("audit-outcome"),
    since: fieldValue("audit-since").trim(),
    until: fieldValue("audit-until").trim(),
  });
  const response = await fetch("/api/audit?" + query, { credentials: "same-origin" });
  $("audit-problem").textContent = response.ok ? "" : await response.text();
  if (!response.ok) return;
  /** @type {AuditRecord[]} */
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
  /** @type {ConfinementView | null} */
  const view = await response.json();
  if (view === null) {
    $("confinement-summary").textContent = "not known here";
    return;
  }
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
  /** @type {TrustView | null} */
  const view = await response.json();
  const box = $("trust-view");
  if (view === null) {
    $("trust-manifest").textContent = "not known here";
    return;
  }
  trustVersion = view.version;
  box.dataset.state = view.manifest.state;
  box.dataset.pending = String(view.pending);
  $("trust-manifest").textContent = view.manifest.path + ": " + view.manifest.state + " (" +
    view.manifest.detail + ")";
  $("trust-changes").textContent = view.manifest.changes.join("\n");
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
    pre.textContent = lines.join("\n");
    div.appendChild(pre);
    servers.appendChild(div);
  }
  const trustButton = $("trust-button");
  if (trustButton instanceof HTMLButtonElement) trustButton.disabled = !view.pending;
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
  events.addEventListener("open", () => {
    $("status").textContent = "live";
  });
  events.addEventListener("error", () => {
    $("status").textContent = "disconnected";
  });
  events.addEventListener("state", (event) => {
    /** @type {ConsoleState} */
    const state = JSON.parse(/** @type {MessageEvent<string>} */ (event).data);
    // A section is drawn again only when what it shows changed: a button the person is about to press (Allow,
    // Stop) stays the same element while other parts of the page move.
    drawn("approvals", state.approvals, renderApprovals);
    drawn("forms", state.forms, renderForms);
    drawn("calls", state.calls, renderCalls);
    drawn("jobs", /** @type {JobState[]} */ (/** @type {unknown} */ (state.jobs)), renderJobs);
    // An audit line was written: the view reads the log again (no polling).
    if (state.audited !== audited) {
      audited = state.audited;
      loadAudit();
    }
  });
}

// A module script runs once the document is parsed, before DOMContentLoaded.
$("audit-filter").addEventListener("submit", (event) => {
  event.preventDefault();
  loadAudit();
});
$("trust-reload").addEventListener("click", () => loadTrust());
$("trust-button").addEventListener("click", () => trust());
loadConfinement();
loadTrust();
connect();

// A module of its own (for the type checker as for the browser): nothing is shared through globals.
export {};
