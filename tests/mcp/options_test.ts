/** `toolgate serve`'s own options: mistakes are usage errors (exit 2) with a message, never a stack trace. */
import assert from "node:assert/strict";
import { hasStackTrace } from "../support.ts";
import { serveToEnd as serve } from "./helpers.ts";

const CASES: [string, string[], RegExp][] = [
  ["--allow-tools naming a tool the manifest lacks", ["--allow-tools", "note,nope"], /"nope"/],
  ["--token without --http", ["--token", "x"], /--token needs --http/],
  ["--host without --http", ["--host", "0.0.0.0"], /--host needs --http/],
  ["a port past 65535", ["--http", "70000", "--token", "x"], /--http must be a port number/],
  ["a port that is not a number", ["--http", "eighty", "--token", "x"], /--http must be an integer/],
  ["an empty token", ["--http", "0", "--token", "  "], /bearer token/],
  ["a stray argument", ["now"], /unexpected argument "now"/],
  ["--max-calls 0", ["--max-calls", "0"], /--max-calls must be an integer > 0/],
  [
    "--max-session-calls that is not a number",
    ["--max-session-calls", "many"],
    /--max-session-calls must be/,
  ],
  ["--max-jobs 0", ["--max-jobs", "0"], /--max-jobs must be an integer > 0/],
  [
    "--max-session-jobs that is not a number",
    ["--max-session-jobs", "1.5"],
    /--max-session-jobs must be an integer/,
  ],
  ["--max-sessions without --http", ["--max-sessions", "4"], /--max-sessions needs --http/],
  ["--session-idle without --http", ["--session-idle", "60"], /--session-idle needs --http/],
  [
    "--session-idle 0",
    ["--http", "0", "--token", "x", "--session-idle", "0"],
    /--session-idle must be a number > 0/,
  ],
  ["--sse-poll without --http", ["--sse-poll", "5"], /--sse-poll needs --http/],
  ["--sse-poll -1", ["--http", "0", "--token", "x", "--sse-poll=-1"], /--sse-poll must be a number/],
  [
    "--approve-hosts given a URL",
    ["--approve-hosts", "https://example.com"],
    /--approve-hosts: "https:\/\/example.com" is not a host/,
  ],
];

for (const [what, args, message] of CASES) {
  Deno.test(`serve: ${what} is a usage error`, async () => {
    const { code, stderr, stdout } = await serve(args);
    assert.equal(code, 2, stderr);
    assert.match(stderr, message);
    assert.ok(!hasStackTrace(stderr), stderr);
    assert.equal(stdout, "");
  });
}
