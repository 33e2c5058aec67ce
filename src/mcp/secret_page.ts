/**
 * The page a person types a secret into for a stateless client (a URL elicitation of the 2026-07-28 revision):
 * `store_secret` answers the client with the page's URL, the person opens it in a browser, and the value goes
 * straight from the page to toolgate, never through the client or its model. This module owns those pages: each
 * one is for one request, at an unguessable path (`/secret/<128 random bits>`: the path is the capability, since
 * a browser sends no bearer token), good until it is answered once or expires, and served with a policy that
 * lets it load nothing and post only to itself. What the model wrote (its reason) is shown escaped.
 *
 * Not here: the HTTP server's routing and Origin gate (`http_server.ts`); where the value is kept
 * (`run/store_secret.ts`, through the call's `AskSecret`).
 *
 * @module
 */
import type { SecretRequest } from "../run/store_secret.ts";

/** The path prefix of the pages. */
export const SECRET_PATH = "/secret/";

/** How long a page waits for its value, and the most pages open at once (the oldest go first). */
export const SECRET_PAGE_LIMITS = { ttlMs: 10 * 60 * 1000, maxOpen: 64 } as const;

interface Page {
  readonly request: SecretRequest;
  readonly expires: number;
  value?: string;
}

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);

const HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "content-security-policy":
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
};

/**
 * The open secret pages of one HTTP server.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SecretPages } from "./secret_page.ts";
 * const pages = new SecretPages(() => new URL("http://127.0.0.1:8765/mcp"));
 * const { id, url } = pages.open({ name: "API_KEY", reason: "to call the API", tools: ["fetch"] });
 * assert.match(url, /^http:\/\/127\.0\.0\.1:8765\/secret\/[\w-]{22}$/);
 * const body = new URLSearchParams({ value: "s3cret" });
 * const posted = await pages.handle(new Request(url, { method: "POST", body }));
 * assert.equal(posted.status, 200);
 * assert.equal(pages.take(id), "s3cret");
 * assert.equal(pages.take(id), undefined); // once
 * ```
 */
export class SecretPages {
  readonly #base: () => URL;
  readonly #pages = new Map<string, Page>();
  readonly #now: () => number;

  /** `base`: the server's URL, once it listens (its origin is the pages'). */
  constructor(base: () => URL, now: () => number = Date.now) {
    this.#base = base;
    this.#now = now;
  }

  /** A new page for `request`: its id, and the URL the person opens. */
  open(request: SecretRequest): { id: string; url: string } {
    const now = this.#now();
    for (const [id, page] of this.#pages) if (page.expires <= now) this.#pages.delete(id);
    while (this.#pages.size >= SECRET_PAGE_LIMITS.maxOpen) {
      this.#pages.delete(this.#pages.keys().next().value!);
    }
    const id = crypto.getRandomValues(new Uint8Array(16)).toBase64({
      alphabet: "base64url",
      omitPadding: true,
    });
    this.#pages.set(id, { request, expires: now + SECRET_PAGE_LIMITS.ttlMs });
    return { id, url: new URL(`${SECRET_PATH}${id}`, this.#base()).href };
  }

  /** The value typed into page `id`, once (the page is gone after); undefined when none was typed. */
  take(id: string): string | undefined {
    const page = this.#pages.get(id);
    if (page?.value === undefined) return undefined;
    this.#pages.delete(id);
    return page.expires > this.#now() ? page.value : undefined;
  }

  /** Forgets page `id` (its round ended without a value). */
  close(id: string): void {
    this.#pages.delete(id);
  }

  /** Answers a request for a page: GET shows the form, POST takes the value; anything else is 404 or 405. */
  async handle(request: Request): Promise<Response> {
    const id = new URL(request.url).pathname.slice(SECRET_PATH.length);
    const page = this.#pages.get(id);
    if (page === undefined || page.expires <= this.#now() || page.value !== undefined) {
      return new Response("This page is gone: it was answered already, or it expired.\n", {
        status: 404,
        headers: { ...HEADERS, "content-type": "text/plain; charset=utf-8" },
      });
    }
    if (request.method === "GET") return new Response(this.#form(page.request), { headers: HEADERS });
    if (request.method !== "POST") {
      return new Response(null, { status: 405, headers: { allow: "GET, POST" } });
    }
    const form = await request.formData().catch(() => undefined);
    const value = form?.get("value");
    if (typeof value !== "string" || value === "") {
      return new Response(this.#form(page.request, "Type a value."), { status: 400, headers: HEADERS });
    }
    page.value = value;
    return new Response(
      "<!doctype html><title>toolgate</title><p>Received. You can close this page and go back to your client.</p>",
      { headers: HEADERS },
    );
  }

  #form(request: SecretRequest, problem?: string): string {
    const keep = request.keep === "session"
      ? "It is kept in toolgate's memory for this client only, and never shown to the client or its model."
      : "It is saved to toolgate's secret store, and never shown to the client or its model.";
    return `<!doctype html><meta charset="utf-8"><title>toolgate: ${escapeHtml(request.name)}</title>
<style>body{font-family:sans-serif;max-width:40em;margin:2em auto}input{width:100%}</style>
<h1>${escapeHtml(request.name)}</h1>
<p>The model asks for the secret <b>${escapeHtml(request.name)}</b>, which ${
      escapeHtml(request.tools.join(", "))
    } receive. Its reason (the model's words): <q>${escapeHtml(request.reason)}</q></p>
<p>${keep}</p>${problem === undefined ? "" : `<p><b>${escapeHtml(problem)}</b></p>`}
<form method="post"><input type="password" name="value" autocomplete="off" autofocus required>
<p><button>Give it to toolgate</button></p></form>`;
  }
}
