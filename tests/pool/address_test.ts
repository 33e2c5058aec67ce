/** The pool's address: nats:// and tls:// URLs read, and never shown with their secrets. */
import assert from "node:assert/strict";
import { credentialFiles, parsePoolUrl, type PoolAddress } from "../../src/pool/address.ts";

function address(text: string): PoolAddress {
  const parsed = parsePoolUrl(text);
  assert.ok(typeof parsed !== "string", parsed as string);
  return parsed;
}

Deno.test("parsePoolUrl: nats:// and tls://, port 4222 by default, several servers", () => {
  assert.deepEqual(address("nats://127.0.0.1:4333"), {
    servers: ["127.0.0.1:4333"],
    tls: false,
    shown: "nats://127.0.0.1:4333",
    user: undefined,
    pass: undefined,
  });
  assert.deepEqual(address("tls://queue.internal").servers, ["queue.internal:4222"]);
  assert.equal(address("TLS://queue.internal").tls, true);
  assert.deepEqual(address("nats://a:1, nats://b").servers, ["a:1", "b:4222"]);
  assert.deepEqual(address("nats://[::1]:4222").servers, ["[::1]:4222"]);
});

Deno.test("parsePoolUrl: a user and password, or a token, are read but never shown", () => {
  const withPassword = address("nats://alice:s3cret-pass@queue.internal:4222");
  assert.equal(withPassword.user, "alice");
  assert.equal(withPassword.pass, "s3cret-pass");
  assert.equal(withPassword.shown, "nats://queue.internal:4222");
  const withToken = address("tls://t0ken-value@queue.internal");
  assert.equal(withToken.user, "t0ken-value");
  assert.equal(withToken.pass, undefined);
  assert.ok(!withToken.shown.includes("t0ken"));
});

Deno.test("parsePoolUrl: anything else says what is wrong, without the URL's secrets", () => {
  const cases: [string, RegExp][] = [
    ["http://queue.internal", /must start with nats:\/\/ or tls:\/\//],
    ["queue.internal:4222", /must start with nats:\/\//],
    ["nats://a, tls://b", /one scheme/],
    ["nats://a/path", /host and port only/],
    ["nats://a?x=1", /host and port only/],
    ["nats://a:99999", /no valid host/],
    ["ftp://user:hunter22@a", /\*\*\*@a/],
  ];
  for (const [text, reason] of cases) {
    const problem = parsePoolUrl(text);
    assert.equal(typeof problem, "string", text);
    assert.match(problem as string, reason);
    assert.ok(!(problem as string).includes("hunter22"));
  }
});

Deno.test("credentialFiles: the files the NATS variables name, and nothing else", () => {
  assert.deepEqual(
    credentialFiles({
      NATS_CREDS: "/a.creds",
      NATS_TOKEN: "tok",
      NATS_CA: "/ca.pem",
      NATS_KEY: "",
      PATH: "/bin",
    }),
    ["/a.creds", "/ca.pem"],
  );
});
