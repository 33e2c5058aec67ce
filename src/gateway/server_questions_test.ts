import assert from "node:assert/strict";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/index"
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client/index.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/server/index"
import { Server } from "npm:@modelcontextprotocol/sdk@1.32.2/server/index.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/inMemory"
import { InMemoryTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/inMemory.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import {
  CancelTaskResultSchema,
  CreateTaskResultSchema,
  ElicitResultSchema,
  GetTaskResultSchema,
  type Task,
} from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { loadManifest } from "../manifest/manifest.ts";
import type { ToolSpec } from "../manifest/manifest_types.ts";
import type { SamplingFacts } from "../run/tool_gateway.ts";
import { ServerQuestions, UPSTREAM_CAPABILITIES } from "./server_questions.ts";

/** A tool of the repository's manifest, standing for the gateway tool whose call asks. */
async function someTool(): Promise<ToolSpec> {
  const loaded = await loadManifest(new URL("../../tools.json", import.meta.url).pathname);
  if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
  return loaded.manifest.tools[0];
}

/** A real SDK server (the upstream) connected to a real SDK client whose questions `questions` answers. */
async function connected(questions: ServerQuestions): Promise<Server & AsyncDisposable> {
  const server = new Server({ name: "upstream", version: "1.0.0" }, { capabilities: {} });
  const client = new Client({ name: "toolgate", version: "0.1.0" }, {
    capabilities: UPSTREAM_CAPABILITIES,
    taskStore: questions.tasks,
  });
  questions.install(client);
  const [toServer, toClient] = InMemoryTransport.createLinkedPair();
  await Promise.all([client.connect(toServer), server.connect(toClient)]);
  return Object.assign(server, {
    async [Symbol.asyncDispose]() {
      await client.close();
      await server.close();
    },
  });
}

const FORM = {
  message: "Which branch?",
  requestedSchema: { type: "object" as const, properties: { branch: { type: "string" as const } } },
};

Deno.test("server questions: roots/list answers the workspace alone", async () => {
  await using server = await connected(new ServerQuestions("/srv/project"));
  assert.deepEqual((await server.listRoots()).roots, [{ uri: "file:///srv/project", name: "project" }]);
});

Deno.test("server questions: a form goes to the one call in flight; with none or several it is refused, saying why", async () => {
  const questions = new ServerQuestions("/srv/project");
  await using server = await connected(questions);
  const tool = await someTool();
  const asked: string[] = [];
  const end = questions.begin({
    tool,
    timeoutMs: 60_000,
    questions: {
      user: (question) => {
        asked.push(question.message);
        return Promise.resolve({ action: "accept", content: { branch: "main" } });
      },
    },
  });
  assert.deepEqual(await server.elicitInput(FORM), { action: "accept", content: { branch: "main" } });
  assert.deepEqual(asked, [`The MCP server "get_time" asks, in its tool get_time: Which branch?`]);

  const endOther = questions.begin({ tool, timeoutMs: 60_000 });
  await assert.rejects(server.elicitInput(FORM), /2 calls of toolgate's to the server are in flight/);
  end();
  // The one left cannot ask its user: said in its caller's words.
  await assert.rejects(server.elicitInput(FORM), /this caller of toolgate cannot ask the user/);
  endOther();
  await assert.rejects(server.elicitInput(FORM), /no call of toolgate's to the server is in flight/);
  assert.equal(asked.length, 1);
});

Deno.test("server questions: a question whose call ends before its answer is refused, not left waiting", async () => {
  const questions = new ServerQuestions("/srv/project");
  await using server = await connected(questions);
  const opened = Promise.withResolvers<void>();
  const end = questions.begin({
    tool: await someTool(),
    timeoutMs: 60_000,
    // A handler that never answers, nor heeds its signal.
    questions: {
      user: () => {
        opened.resolve();
        return new Promise(() => {});
      },
    },
  });
  const asking = server.elicitInput(FORM);
  await opened.promise;
  end();
  await assert.rejects(asking, /the call that caused the question ended before it was answered/);
});

Deno.test("server questions: a sampling request goes out scrubbed, its answer comes back scrubbed, and it is told for the audit", async () => {
  const questions = new ServerQuestions("/srv/project");
  await using server = await connected(questions);
  const seen: string[] = [];
  const told: SamplingFacts[] = [];
  const scrub = (text: string) => text.replaceAll("s3cret-value", "[REDACTED]");
  const end = questions.begin({
    tool: await someTool(),
    timeoutMs: 60_000,
    scrub,
    onSampling: (facts) => told.push(facts),
    questions: {
      model: (request) => {
        seen.push(JSON.stringify(request.messages));
        return Promise.resolve({
          role: "assistant",
          content: { type: "text", text: "the token is s3cret-value" },
          model: "m1",
        });
      },
    },
  });
  const answer = await server.createMessage({
    messages: [{ role: "user", content: { type: "text", text: "Repeat s3cret-value." } }],
    maxTokens: 10,
  });
  end();
  assert.deepEqual(answer.content, { type: "text", text: "the token is [REDACTED]" });
  assert.equal(answer.model, "m1");
  assert.match(seen[0], /Repeat \[REDACTED\]\./);
  assert.deepEqual(told.map((facts) => [facts.outcome, facts.model]), [["ok", "m1"]]);
  assert.ok(told[0].argsText.includes("Repeat"));
});

Deno.test("server questions: a sampling request nobody can answer is refused at once and told as unavailable", async () => {
  const questions = new ServerQuestions("/srv/project");
  await using server = await connected(questions);
  const told: SamplingFacts[] = [];
  const end = questions.begin({
    tool: await someTool(),
    timeoutMs: 60_000,
    onSampling: (facts) => told.push(facts),
    questions: { nobody: "toolgate call has no model to ask" },
  });
  await assert.rejects(
    server.createMessage({
      messages: [{ role: "user", content: { type: "text", text: "hi" } }],
      maxTokens: 5,
    }),
    /toolgate call has no model to ask/,
  );
  end();
  assert.deepEqual(told.map((facts) => facts.outcome), ["unavailable"]);
});

Deno.test("server questions: a URL question goes to the caller's page handler, a web page only, and only its action comes back", async () => {
  const questions = new ServerQuestions("/srv/project");
  await using server = await connected(questions);
  const pages: string[] = [];
  const end = questions.begin({
    tool: await someTool(),
    timeoutMs: 60_000,
    scrub: (text) => text.replaceAll("s3cret-value", "[REDACTED]"),
    questions: {
      url: (question) => {
        pages.push(`${question.message} ${question.url} ${question.elicitationId}`);
        // Whatever a handler adds, the server gets the action alone.
        return Promise.resolve({ action: "accept", content: { leaked: "x" } });
      },
    },
  });
  const ask = (url: string) =>
    server.elicitInput({ mode: "url", message: "Sign in s3cret-value", url, elicitationId: "e1" });
  assert.deepEqual(await ask("https://EXAMPLE.com/a?t=s3cret-value"), { action: "accept" });
  assert.deepEqual(pages, ["Sign in [REDACTED] https://example.com/a?t=[REDACTED] e1"]);
  await assert.rejects(
    ask("javascript:alert(1)"),
    /web pages only \(http or https\), not to javascript: URLs/,
  );
  await assert.rejects(ask("https://user:pw@example.com/"), /carries a user name or password/);
  end();
  // A caller with no page handler: refused in its words.
  const endOther = questions.begin({
    tool: await someTool(),
    timeoutMs: 60_000,
    questions: { nobody: "no one here" },
  });
  await assert.rejects(ask("https://example.com/"), /send the user to a page: no one here/);
  endOther();
  assert.equal(pages.length, 1);
});

Deno.test("server questions: a page's completion is told to the caller whose call forwarded it, only while it runs", async () => {
  const questions = new ServerQuestions("/srv/project");
  const told: string[] = [];
  // Nothing forwarded yet: dropped.
  questions.completed("e1");
  await using server = await connected(questions);
  const end = questions.begin({
    tool: await someTool(),
    timeoutMs: 60_000,
    questions: {
      url: () => Promise.resolve({ action: "accept" }),
      urlCompleted: (id) => told.push(id),
    },
  });
  await server.elicitInput({ mode: "url", message: "m", url: "https://example.com/", elicitationId: "e1" });
  questions.completed("e1");
  questions.completed("e2");
  end();
  questions.completed("e1");
  assert.deepEqual(told, ["e1"]);
});

Deno.test("server questions: a form asked as a task is routed and counted as it arrives, its answer polled while its call runs", async () => {
  const questions = new ServerQuestions("/srv/project");
  await using server = await connected(questions);
  const asTask = () =>
    server.request(
      { method: "elicitation/create", params: { ...FORM, task: { ttl: 3_600_000 } } },
      CreateTaskResultSchema,
    );
  const status = async (taskId: string): Promise<Task> =>
    await server.request({ method: "tasks/get", params: { taskId } }, GetTaskResultSchema);
  // Nobody to answer: refused at once, no task made.
  await assert.rejects(asTask(), /no call of toolgate's to the server is in flight/);

  const answered = Promise.withResolvers<{ action: "accept"; content: { branch: string } }>();
  const asked: string[] = [];
  const end = questions.begin({
    tool: await someTool(),
    timeoutMs: 60_000,
    questions: {
      user: (question) => {
        asked.push(question.message);
        return answered.promise;
      },
    },
  });
  const { task } = await asTask();
  // Held no longer than the call may wait, whatever the server asked.
  assert.equal(task.ttl, 60_000);
  assert.equal((await status(task.taskId)).status, "working");
  answered.resolve({ action: "accept", content: { branch: "main" } });
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal((await status(task.taskId)).status, "completed");
  const result = await server.request(
    { method: "tasks/result", params: { taskId: task.taskId } },
    ElicitResultSchema,
  );
  assert.deepEqual(result.content, { branch: "main" });
  assert.deepEqual(asked, [`The MCP server "get_time" asks, in its tool get_time: Which branch?`]);

  // Each task is one of the call's questions: the 21st is refused as any question.
  for (let i = 2; i <= 20; i++) await asTask();
  await assert.rejects(asTask(), /it asked 21 questions in one call; a call may ask 20/);
  // The call's end forgets its tasks: the server finds them no more.
  end();
  await assert.rejects(status(task.taskId), /Task not found/);
});

Deno.test("server questions: a question asked as a task and cancelled by the server stops its wait", async () => {
  const questions = new ServerQuestions("/srv/project");
  await using server = await connected(questions);
  const stopped = Promise.withResolvers<unknown>();
  const end = questions.begin({
    tool: await someTool(),
    timeoutMs: 60_000,
    questions: {
      // A user who never answers: only the task's cancel ends the wait.
      user: (_question, { signal }) => {
        signal.addEventListener("abort", () => stopped.resolve(signal.reason), { once: true });
        return new Promise<never>(() => {});
      },
    },
  });
  try {
    const { task } = await server.request(
      { method: "elicitation/create", params: { ...FORM, task: {} } },
      CreateTaskResultSchema,
    );
    const cancelled = await server.request(
      { method: "tasks/cancel", params: { taskId: task.taskId } },
      CancelTaskResultSchema,
    );
    assert.equal(cancelled.status, "cancelled");
    // Stopped by the cancel itself (not by the call's bound, which would stop it too, a minute later).
    assert.equal((await stopped.promise as Error).message, "the server cancelled the task");
    const after = await server.request(
      { method: "tasks/get", params: { taskId: task.taskId } },
      GetTaskResultSchema,
    );
    assert.equal(after.status, "cancelled");
  } finally {
    end();
  }
});
