/**
 * An upstream server's questions through toolgate's policy: server-everything behind `toolgate serve` lists every
 * tool it lists a client that can answer sampling, elicitation and roots, a form or a sampling also asked as a
 * task; its elicitation and sampling tools, those that ask as tasks too, are answered by serve's own MCP client
 * (a scripted SDK client with handlers), its roots are the workspace only; a
 * client without sampling, and `toolgate call` without a terminal, get a clear refusal, never a hang; a sampling
 * request leaves an audit line; a secret in the model's answer never reaches the server.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/index"
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client/index.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/stdio"
import { StdioClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/stdio.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import {
  type ClientCapabilities,
  CreateMessageRequestSchema,
  ElicitationCompleteNotificationSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import {
  auditLines,
  envelope,
  EVERYTHING_SERVER,
  EVERYTHING_STDIO,
  MODULES,
  NODE,
  nodeServersMissing,
  project,
} from "./gateway_support.ts";
import { denoDir, hostEnv, launcherArgs, launcherArgv } from "./support.ts";
import { openTerminal } from "./terminal.ts";
import { answer, callTools, startChatServer, toolMessages } from "./agent/chat_server.ts";
import { consoleApi, startConsoleServer, until } from "./console_helpers.ts";
import { connectHttp, TOKEN } from "./mcp/helpers.ts";

const ignore = await nodeServersMissing("gateway_questions_test") !== undefined;

/** What the scripted client saw the server behind toolgate ask it. */
interface Asked {
  elicitations: string[];
  /** The pages a URL-mode elicitation sent the user to. */
  urls: string[];
  samplings: string[];
  roots: number;
}

/**
 * A scripted client of `command args` over stdio in `cwd`, declaring `capabilities`: its user accepts every form
 * with `{name: "Ada"}`, its model answers `modelText`, its roots are `/etc` (which toolgate must never pass on).
 */
async function scriptedClient(
  command: string,
  args: string[],
  cwd: string,
  options: {
    env?: Record<string, string>;
    capabilities: ClientCapabilities;
    modelText?: string;
    /** The user's answer to a form (default: accepted, `{name: "Ada"}`). */
    form?: (
      message: string,
    ) => { action: "accept"; content: Record<string, unknown> } | { action: "decline" };
  },
): Promise<Client & { asked: Asked }> {
  const client = new Client({ name: "gateway-questions-test", version: "1.0.0" }, {
    capabilities: options.capabilities,
  });
  const asked: Asked = { elicitations: [], urls: [], samplings: [], roots: 0 };
  if (options.capabilities.elicitation !== undefined) {
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      const { message, mode, url } = request.params as { message: string; mode?: string; url?: string };
      asked.elicitations.push(message);
      if (mode === "url") {
        asked.urls.push(url!);
        return { action: "accept" };
      }
      return options.form?.(message) ?? { action: "accept", content: { name: "Ada" } };
    });
  }
  if (options.capabilities.sampling !== undefined) {
    client.setRequestHandler(CreateMessageRequestSchema, (request) => {
      asked.samplings.push(JSON.stringify(request.params.messages));
      return {
        role: "assistant",
        content: { type: "text", text: options.modelText ?? "blue" },
        model: "scripted-model",
        stopReason: "endTurn",
      };
    });
  }
  if (options.capabilities.roots !== undefined) {
    client.setRequestHandler(ListRootsRequestSchema, () => {
      asked.roots += 1;
      return { roots: [{ uri: "file:///etc", name: "etc" }] };
    });
  }
  await client.connect(
    new StdioClientTransport({
      command,
      args,
      cwd,
      env: { ...Deno.env.toObject(), DENO_DIR: denoDir(), ...options.env },
      stderr: "pipe",
    }),
  );
  return Object.assign(client, { asked });
}

/** What serve's MCP client declares: every question, none of them as a task. */
const ALL: ClientCapabilities = { sampling: {}, elicitation: { form: {}, url: {} }, roots: {} };

/** Everything toolgate's own client declares upstream: every question, a form or a sampling also as a task. */
const UPSTREAM: ClientCapabilities = {
  ...ALL,
  tasks: { cancel: {}, requests: { sampling: { createMessage: {} }, elicitation: { create: {} } } },
};

/** The client of `toolgate serve ARGS` in `dir`. */
function serveClient(
  dir: string,
  env: Record<string, string>,
  extra: string[],
  capabilities: ClientCapabilities = ALL,
  modelText?: string,
) {
  return scriptedClient(Deno.execPath(), launcherArgs(["serve", ...extra]), dir, {
    env,
    capabilities,
    modelText,
  });
}

/** A trusted project whose one MCP server is server-everything over stdio, named `ev`. */
async function everythingProject(): Promise<Awaited<ReturnType<typeof project>>> {
  const p = await project({ ev: EVERYTHING_STDIO });
  const trust = await p.run(["trust"]);
  assert.equal(trust.code, 0, trust.stderr);
  return p;
}

/** The text of a tool result's content blocks. */
function textOf(result: unknown): string {
  const content = (result as { content?: { type: string; text?: string }[] }).content ?? [];
  return content.map((block) => block.text ?? "").join("\n");
}

Deno.test({
  name:
    "serve: server-everything lists through toolgate every tool it lists a client that answers its questions",
  ignore,
  async fn() {
    await using p = await everythingProject();
    const direct = await scriptedClient(NODE, [EVERYTHING_SERVER, "stdio"], p.dir.path, {
      capabilities: UPSTREAM,
    });
    let names: string[];
    try {
      names = (await direct.listTools()).tools.map((tool) => tool.name).sort();
    } finally {
      await direct.close();
    }
    // The tools a client's capabilities unlock are among them.
    for (
      const name of [
        "trigger-sampling-request",
        "trigger-elicitation-request",
        "trigger-url-elicitation",
        "get-roots-list",
        "trigger-sampling-request-async",
        "trigger-elicitation-request-async",
      ]
    ) {
      assert.ok(names.includes(name), `${name} not in ${names.join(", ")}`);
    }
    assert.equal(names.length, 19, names.join(", "));
    const client = await serveClient(p.dir.path, p.env, []);
    try {
      const listed = (await client.listTools()).tools.map((tool) => tool.name).sort();
      assert.deepEqual(listed, names.map((name) => `mcp__ev__${name}`));
    } finally {
      await client.close();
    }
  },
});

Deno.test({
  name:
    "serve: server-everything's elicitation and sampling are answered by serve's MCP client; its roots are the workspace only",
  ignore,
  async fn() {
    await using p = await everythingProject();
    const client = await serveClient(p.dir.path, p.env, ["--allow-tools", "mcp__ev__*"]);
    try {
      const elicited = await client.callTool({ name: "mcp__ev__trigger-elicitation-request", arguments: {} });
      assert.equal(elicited.isError, undefined, JSON.stringify(elicited));
      assert.match(textOf(elicited), /- Name: Ada/);
      assert.deepEqual(client.asked.elicitations, [
        'The MCP server "ev" asks, in its tool mcp__ev__trigger-elicitation-request: ' +
        "Please provide inputs for the following fields:",
      ]);

      const sampled = await client.callTool({
        name: "mcp__ev__trigger-sampling-request",
        arguments: { prompt: "Name a colour.", maxTokens: 20 },
      });
      assert.equal(sampled.isError, undefined, JSON.stringify(sampled));
      assert.match(textOf(sampled), /"text": "blue"/);
      assert.match(textOf(sampled), /"model": "scripted-model"/);
      assert.equal(client.asked.samplings.length, 1);
      assert.match(client.asked.samplings[0], /Name a colour\./);

      const roots = await client.callTool({ name: "mcp__ev__get-roots-list", arguments: {} });
      assert.equal(roots.isError, undefined, JSON.stringify(roots));
      const text = textOf(roots);
      assert.match(text, /\(1 total\)/);
      assert.ok(
        text.includes(`URI: ${pathToFileURL(Deno.realPathSync(p.dir.path)).href}`) ||
          text.includes(`URI: ${pathToFileURL(p.dir.path).href}`),
        text,
      );
      // Neither a folder the profile reads outside the workspace, nor the client's own roots.
      assert.ok(!text.includes(MODULES), text);
      assert.doesNotMatch(text, /file:\/\/\/etc/);
      assert.equal(client.asked.roots, 0);
    } finally {
      await client.close();
    }
    // The sampling request has its own audit line, naming the server, the tool whose call it came in, the model.
    const lines = (await auditLines(p.state.path)).filter((line) => line.question === "sampling");
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.equal(lines[0].tool, "mcp__ev__trigger-sampling-request");
    assert.equal(lines[0].server, "ev");
    assert.equal(lines[0].upstream_tool, "trigger-sampling-request");
    assert.equal(lines[0].outcome, "ok");
    assert.equal(lines[0].model, "scripted-model");
    assert.equal(typeof lines[0].argsHmac, "string");
  },
});

Deno.test({
  name:
    "serve: server-everything's questions asked as tasks are answered by serve's MCP client, the server polling toolgate for them",
  ignore,
  async fn() {
    await using p = await everythingProject();
    const client = await serveClient(p.dir.path, p.env, ["--allow-tools", "mcp__ev__*"]);
    try {
      const elicited = await client.callTool({
        name: "mcp__ev__trigger-elicitation-request-async",
        arguments: {},
      });
      assert.equal(elicited.isError, undefined, JSON.stringify(elicited));
      assert.match(textOf(elicited), /\[COMPLETED\] User provided the requested information!/);
      assert.match(textOf(elicited), /- Name: Ada/);
      assert.deepEqual(client.asked.elicitations, [
        'The MCP server "ev" asks, in its tool mcp__ev__trigger-elicitation-request-async: ' +
        "Please provide inputs for the following fields (async task demo):",
      ]);

      const sampled = await client.callTool({
        name: "mcp__ev__trigger-sampling-request-async",
        arguments: { prompt: "Name a colour.", maxTokens: 20 },
      });
      assert.equal(sampled.isError, undefined, JSON.stringify(sampled));
      assert.match(textOf(sampled), /\[COMPLETED\] Async sampling completed!/);
      assert.match(textOf(sampled), /"text": "blue"/);
      assert.match(textOf(sampled), /"model": "scripted-model"/);
      assert.equal(client.asked.samplings.length, 1);
      assert.match(client.asked.samplings[0], /Name a colour\./);
    } finally {
      await client.close();
    }
    // Approved and audited as any sampling request: one line, for the call it came in.
    const lines = (await auditLines(p.state.path)).filter((line) => line.question === "sampling");
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.equal(lines[0].tool, "mcp__ev__trigger-sampling-request-async");
    assert.equal(lines[0].outcome, "ok");
  },
});

Deno.test({
  name:
    "serve: a server's sampling request under a client without sampling is refused at once with a clear MCP error",
  ignore,
  async fn() {
    await using p = await everythingProject();
    // The client can show forms but has no model to offer.
    const client = await serveClient(p.dir.path, p.env, ["--allow-tools", "mcp__ev__*"], {
      elicitation: { form: {} },
    });
    try {
      const sampled = await client.callTool({
        name: "mcp__ev__trigger-sampling-request",
        arguments: { prompt: "Name a colour.", maxTokens: 20 },
      });
      assert.equal(sampled.isError, true, JSON.stringify(sampled));
      assert.match(JSON.stringify(sampled), /it did not declare sampling/);
      assert.equal(client.asked.samplings.length, 0);
    } finally {
      await client.close();
    }
    const lines = (await auditLines(p.state.path)).filter((line) => line.question === "sampling");
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.equal(lines[0].outcome, "rejected");
  },
});

Deno.test({
  name:
    "serve: a server's sampling request is approved by the one policy: the client's user declines it, and the model is never asked",
  ignore,
  async fn() {
    await using p = await everythingProject();
    // No --allow-tools: the call and then its request for a model's answer are each asked of the client's user,
    // who runs the call and declines the request.
    const client = await scriptedClient(Deno.execPath(), launcherArgs(["serve"]), p.dir.path, {
      env: p.env,
      capabilities: ALL,
      form: (message) =>
        message.includes("(its question to the model)")
          ? { action: "decline" }
          : { action: "accept", content: { always: false } },
    });
    try {
      const sampled = await client.callTool({
        name: "mcp__ev__trigger-sampling-request",
        arguments: { prompt: "Name a colour.", maxTokens: 20 },
      });
      assert.equal(sampled.isError, true, JSON.stringify(sampled));
      assert.match(JSON.stringify(sampled), /The user denied sending the tool/);
      assert.equal(client.asked.elicitations.length, 2, JSON.stringify(client.asked.elicitations));
      assert.match(client.asked.elicitations[1], /asks to send this to the model/);
      assert.match(client.asked.elicitations[1], /Name a colour\./);
      assert.equal(client.asked.samplings.length, 0);
    } finally {
      await client.close();
    }
    const lines = (await auditLines(p.state.path)).filter((line) => line.question === "sampling");
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.equal(lines[0].outcome, "rejected");
  },
});

Deno.test({
  name: "call: a server's question to the user without a terminal is refused at once, saying why",
  ignore,
  async fn() {
    await using p = await everythingProject();
    const called = await p.run(["call", "mcp__ev__trigger-elicitation-request", "{}"]);
    const answer = envelope(called.stdout);
    assert.equal(answer.ok, false, called.stdout);
    assert.match(answer.message, /without a terminal, so nobody can answer/);
  },
});

/** A server of the test's own whose `ask` tool asks for a model's answer and says, in base64, what it was told. */
function askingServer(): string {
  const sdk = join(MODULES, "@modelcontextprotocol", "sdk", "dist", "esm");
  return `
import { McpServer } from ${JSON.stringify(join(sdk, "server", "mcp.js"))};
import { StdioServerTransport } from ${JSON.stringify(join(sdk, "server", "stdio.js"))};
import { CreateMessageResultSchema } from ${JSON.stringify(join(sdk, "types.js"))};
const server = new McpServer({ name: "own", version: "1.0.0" });
server.registerTool("ask", { description: "Asks the model." }, async (extra) => {
  const result = await extra.sendRequest({
    method: "sampling/createMessage",
    params: { messages: [{ role: "user", content: { type: "text", text: "Say the token." } }], maxTokens: 20 },
  }, CreateMessageResultSchema);
  const seen = Buffer.from(JSON.stringify(result)).toString("base64");
  return { content: [{ type: "text", text: seen }] };
});
await server.connect(new StdioServerTransport());
`;
}

Deno.test({
  name: "serve: a secret in the model's answer is redacted before the server sees it",
  ignore,
  async fn() {
    await using p = await project({});
    const script = join(p.dir.path, "server.mjs");
    await Deno.writeTextFile(script, askingServer());
    await Deno.writeTextFile(
      join(p.dir.path, "tools.json"),
      JSON.stringify({
        tools: [],
        mcpServers: {
          own: { command: "node", args: [script], permissions: { read: [MODULES] }, secrets: ["OWN_TOKEN"] },
        },
      }),
    );
    const secret = "tok-5f1c9a77e0b24d36";
    const env = { ...p.env, OWN_TOKEN: secret };
    const trust = await p.run(["trust"], undefined, { OWN_TOKEN: secret });
    assert.equal(trust.code, 0, trust.stderr);
    const client = await serveClient(
      p.dir.path,
      env,
      ["--allow-tools", "mcp__own__ask"],
      ALL,
      `it is ${secret}`,
    );
    try {
      const asked = await client.callTool({ name: "mcp__own__ask", arguments: {} });
      assert.equal(asked.isError, undefined, JSON.stringify(asked));
      const seen = new TextDecoder().decode(
        Uint8Array.from(atob(textOf(asked)), (c) => c.charCodeAt(0)),
      );
      assert.match(seen, /it is \[REDACTED\]/);
      assert.ok(!seen.includes(secret), seen);
    } finally {
      await client.close();
    }
  },
});

Deno.test({
  name:
    "run: the agent loop answers a server's sampling request with its own endpoint once --yes approved it",
  ignore,
  async fn() {
    await using p = await everythingProject();
    // The model calls the tool; the server's request for a model's answer goes to the same endpoint; then the end.
    await using chat = startChatServer([
      callTools([{
        id: "c1",
        name: "mcp__ev__trigger-sampling-request",
        args: { prompt: "Name a colour.", maxTokens: 20 },
      }]),
      answer("green"),
      answer("done"),
    ]);
    const ran = await p.run(["run", "--yes", "--prompt", "go", "--model", "m", "--base-url", chat.baseUrl]);
    assert.equal(ran.code, 0, ran.stderr);
    assert.equal(chat.requests.length, 3, JSON.stringify(chat.requests.map((r) => r.body)));
    // The server's request, as the endpoint got it: its system prompt and its text.
    const asked = JSON.stringify(chat.requests[1].body.messages);
    assert.match(asked, /You are a helpful test server\./);
    assert.match(asked, /Name a colour\./);
    const [result] = toolMessages(chat.requests[2].body);
    assert.match(result.content, /green/);
    const lines = (await auditLines(p.state.path)).filter((line) => line.question === "sampling");
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.equal(lines[0].outcome, "ok");
  },
});

Deno.test({
  name:
    "serve --console: a server's sampling request the client cannot be asked about waits for the console's approval",
  ignore,
  async fn() {
    await using p = await everythingProject();
    // Its own HOME keeps this user's Deno cache.
    await using served = await startConsoleServer(
      [],
      { ...p.env, DENO_DIR: denoDir() },
      join(p.dir.path, "tools.json"),
    );
    const api = await consoleApi(served.origin, served.link);
    // The client has a model to offer but no form to show: each approval waits in the console.
    const samplings: string[] = [];
    await using connected = await connectHttp(served.mcp, TOKEN, {
      capabilities: { sampling: {} },
      setup: (client) =>
        client.setRequestHandler(CreateMessageRequestSchema, (request) => {
          samplings.push(JSON.stringify(request.params.messages));
          return { role: "assistant", content: { type: "text", text: "violet" }, model: "scripted-model" };
        }),
    });
    const calling = connected.client.callTool({
      name: "mcp__ev__trigger-sampling-request",
      arguments: { prompt: "Name a colour.", maxTokens: 20 },
    });
    type Approval = { id: number; tool: string; lines: string[] };
    const waiting = async (): Promise<Approval[]> => (await api.get("/api/state")).approvals;
    // First the call, then its server's request for a model's answer, its text shown.
    await until(async () => (await waiting()).length === 1, "the call's approval waits in the console");
    const [call] = await waiting();
    assert.equal(call.tool, "mcp__ev__trigger-sampling-request");
    assert.equal(await api.post("/api/approve", { id: call.id, answer: "yes" }), 200);
    await until(
      async () => (await waiting()).some((q) => q.id !== call.id),
      "the sampling request's approval waits in the console",
    );
    const question = (await waiting()).find((q) => q.id !== call.id)!;
    assert.match(question.tool, /\(its question to the model\)/);
    assert.match(question.lines.join("\n"), /Name a colour\./);
    assert.equal(samplings.length, 0);
    assert.equal(await api.post("/api/approve", { id: question.id, answer: "yes" }), 200);
    const result = await calling;
    assert.equal(result.isError, undefined, JSON.stringify(result));
    assert.match(textOf(result), /violet/);
    assert.equal(samplings.length, 1);
  },
});

Deno.test({
  name: "call on a terminal: a server's form is asked there, and the person's answer goes back to the server",
  ignore,
  async fn() {
    await using p = await everythingProject();
    // The person types a name at the first field's prompt and takes every other field's default (or leaves it).
    let seen = 0;
    let first = true;
    await using terminal = openTerminal(
      launcherArgv(["call", "mcp__ev__trigger-elicitation-request", "{}"]),
      {
        cwd: p.dir.path,
        env: hostEnv({ XDG_STATE_HOME: p.env.XDG_STATE_HOME, XDG_CONFIG_HOME: p.env.XDG_CONFIG_HOME }),
        killAfterMs: 90_000,
        respond: (shown) => {
          if (shown.length === seen || !shown.endsWith(": ")) return undefined;
          seen = shown.length;
          const keys = first ? "Ada\n" : "\n";
          first = false;
          return keys;
        },
      },
    );
    const status = await terminal.status;
    const text = terminal.output();
    assert.equal(status.code, 0, text);
    assert.match(text, /The tool mcp__ev__trigger-elicitation-request asks you/);
    assert.match(text, /Please provide inputs for the following fields:/);
    const answer = JSON.parse(text.split("\n").filter((line) => line.startsWith('{"ok"')).at(-1)!);
    assert.equal(answer.ok, true, text);
    assert.match(JSON.stringify(answer.content), /- Name: Ada/);
  },
});

Deno.test({
  name:
    "serve: a server's URL elicitation goes to a client that declared it; one that did not gets a clear refusal",
  ignore,
  async fn() {
    await using p = await everythingProject();
    const page = "https://example.com/authorize?state=x";
    const client = await serveClient(p.dir.path, p.env, ["--allow-tools", "mcp__ev__*"]);
    try {
      const sent = await client.callTool({
        name: "mcp__ev__trigger-url-elicitation",
        arguments: { url: page, message: "Open this to authorize." },
      });
      assert.equal(sent.isError, undefined, JSON.stringify(sent));
      assert.match(textOf(sent), /User completed the URL elicitation flow/);
      assert.deepEqual(client.asked.urls, [page]);
      assert.deepEqual(client.asked.elicitations, ["Open this to authorize."]);
      // A page that is no web page never reaches the client.
      const script = await client.callTool({
        name: "mcp__ev__trigger-url-elicitation",
        arguments: { url: "file:///etc/passwd" },
      });
      assert.equal(script.isError, true, JSON.stringify(script));
      assert.match(JSON.stringify(script), /web pages only \(http or https\), not to file: URLs/);
      assert.deepEqual(client.asked.urls, [page]);
    } finally {
      await client.close();
    }
    // A client that shows forms but declared no URL mode: told why, never asked.
    const forms = await serveClient(p.dir.path, p.env, ["--allow-tools", "mcp__ev__*"], {
      elicitation: { form: {} },
    });
    try {
      const refused = await forms.callTool({
        name: "mcp__ev__trigger-url-elicitation",
        arguments: { url: page },
      });
      assert.equal(refused.isError, true, JSON.stringify(refused));
      assert.match(JSON.stringify(refused), /did not declare URL-mode elicitation/);
      assert.equal(forms.asked.elicitations.length, 0);
    } finally {
      await forms.close();
    }
  },
});

Deno.test({
  name:
    "call on a terminal: a server's URL elicitation shows the page and its host, and the person's answer goes back",
  ignore,
  async fn() {
    await using p = await everythingProject();
    let seen = 0;
    await using terminal = openTerminal(
      launcherArgv([
        "call",
        "mcp__ev__trigger-url-elicitation",
        JSON.stringify({ url: "https://example.com/a?b=c", message: "Sign in there." }),
      ]),
      {
        cwd: p.dir.path,
        env: hostEnv({ XDG_STATE_HOME: p.env.XDG_STATE_HOME, XDG_CONFIG_HOME: p.env.XDG_CONFIG_HOME }),
        killAfterMs: 90_000,
        respond: (shown) => {
          if (shown.length === seen || !shown.endsWith("[y/n] ")) return undefined;
          seen = shown.length;
          return "y\n";
        },
      },
    );
    const status = await terminal.status;
    const text = terminal.output();
    assert.equal(status.code, 0, text);
    assert.match(text, /The tool mcp__ev__trigger-url-elicitation asks you to open a page/);
    assert.match(text, /Sign in there\./);
    assert.match(text, /https:\/\/example\.com\/a\?b=c \(host example\.com\)/);
    const answer = JSON.parse(text.split("\n").filter((line) => line.startsWith('{"ok"')).at(-1)!);
    assert.equal(answer.ok, true, text);
    assert.match(JSON.stringify(answer.content), /User completed the URL elicitation flow/);
  },
});

Deno.test({
  name:
    "serve --console: a server's form waits in the console when the client cannot show it; a misfit answer is refused, a fitting one goes back",
  ignore,
  async fn() {
    await using p = await everythingProject();
    await using served = await startConsoleServer(
      ["--allow-tools", "mcp__ev__*"],
      { ...p.env, DENO_DIR: denoDir() },
      join(p.dir.path, "tools.json"),
    );
    const api = await consoleApi(served.origin, served.link);
    // The client shows no form (no elicitation): the server's form waits in the console alone.
    await using connected = await connectHttp(served.mcp, TOKEN, { capabilities: {} });
    const calling = connected.client.callTool({
      name: "mcp__ev__trigger-elicitation-request",
      arguments: {},
    });
    type Form = { id: number; tool: string; message: string; requestedSchema: Record<string, unknown> };
    const waiting = async (): Promise<Form[]> => (await api.get("/api/state")).forms;
    await until(async () => (await waiting()).length === 1, "the server's form waits in the console");
    const [form] = await waiting();
    assert.equal(form.tool, "mcp__ev__trigger-elicitation-request");
    assert.equal(
      form.message,
      'The MCP server "ev" asks, in its tool mcp__ev__trigger-elicitation-request: ' +
        "Please provide inputs for the following fields:",
    );
    assert.ok(Object.keys(form.requestedSchema.properties as object).includes("name"));
    // A value of the wrong type, or a field the form does not have, is refused; the form still waits.
    assert.equal(await api.post("/api/form", { id: form.id, action: "accept", content: { name: 7 } }), 400);
    assert.equal(
      await api.post("/api/form", { id: form.id, action: "accept", content: { extra: "x" } }),
      400,
    );
    assert.equal((await waiting()).length, 1);
    assert.equal(
      await api.post("/api/form", { id: form.id, action: "accept", content: { name: "Ada", check: true } }),
      200,
    );
    const result = await calling;
    assert.equal(result.isError, undefined, JSON.stringify(result));
    assert.match(textOf(result), /- Name: Ada/);
    assert.equal((await waiting()).length, 0);
    // Answered: a second answer finds nothing waiting.
    assert.equal(await api.post("/api/form", { id: form.id, action: "decline" }), 409);
  },
});

/** A server of the test's own whose `page` tool sends the user to a page, then says the page is done. */
function pageServer(): string {
  const sdk = join(MODULES, "@modelcontextprotocol", "sdk", "dist", "esm");
  return `
import { McpServer } from ${JSON.stringify(join(sdk, "server", "mcp.js"))};
import { StdioServerTransport } from ${JSON.stringify(join(sdk, "server", "stdio.js"))};
import { ElicitResultSchema } from ${JSON.stringify(join(sdk, "types.js"))};
const server = new McpServer({ name: "own", version: "1.0.0" });
server.registerTool("page", { description: "Sends the user to a page." }, async (extra) => {
  const result = await extra.sendRequest({
    method: "elicitation/create",
    params: { mode: "url", message: "Sign in.", url: "https://example.com/in", elicitationId: "e-42" },
  }, ElicitResultSchema);
  await server.server.notification({ method: "notifications/elicitation/complete", params: { elicitationId: "e-42" } });
  // Once more for an id toolgate never forwarded: dropped.
  await server.server.notification({ method: "notifications/elicitation/complete", params: { elicitationId: "e-other" } });
  await new Promise((done) => setTimeout(done, 200));
  return { content: [{ type: "text", text: result.action }] };
});
await server.connect(new StdioServerTransport());
`;
}

Deno.test({
  name: "serve: a server's word that its page is done reaches the client that was sent there",
  ignore,
  async fn() {
    await using p = await project({});
    const script = join(p.dir.path, "server.mjs");
    await Deno.writeTextFile(script, pageServer());
    await Deno.writeTextFile(
      join(p.dir.path, "tools.json"),
      JSON.stringify({
        tools: [],
        mcpServers: { own: { command: "node", args: [script], permissions: { read: [MODULES] } } },
      }),
    );
    const trust = await p.run(["trust"]);
    assert.equal(trust.code, 0, trust.stderr);
    const client = await serveClient(p.dir.path, p.env, ["--allow-tools", "mcp__own__page"]);
    const done: string[] = [];
    client.setNotificationHandler(ElicitationCompleteNotificationSchema, (notification) => {
      done.push(notification.params.elicitationId);
    });
    try {
      const result = await client.callTool({ name: "mcp__own__page", arguments: {} });
      assert.equal(result.isError, undefined, JSON.stringify(result));
      assert.equal(textOf(result), "accept");
      assert.deepEqual(client.asked.urls, ["https://example.com/in"]);
      assert.deepEqual(done, ["e-42"]);
    } finally {
      await client.close();
    }
  },
});
