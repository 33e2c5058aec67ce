/**
 * The web console's page, script and style: plain HTML, JavaScript and CSS, served by toolgate itself (no
 * third-party asset, no inline script: the Content-Security-Policy is `default-src 'self'`). The script and the
 * style are files of their own (`page_script.js`, checked and linted as code; `page_style.css`), taken in as text
 * so that the bundle carries them (as `deno compile` embeds text imports); they are served as they are.
 *
 * Not here: the serving (`http.ts`), the state the script draws (`hub.ts`).
 *
 * @module
 */

import script from "./page_script.js" with { type: "text" };
import style from "./page_style.css" with { type: "text" };

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
<script type="module" src="/console.js"></script>
</head>
<body>
<header><h1>toolgate console</h1><span id="status">connecting</span></header>
<section id="approvals-view"><h2>Waiting for approval</h2><div id="approvals"><p class="none">none</p></div></section>
<section id="forms-view"><h2>Waiting for your answer</h2><div id="forms"><p class="none">none</p></div></section>
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

/**
 * The page's script, `page_script.js` as it is.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PAGE_JS } from "./page.ts";
 * assert.ok(PAGE_JS.includes("export {};"));
 * ```
 */
export const PAGE_JS: string = script;

/**
 * The page's style, `page_style.css` as it is.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PAGE_CSS } from "./page.ts";
 * assert.ok(PAGE_CSS.startsWith("body {"));
 * ```
 */
export const PAGE_CSS: string = style;
