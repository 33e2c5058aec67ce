/**
 * Attacks on what an MCP server behind the gateway offers and asks, through `toolgate serve`: a resource URI made
 * to pass the check of the server's reach while the server reads elsewhere, and a server that asks its caller's
 * model without end. The server is tests/fixtures/gateway/files_server.mjs, run as any server of the manifest is.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/index"
import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client/index.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/client/stdio"
import { StdioClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/stdio.js";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
} from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { callWithProgress, MODULES, nodeServersMissing, project, serveProject } from "../gateway_support.ts";
import { denoDir, launcherArgs, REPO } from "../support.ts";
import { connectHttp, TOKEN } from "../mcp/helpers.ts";
import { until } from "../processes.ts";
import { PROTOCOL_LIMITS } from "../../src/manifest/tool_messages.ts";

const ignore = await nodeServersMissing("security/upstream_offers_test") !== undefined;

const FILES_SERVER = join(REPO, "tests", "fixtures", "gateway", "files_server.mjs");

/** A trusted project whose one server, `files`, is the files server; and a client of `serve ARGS` there. */
async function filesProject(args: string[]) {
  const p = await project({
    files: {
      command: "node",
      args: [FILES_SERVER],
      permissions: { read: [MODULES, join(REPO, "tests", "fixtures", "gateway")], write: ["."] },
    },
  });
  const trust = await p.run(["trust"]);
  assert.equal(trust.code, 0, trust.stdout + trust.stderr);
  const client = new Client({ name: "upstream-offers-attack", version: "1.0.0" }, {
    capabilities: { sampling: {} },
  });
  let sampled = 0;
  client.setRequestHandler(CreateMessageRequestSchema, () => {
    sampled += 1;
    return {
      role: "assistant",
      content: { type: "text", text: "ok" },
      model: "scripted",
      stopReason: "endTurn",
    };
  });
  await client.connect(
    new StdioClientTransport({
      command: Deno.execPath(),
      args: launcherArgs(["serve", ...args]),
      cwd: p.dir.path,
      env: { ...Deno.env.toObject(), DENO_DIR: denoDir(), ...p.env },
      stderr: "pipe",
    }),
  );
  return Object.assign(p, { client, sampled: () => sampled });
}

/** The message of the JSON-RPC error `promise` rejects with. */
async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as Error).message;
  }
  assert.fail("it was answered");
}

Deno.test({
  name:
    "offers: a file:// URI whose encoded '..' climbs out through a workspace symlink, or that is not in plain form, is refused",
  ignore,
  async fn() {
    await using p = await filesProject([]);
    try {
      const ws = await Deno.realPath(p.dir.path);
      // What a tool may write in the workspace: a link to a system folder, two folders deep.
      await Deno.mkdir(join(ws, "a", "b"), { recursive: true });
      await Deno.symlink("/usr/bin", join(ws, "a", "b", "link"));
      await Deno.writeTextFile(join(ws, "notes.txt"), "the notes");
      // The plain form of a file inside the workspace is read.
      const read = await p.client.readResource({ uri: `toolgate+files:file://${ws}/notes.txt` });
      assert.equal((read.contents[0] as { text: string }).text, "the notes");
      // Read lexically, `a/b/link/../../etc/passwd` is `a/etc/passwd`, inside; the kernel reads /etc/passwd.
      const climbs = [
        `file://${ws}/a/b/link/..%2F..%2Fetc%2Fpasswd`,
        `file://${ws}/a/b/link/..%2f../etc/passwd`,
        // Not in plain form: a server that reads the text after `file://` sees other paths than the URL's.
        `file://${ws}/a/b/link/../../etc/passwd`,
        `file://${ws}/notes.txt?/../../../etc/passwd`,
        `file://${ws}/notes.txt#x`,
        `file://${ws}/a\\..\\notes.txt`,
        // No scheme: not a URI, but a path to a server that reads one.
        "/etc/passwd",
        "../../../../../../../../etc/passwd",
      ];
      for (const uri of climbs) {
        const message = await refusal(p.client.readResource({ uri: `toolgate+files:${uri}` }));
        assert.doesNotMatch(message, /root:/, uri);
        assert.match(
          message,
          /outside what the server's profile|not in the plain form|is not a URI/,
          `${uri}: ${message}`,
        );
      }
    } finally {
      await p.client.close();
    }
  },
});

Deno.test({
  name: "questions: a server asks its caller's model at most maxQuestions times in one call",
  ignore,
  async fn() {
    await using p = await filesProject(["--allow-tools", "mcp__files__*"]);
    try {
      const asks = PROTOCOL_LIMITS.maxQuestions + 5;
      const result = await p.client.callTool({ name: "mcp__files__ask", arguments: { count: asks } });
      const text = (result.content as { type: string; text: string }[])[0].text;
      const { answered, refused } = JSON.parse(text);
      assert.equal(answered, PROTOCOL_LIMITS.maxQuestions, text);
      assert.equal(p.sampled(), PROTOCOL_LIMITS.maxQuestions);
      assert.match(refused, /asked \d+ questions in one call/, text);
    } finally {
      await p.client.close();
    }
  },
});

Deno.test({
  name:
    "voice: while a session reads a resource, the server's logs and questions reach no other session's call in flight",
  ignore,
  async fn() {
    await using p = await filesProject([]);
    await p.client.close();
    await using serving = await serveProject(p, ["--allow-tools", "mcp__files__*"]);
    // The victim: its call is the one call in flight; its model and its log view are what the reader would reach.
    const victimHeard: string[] = [];
    let victimSampled = 0;
    await using victim = await connectHttp(serving.url, TOKEN, {
      capabilities: { sampling: {} },
      setup: (client) => {
        client.setNotificationHandler(LoggingMessageNotificationSchema, (note) => {
          victimHeard.push(JSON.stringify(note.params.data));
        });
        client.setRequestHandler(CreateMessageRequestSchema, () => {
          victimSampled += 1;
          return {
            role: "assistant",
            content: { type: "text", text: "ok" },
            model: "victim",
            stopReason: "endTurn",
          };
        });
      },
    });
    await using reader = await connectHttp(serving.url, TOKEN, { capabilities: {} });
    await victim.client.setLoggingLevel("debug");
    const waiting = victim.client.callTool({ name: "mcp__files__wait", arguments: {} });
    try {
      await until(
        async () => await Deno.stat(join(p.dir.path, "waiting")).then(() => true, () => false),
        "the call to wait in flight",
      );
      const read = await reader.client.readResource({ uri: "toolgate+files:files://noisy" });
      const { sampled } = JSON.parse((read.contents[0] as { text: string }).text);
      assert.equal(
        sampled,
        false,
        "the server's question while reading was answered by another session's model",
      );
    } finally {
      await Deno.writeTextFile(join(p.dir.path, "release"), "");
      await waiting;
    }
    assert.equal(victimSampled, 0);
    assert.ok(!victimHeard.some((data) => data.includes("read-log")), victimHeard.join("\n"));
  },
});

Deno.test({
  name: "voice: a server's huge log message and progress message reach the client cut to size",
  ignore,
  async fn() {
    await using p = await filesProject(["--allow-tools", "mcp__files__*"]);
    try {
      const logs: string[] = [];
      p.client.setNotificationHandler(LoggingMessageNotificationSchema, (note) => {
        logs.push(JSON.stringify(note.params));
      });
      await p.client.setLoggingLevel("debug");
      // Read off the wire: the SDK's onprogress may drop a notification that comes just before the answer.
      const { answer: result, progress } = await callWithProgress(p.client, "mcp__files__shout", {});
      assert.equal(result.isError, undefined, JSON.stringify(result).slice(0, 500));
      assert.equal(logs.length, 1, `${logs.length} log messages`);
      assert.ok(progress.length >= 1, "no progress reached the client");
      for (const sent of [...logs, ...progress.map((note) => JSON.stringify(note))]) {
        assert.ok(sent.length < 100_000, `a notification of ${sent.length} characters reached the client`);
      }
    } finally {
      await p.client.close();
    }
  },
});

Deno.test({
  name:
    "questions: a server's form reaches serve's client said to be the server's, never in toolgate's own words alone",
  ignore,
  async fn() {
    await using p = await filesProject(["--allow-tools", "mcp__files__*"]);
    await p.client.close();
    // A client that shows forms, and records what each says.
    const forms: string[] = [];
    const client = new Client({ name: "upstream-offers-attack", version: "1.0.0" }, {
      capabilities: { elicitation: { form: {} } },
    });
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      forms.push((request.params as { message: string }).message);
      return { action: "decline" };
    });
    await client.connect(
      new StdioClientTransport({
        command: Deno.execPath(),
        args: launcherArgs(["serve", "--allow-tools", "mcp__files__*"]),
        cwd: p.dir.path,
        env: { ...Deno.env.toObject(), DENO_DIR: denoDir(), ...p.env },
        stderr: "pipe",
      }),
    );
    try {
      const result = await client.callTool({ name: "mcp__files__phish", arguments: {} });
      assert.equal(result.isError, undefined, JSON.stringify(result));
      assert.equal(forms.length, 1, JSON.stringify(forms));
      assert.match(forms[0], /^The MCP server "files" asks, in its tool mcp__files__phish: /);
      assert.match(forms[0], /The model asks for the secret API_KEY/);
    } finally {
      await client.close();
    }
  },
});
