import assert from "node:assert/strict";
import { AgentError } from "../../src/agent/errors.ts";
import {
  backoffMs,
  ChatClient,
  type ChatClientOptions,
  parseRetryAfter,
} from "../../src/agent/chat_client.ts";
import { makeRedactor } from "../../src/state/redact.ts";
import { answer, startChatServer } from "./chat_server.ts";

const BODY = { model: "m", messages: [{ role: "user", content: "hi" }] };

/** A client whose waits are recorded instead of slept. */
function client(baseUrl: string, options: Partial<ChatClientOptions> = {}) {
  const waits: number[] = [];
  const instance = new ChatClient({
    baseUrl,
    timeoutMs: 5000,
    retries: 2,
    random: () => 0.5,
    sleep: (ms) => {
      waits.push(ms);
      return Promise.resolve();
    },
    ...options,
  });
  return { client: instance, waits };
}

Deno.test("http: POSTs JSON to {base}/chat/completions, a trailing slash on the base tolerated", async () => {
  await using server = startChatServer([answer("hi")]);
  const { client: chat } = client(server.baseUrl + "/");
  const body = await chat.complete(BODY);
  assert.equal((body as { choices: unknown[] }).choices.length, 1);
  const [request] = server.requests;
  assert.equal(request.method, "POST");
  assert.equal(request.path, "/v1/chat/completions");
  assert.equal(request.headers["content-type"], "application/json");
  assert.deepEqual(request.body, BODY);
  assert.equal(request.headers["authorization"], undefined, "no key, no Authorization header");
});

Deno.test("http: the API key goes as a Bearer token when set", async () => {
  await using server = startChatServer([answer("hi")]);
  await client(server.baseUrl, { apiKey: "sk-abc" }).client.complete(BODY);
  assert.equal(server.requests[0].headers["authorization"], "Bearer sk-abc");
});

Deno.test("http: 500 twice then success retries with growing backoff and one Idempotency-Key", async () => {
  await using server = startChatServer([
    { status: 500, text: "boom" },
    { status: 502, text: "bad gateway" },
    answer("at last"),
  ]);
  const { client: chat, waits } = client(server.baseUrl, { retries: 2 });
  await chat.complete(BODY);
  assert.equal(server.requests.length, 3);
  assert.deepEqual(waits, [backoffMs(0, () => 0.5), backoffMs(1, () => 0.5)]);
  assert.ok(waits[1] > waits[0], "exponential");
  const keys = server.requests.map((r) => r.headers["idempotency-key"]);
  assert.ok(keys[0] && keys[0].length >= 16);
  assert.deepEqual(new Set(keys).size, 1, "the same key across the retries of one request");
});

Deno.test("http: each request has its own Idempotency-Key", async () => {
  await using server = startChatServer([answer("a"), answer("b")]);
  const { client: chat } = client(server.baseUrl);
  await chat.complete(BODY);
  await chat.complete(BODY);
  const [first, second] = server.requests.map((r) => r.headers["idempotency-key"]);
  assert.notEqual(first, second);
});

Deno.test("http: 429 waits as long as Retry-After says, in seconds or as a date", async () => {
  const now = Date.parse("2030-01-01T00:00:00Z");
  await using server = startChatServer([
    { status: 429, headers: { "retry-after": "3" }, text: "slow down" },
    { status: 503, headers: { "retry-after": "Tue, 01 Jan 2030 00:00:07 GMT" }, text: "later" },
    answer("ok"),
  ]);
  const { client: chat, waits } = client(server.baseUrl, { now: () => now });
  await chat.complete(BODY);
  assert.deepEqual(waits, [3000, 7000]);
});

Deno.test("http: retries exhausted fail with the status and the first 2,000 characters of the body", async () => {
  const long = "E".repeat(5000);
  await using server = startChatServer(() => ({ status: 503, text: long }));
  const { client: chat } = client(server.baseUrl, { retries: 2 });
  const error = await chat.complete(BODY).then(() => undefined, (e) => e);
  assert.ok(error instanceof AgentError);
  assert.equal(server.requests.length, 3);
  assert.match(error.message, /503/);
  assert.match(error.message, /3 attempts/);
  assert.ok(error.message.includes("E".repeat(2000)));
  assert.ok(!error.message.includes("E".repeat(2001)));
});

Deno.test("http: a 429 after every retry names the status and the attempts, and no unrelated timeout", async () => {
  await using server = startChatServer(() => ({
    status: 429,
    headers: { "retry-after": "0" },
    json: { error: { message: "Rate limit reached" } },
  }));
  const { client: chat } = client(server.baseUrl, { retries: 2, timeoutMs: 90_000 });
  const error = await chat.complete(BODY).then(() => undefined, (e) => e);
  assert.ok(error instanceof AgentError);
  assert.equal(server.requests.length, 3);
  assert.match(
    error.message,
    /^the chat endpoint answered 429 Too Many Requests: .*Rate limit reached.* \(3 attempts\)$/,
  );
  assert.ok(!/timeout|90 s/.test(error.message), error.message);
});

Deno.test("http: a client error (400, 401) is not retried", async () => {
  await using server = startChatServer([
    { status: 401, json: { error: { message: "bad key" } } },
    answer("never"),
  ]);
  const { client: chat, waits } = client(server.baseUrl);
  const error = await chat.complete(BODY).then(() => undefined, (e) => e);
  assert.ok(error instanceof AgentError);
  assert.match(error.message, /401/);
  assert.match(error.message, /bad key/);
  assert.equal(server.requests.length, 1);
  assert.deepEqual(waits, []);
});

Deno.test("http: a 401 names the key's variables, a 404 the model and the base URL", async () => {
  await using server = startChatServer([
    { status: 401, json: { error: { message: "bad key" } } },
    { status: 403, json: { error: { message: "forbidden" } } },
    { status: 404, json: { error: { message: "The model `m` does not exist" } } },
  ]);
  const failOf = async (options: Partial<ChatClientOptions>) => {
    const error = await client(server.baseUrl, options).client.complete(BODY).then(() => undefined, (e) => e);
    assert.ok(error instanceof AgentError, String(error));
    return error.message;
  };
  const unkeyed = await failOf({});
  assert.match(unkeyed, /401.*bad key/);
  assert.match(unkeyed, /no API key was sent: set OAI_API_KEY \(or OPENAI_API_KEY\), or pass --api-key/);
  const keyed = await failOf({ apiKey: "sk-wrong" });
  assert.match(keyed, /403.*the API key was refused: check --api-key, OAI_API_KEY or OPENAI_API_KEY/);
  assert.doesNotMatch(keyed, /sk-wrong/);
  const missing = await failOf({});
  assert.match(missing, /404/);
  assert.ok(
    missing.includes(
      `is the model "m" served there? --model, OAI_MODEL; is the base URL ${server.baseUrl} right?`,
    ),
    missing,
  );
  assert.match(missing, /--base-url, OAI_BASE_URL/);
});

Deno.test("http: a Retry-After longer than a minute fails at once and says so", async () => {
  await using server = startChatServer([{ status: 429, headers: { "retry-after": "3600" }, text: "quota" }]);
  const { client: chat, waits } = client(server.baseUrl);
  const error = await chat.complete(BODY).then(() => undefined, (e) => e);
  assert.ok(error instanceof AgentError);
  assert.match(error.message, /retry after 3600 s/);
  assert.deepEqual(waits, []);
});

Deno.test("http: a timeout is retried, then reported with the limit", async () => {
  await using server = startChatServer(() => ({ delayMs: 400, json: {} }));
  const { client: chat, waits } = client(server.baseUrl, { timeoutMs: 100, retries: 1 });
  const error = await chat.complete(BODY).then(() => undefined, (e) => e);
  assert.ok(error instanceof AgentError);
  assert.match(error.message, /within 0\.1 s/);
  assert.equal(waits.length, 1);
});

Deno.test("http: a network error is retried, then reported", async () => {
  // A port that was just freed: nothing listens there.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const { client: chat, waits } = client(`http://127.0.0.1:${port}/v1`, { retries: 2 });
  const error = await chat.complete(BODY).then(() => undefined, (e) => e);
  assert.ok(error instanceof AgentError);
  assert.match(error.message, /cannot reach http:\/\/127\.0\.0\.1/);
  assert.match(error.message, /connection refused/);
  assert.doesNotMatch(error.message, /fetch failed/);
  assert.equal(waits.length, 2);
});

Deno.test("http: an endpoint that cannot be reached says why: no such host, TLS to a plain-HTTP port", async () => {
  const noHost = await client("http://no-such-host.invalid/v1", { retries: 0 }).client.complete(BODY).then(
    () => undefined,
    (e) => e,
  );
  assert.ok(noHost instanceof AgentError);
  assert.match(
    noHost.message,
    /cannot reach http:\/\/no-such-host\.invalid\/v1.*: (no such host|the host name could not be looked up)/,
  );
  await using server = startChatServer([answer("never")]);
  const tls = await client(server.baseUrl.replace("http://", "https://"), { retries: 0 }).client.complete(
    BODY,
  )
    .then(() => undefined, (e) => e);
  assert.ok(tls instanceof AgentError);
  assert.match(tls.message, /TLS to a port that speaks plain HTTP \(write http:\/\/, not https:\/\/\)/);
});

Deno.test("http: a body that is not JSON fails with a clear message", async () => {
  await using server = startChatServer([{ text: "<html>proxy error</html>" }]);
  const error = await client(server.baseUrl).client.complete(BODY).then(() => undefined, (e) => e);
  assert.ok(error instanceof AgentError);
  assert.match(error.message, /not JSON: "<html>proxy error<\/html>"/);
});

Deno.test("http: --debug sees requests and responses with the key masked", async () => {
  await using server = startChatServer([answer("hi")]);
  const lines: string[] = [];
  const { client: chat } = client(server.baseUrl, {
    apiKey: "sk-very-secret",
    debug: (text) => Promise.resolve(void lines.push(text)),
  });
  await chat.complete(BODY);
  const dump = lines.join("\n");
  assert.match(dump, /-> POST http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions/);
  assert.match(dump, /Bearer \[REDACTED\]/);
  assert.match(dump, /<- 200/);
  assert.ok(!dump.includes("sk-very-secret"));
});

Deno.test("http: parseRetryAfter reads seconds and dates, and nothing else", () => {
  assert.equal(parseRetryAfter("1", 0), 1000);
  assert.equal(parseRetryAfter("0.5", 0), 500);
  assert.equal(parseRetryAfter("Thu, 01 Jan 1970 00:00:10 GMT", 4000), 6000);
  assert.equal(parseRetryAfter("Thu, 01 Jan 1970 00:00:01 GMT", 4000), 0, "a past date means now");
  assert.equal(parseRetryAfter("soon", 0), undefined);
  assert.equal(parseRetryAfter(null, 0), undefined);
});

Deno.test("http: backoff doubles, is capped, and jitters within its upper half", () => {
  assert.equal(backoffMs(0, () => 0), 250);
  assert.equal(backoffMs(0, () => 1), 500);
  assert.equal(backoffMs(3, () => 0), 2000);
  assert.equal(backoffMs(20, () => 1), 30_000);
});

Deno.test("http: an answer past maxResponseBytes fails with a clear error and is not retried", async () => {
  // With a Content-Length (refused before it is read) and without one (counted as it comes).
  const sized = answer("x".repeat(10_000));
  const chunked = {
    sse: Array.from({ length: 20 }, () => "y".repeat(1000)),
    chunkDelayMs: 0,
    headers: { "content-type": "application/json" },
  };
  for (const reply of [sized, chunked]) {
    await using server = startChatServer([reply, reply, reply]);
    const { client: chat } = client(server.baseUrl, { maxResponseBytes: 5000 });
    const error = await chat.complete(BODY).then(() => undefined, (e) => e);
    assert.ok(error instanceof AgentError, String(error));
    assert.equal(error.message.startsWith("the chat endpoint's answer is larger than 5000 bytes"), true);
    assert.doesNotMatch(error.message, /cannot reach/);
    assert.equal(server.requests.length, 1);
  }
});

Deno.test("http: a streamed body errors once more than maxResponseBytes came through it", async () => {
  await using server = startChatServer([{ sse: Array.from({ length: 10 }, () => "z".repeat(1000)) }]);
  const { client: chat } = client(server.baseUrl, { maxResponseBytes: 4000 });
  const streamed = await chat.stream(BODY);
  const error = await new Response(streamed.body).text().then(() => undefined, (e) => e);
  assert.ok(error instanceof AgentError, String(error));
  assert.match(error.message, /larger than 4000 bytes/);
});

Deno.test("http: a huge error body is read only so far, and still named in the message", async () => {
  await using server = startChatServer([{ status: 400, text: "E".repeat(5 * 1024 * 1024) }]);
  const { client: chat } = client(server.baseUrl);
  const error = await chat.complete(BODY).then(() => undefined, (e) => e);
  assert.ok(error instanceof AgentError);
  assert.match(error.message, /answered 400 Bad Request: E{100}/);
  assert.ok(error.message.length < 2200);
});

Deno.test("http: --debug sees the request redacted before it is serialized, and the answer redacted", async () => {
  const secret = 'pa"ss\nw\\ord';
  await using server = startChatServer([answer(`echo ${secret}`)]);
  const lines: string[] = [];
  const { client: chat } = client(server.baseUrl, {
    debug: (text) => Promise.resolve(void lines.push(text)),
    redact: makeRedactor([secret]),
  });
  await chat.complete({ model: "m", messages: [{ role: "user", content: `my secret is ${secret}` }] });
  const shown = lines.join("\n");
  assert.match(shown, /"content":"my secret is \[REDACTED\]"/);
  assert.ok(!shown.includes(JSON.stringify(secret).slice(1, -1)), shown);
  // The request itself went whole.
  assert.equal(server.requests[0].body.messages[0].content, `my secret is ${secret}`);
});

Deno.test("http: a server that ignores stream: true and drips its one answer fails after the timeout", async () => {
  const drip = {
    sse: Array.from({ length: 100 }, () => " "),
    chunkDelayMs: 50,
    headers: { "content-type": "application/json" },
  };
  await using server = startChatServer([drip]);
  const { client: chat } = client(server.baseUrl, { timeoutMs: 500 });
  const streamed = await chat.stream(BODY);
  const started = performance.now();
  const error = await new Response(streamed.body).text().then(() => undefined, (e) => e);
  assert.ok(error instanceof AgentError, String(error));
  assert.match(error.message, /no whole answer from .* within 0\.5 s/);
  assert.ok(performance.now() - started < 2000);
});
