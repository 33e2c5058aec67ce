/**
 * What `--lazy-tools` saves on the shipped tool belt: the same scripted conversations run through the real agent
 * loop with every tool in full and with stubs first, against a loopback endpoint that reports `usage` as a model's
 * endpoint would. No model is reachable here, so the endpoint counts tokens with a stated approximation: a
 * request's prompt tokens are its JSON body's UTF-8 bytes / 4 (rounded up), an answer's completion tokens its
 * message's bytes / 4. The loop sums that usage per run, as it does for a real endpoint; the bytes sent are
 * counted too. The scripted model calls what its plan says; a call answered with a definition (`not_run`) it makes
 * again, as a model would, which costs the lazy run one more request per turn that meets new tools.
 *
 * Run: `deno run --no-prompt --allow-read --allow-write --allow-env --allow-run --allow-net tests/bench/lazy_tools_bench.ts`
 *
 * @module
 */
import { Policy } from "../../src/policy/policy.ts";
import type { AgentEvent } from "../../src/agent/events.ts";
import { ChatClient } from "../../src/agent/chat_client.ts";
import { ToolDisclosure } from "../../src/agent/lazy_tools.ts";
import { runLoop } from "../../src/agent/loop.ts";
import type { ChatMessage, ToolCall } from "../../src/agent/messages.ts";
import { UsageMeter } from "../../src/agent/usage.ts";
import { Executor } from "../../src/run/executor.ts";
import { toOpenAI } from "../../src/manifest/tool_definitions.ts";
import { loadManifest } from "../../src/manifest/manifest.ts";
import { type Manifest } from "../../src/manifest/manifest_types.ts";
import { toStub } from "../../src/agent/lazy_tools.ts";
import { BELT_MANIFEST_PATH } from "../../src/manifest/tool_belt.ts";
import { type RecordedRequest, type Reply, startChatServer } from "../agent/chat_server.ts";

/** The approximation: one token per four bytes of JSON. */
const BYTES_PER_TOKEN = 4;
const encoder = new TextEncoder();
const bytesOf = (value: unknown) => encoder.encode(JSON.stringify(value)).byteLength;
const tokensOf = (value: unknown) => Math.ceil(bytesOf(value) / BYTES_PER_TOKEN);

/** A scripted conversation: the tool calls of each turn, then a final answer. */
type Plan = readonly (readonly { name: string; args: Record<string, unknown> }[])[];

/** Conversations a coding agent has on the belt: from no tool at all to a few turns with several tools. */
const PLANS: Readonly<Record<string, Plan>> = {
  no_tool: [],
  one_tool: [[{ name: "get_time", args: { timezone: "UTC" } }]],
  three_tools_one_turn: [[
    { name: "fs_list_dir", args: { path: "." } },
    { name: "fs_stat", args: { path: "a.txt" } },
    { name: "fs_read_file", args: { path: "a.txt" } },
  ]],
  three_tools_three_turns: [
    [{ name: "fs_list_dir", args: { path: "." } }],
    [{ name: "fs_stat", args: { path: "a.txt" } }],
    [{ name: "fs_read_file", args: { path: "a.txt" } }],
  ],
  two_tools_six_turns: [
    [{ name: "fs_list_dir", args: { path: "." } }],
    [{ name: "fs_read_file", args: { path: "a.txt" } }],
    [{ name: "fs_list_dir", args: { path: ".", recursive: true } }],
    [{ name: "fs_read_file", args: { path: "b.txt" } }],
    [{ name: "fs_read_file", args: { path: "a.txt", offset: 2 } }],
    [{ name: "fs_list_dir", args: { path: "." } }],
  ],
};

/** The scripted model: follows its plan, calls again what came back `not_run`, and reports usage. */
function scriptedModel(plan: Plan): (request: RecordedRequest) => Reply {
  let turn = 0;
  let ids = 0;
  const reply = (message: Record<string, unknown>, finish: string): Reply => ({
    json: {
      id: "chatcmpl-bench",
      object: "chat.completion",
      choices: [{ index: 0, message, finish_reason: finish }],
      usage: {
        prompt_tokens: 0, // replaced below: the request's own size
        completion_tokens: tokensOf(message),
        total_tokens: 0,
      },
    },
  });
  return (request) => {
    const messages: ChatMessage[] = request.body.messages;
    const lastAssistant = messages.findLast((m) => m.role === "assistant");
    const notRun = new Set(
      messages.filter((m) => m.role === "tool")
        .filter((m) => JSON.parse(m.content).not_run === true)
        .map((m) => m.tool_call_id),
    );
    const again = (lastAssistant?.role === "assistant" ? lastAssistant.tool_calls ?? [] : [])
      .filter((call: ToolCall) => notRun.has(call.id));
    const calls = again.length > 0
      ? again.map((call) => ({ name: call.function.name, args: JSON.parse(call.function.arguments) }))
      : turn < plan.length
      ? plan[turn++]
      : [];
    const out = calls.length === 0
      ? reply({ role: "assistant", content: "Here is what I found." }, "stop")
      : reply({
        role: "assistant",
        content: null,
        tool_calls: calls.map((call) => ({
          id: `call_${++ids}`,
          type: "function",
          function: { name: call.name, arguments: JSON.stringify(call.args) },
        })),
      }, "tool_calls");
    const json = (out as { json: { usage: Record<string, number> } }).json;
    json.usage.prompt_tokens = tokensOf(request.body);
    json.usage.total_tokens = json.usage.prompt_tokens + json.usage.completion_tokens;
    return out;
  };
}

interface RunFigures {
  requests: number;
  bytes: number;
  tokens: number;
}

async function runPlan(
  manifest: Manifest,
  executor: Executor,
  plan: Plan,
  lazy: boolean,
): Promise<RunFigures> {
  const server = startChatServer(scriptedModel(plan));
  const meter = new UsageMeter();
  let bytes = 0;
  try {
    const messages: ChatMessage[] = [
      { role: "system", content: "You are a helpful, precise assistant. Use tools when strictly helpful." },
      { role: "user", content: "What is in this folder, and what does a.txt say?" },
    ];
    const outcome = await runLoop(messages, {
      executor,
      client: new ChatClient({ baseUrl: server.baseUrl, timeoutMs: 30_000, retries: 0 }),
      policy: new Policy(),
      model: "bench",
      maxSteps: 20,
      disclosure: new ToolDisclosure(manifest, { lazy }),
      onEvent: (event: AgentEvent) => {
        if (event.type === "request") bytes += event.bytes;
        if (event.type === "response") meter.add(event.usage);
        return Promise.resolve();
      },
    });
    if (outcome.kind !== "answer") throw new Error("the scripted conversation did not end");
  } finally {
    await server.close();
  }
  const totals = meter.totals();
  if (!totals) throw new Error("the endpoint reported no usage");
  return { requests: totals.requests, bytes, tokens: totals.total_tokens };
}

/**
 * Runs every plan with and without `--lazy-tools` and returns the figures: the belt's tools in full and as stubs
 * (bytes and approximate tokens of one request's `tools`), and per plan the requests, bytes sent and tokens (the
 * endpoint's usage) of each mode, with the share lazy saves (negative: it costs).
 *
 * @example
 * ```ts ignore
 * import { benchLazyTools } from "./lazy_tools_bench.ts";
 * const figures = await benchLazyTools();
 * console.log(figures.one_tool_saved_pct);
 * ```
 */
export async function benchLazyTools(): Promise<Record<string, number>> {
  const loaded = await loadManifest(BELT_MANIFEST_PATH);
  if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
  const manifest = loaded.manifest;
  const cwd = await Deno.makeTempDir({ prefix: "toolgate_lazy_bench_" });
  await Deno.writeTextFile(`${cwd}/a.txt`, "alpha\nbeta\ngamma\n");
  await Deno.writeTextFile(`${cwd}/b.txt`, "delta\n");
  const executor = new Executor({
    manifest,
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: cwd },
    cwd,
    auditDir: null,
    sandbox: "off",
  });
  const full = manifest.tools.map(toOpenAI);
  const stubs = manifest.tools.map(toStub);
  const figures: Record<string, number> = {
    belt_tools: manifest.tools.length,
    belt_tools_full_bytes: bytesOf(full),
    belt_tools_stub_bytes: bytesOf(stubs),
    belt_tools_full_tokens: tokensOf(full),
    belt_tools_stub_tokens: tokensOf(stubs),
    per_disclosed_tool_tokens: Math.round((tokensOf(full) - tokensOf(stubs)) / manifest.tools.length),
  };
  try {
    for (const [name, plan] of Object.entries(PLANS)) {
      const eager = await runPlan(manifest, executor, plan, false);
      const lazy = await runPlan(manifest, executor, plan, true);
      figures[`${name}_requests_full`] = eager.requests;
      figures[`${name}_requests_lazy`] = lazy.requests;
      figures[`${name}_bytes_full`] = eager.bytes;
      figures[`${name}_bytes_lazy`] = lazy.bytes;
      figures[`${name}_tokens_full`] = eager.tokens;
      figures[`${name}_tokens_lazy`] = lazy.tokens;
      figures[`${name}_saved_pct`] = Number((100 * (1 - lazy.tokens / eager.tokens)).toFixed(1));
    }
  } finally {
    await Deno.remove(cwd, { recursive: true });
  }
  return figures;
}

if (import.meta.main) {
  const figures = await benchLazyTools();
  for (const [name, value] of Object.entries(figures)) console.log(`${name.padEnd(40)} ${value}`);
}
