/** Token usage read from what an endpoint sends (which it may get wrong), and summed over a run. */
import assert from "node:assert/strict";
import { readUsage, usageLine, UsageMeter } from "../../src/agent/usage.ts";

Deno.test("usage: OpenAI's usage object, with its cached and reasoning details", () => {
  assert.deepEqual(
    readUsage({
      usage: {
        prompt_tokens: 1200,
        completion_tokens: 80,
        total_tokens: 1280,
        prompt_tokens_details: { cached_tokens: 1024, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 64 },
      },
    }),
    {
      prompt_tokens: 1200,
      completion_tokens: 80,
      total_tokens: 1280,
      cached_tokens: 1024,
      reasoning_tokens: 64,
    },
  );
});

Deno.test("usage: no usage, null, or nothing countable is no usage (not zeros)", () => {
  for (
    const body of [
      {},
      { usage: null },
      { usage: "12 tokens" },
      { usage: {} },
      { usage: { total_tokens: 5 } },
      { usage: { prompt_tokens: -1, completion_tokens: "2" } },
      null,
      [],
    ]
  ) {
    assert.equal(readUsage(body), undefined, JSON.stringify(body));
  }
});

Deno.test("usage: a count that is not a non-negative safe integer is left out; a missing total is the sum", () => {
  assert.deepEqual(readUsage({ usage: { prompt_tokens: 10, completion_tokens: 2.5 } }), {
    prompt_tokens: 10,
    completion_tokens: 0,
    total_tokens: 10,
  });
  assert.deepEqual(
    readUsage({
      usage: {
        prompt_tokens: 3,
        completion_tokens: 4,
        total_tokens: 1e300,
        prompt_tokens_details: { cached_tokens: -5 },
      },
    }),
    { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
  );
});

Deno.test("usage: the meter sums the answers that reported usage and counts every request", () => {
  const meter = new UsageMeter();
  assert.equal(meter.totals(), undefined, "nothing reported: no totals");
  meter.add(undefined);
  assert.equal(meter.totals(), undefined, "a request without usage is not zero tokens");
  meter.add({ prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 });
  meter.add({ prompt_tokens: 200, completion_tokens: 20, total_tokens: 220, cached_tokens: 64 });
  assert.deepEqual(meter.totals(), {
    prompt_tokens: 300,
    completion_tokens: 30,
    total_tokens: 330,
    cached_tokens: 64,
    requests: 3,
    requests_with_usage: 2,
  });
});

Deno.test("usage: the terminal line groups digits and says when some requests reported nothing", () => {
  const all = { prompt_tokens: 12345, completion_tokens: 678, total_tokens: 13023 };
  assert.equal(
    usageLine({ ...all, requests: 1, requests_with_usage: 1 }),
    "tokens: 12,345 prompt + 678 completion = 13,023 total, over 1 request",
  );
  assert.equal(
    usageLine({ ...all, cached_tokens: 1000, reasoning_tokens: 5, requests: 3, requests_with_usage: 2 }),
    "tokens: 12,345 prompt + 678 completion = 13,023 total (1,000 prompt cached, 5 reasoning), " +
      "over the 2 of 3 requests that reported usage",
  );
});
