import assert from "node:assert/strict";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import { McpError } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { type Envelope, failure, type JsonValue, success } from "../contract.ts";
import type { PromptAsking, ServerOffers } from "../run/offer_link.ts";
import { OfferRequests } from "./offer_requests.ts";

/** What the requests asked of the offers: each as `[method, server, id]`, and the asking a prompt was given. */
function offersOf(answers: { read?: Envelope } = {}) {
  const asked: unknown[][] = [];
  let asking: PromptAsking | undefined;
  const offers: ServerOffers = {
    capabilities: () =>
      Promise.resolve({ resources: true, subscribe: false, prompts: true, completions: true }),
    list: (server, list) => {
      const items = list === "resources"
        ? [{ uri: "demo://a", name: "a" }]
        : list === "resourceTemplates"
        ? [{ uriTemplate: "demo://t/{id}", name: "t" }]
        : [{ name: "greet", description: "Greets." }];
      asked.push(["list", server, list]);
      return Promise.resolve(success({ items } as unknown as JsonValue));
    },
    read: (server, uri) => {
      asked.push(["read", server, uri]);
      return Promise.resolve(
        answers.read ?? success({ contents: [{ uri, text: "x" }] } as unknown as JsonValue),
      );
    },
    getPrompt: (server, name, _args, _signal, given) => {
      asked.push(["getPrompt", server, name]);
      asking = given;
      const resource = { uri: "demo://a", text: "x" };
      return Promise.resolve(
        success(
          { messages: [{ role: "user", content: { type: "resource", resource } }] } as unknown as JsonValue,
        ),
      );
    },
    complete: (server, params) => {
      asked.push(["complete", server, JSON.stringify(params.ref)]);
      return Promise.resolve(success({ completion: { values: [] } }));
    },
    subscribe: () => Promise.resolve(success({})),
    unsubscribe: () => Promise.resolve(success({})),
    changes: () => () => {},
    resourceName: () => undefined,
  };
  return { offers, asked, asking: () => asking };
}

Deno.test("offer requests: beside other servers, names and URIs are toolgate's, each routed to its server", async () => {
  const { offers, asked, asking } = offersOf();
  const requests = new OfferRequests({ offers, servers: ["ev", "fs"] });
  const { resources } = await requests.listResources();
  assert.deepEqual(resources.map((r) => r.uri), ["toolgate+ev:demo://a", "toolgate+fs:demo://a"]);
  const { resourceTemplates } = await requests.listResourceTemplates();
  assert.equal(resourceTemplates[0].uriTemplate, "toolgate+ev:demo://t/{id}");
  const { prompts } = await requests.listPrompts();
  assert.deepEqual(prompts.map((p) => p.name), ["mcp__ev__greet", "mcp__fs__greet"]);

  const read = await requests.read("toolgate+fs:demo://a");
  assert.deepEqual(read.contents, [{ uri: "toolgate+fs:demo://a", text: "x" }]);
  const form: PromptAsking = { questions: { nobody: "nobody here" } };
  const got = await requests.getPrompt("mcp__ev__greet", undefined, undefined, form);
  assert.equal(got.messages[0].content.resource.uri, "toolgate+ev:demo://a");
  assert.equal(asking(), form);
  await requests.complete({ ref: { type: "ref/resource", uri: "toolgate+ev:demo://t/{id}" } });
  assert.deepEqual(asked.filter(([method]) => method !== "list"), [
    ["read", "fs", "demo://a"],
    ["getPrompt", "ev", "greet"],
    ["complete", "ev", JSON.stringify({ type: "ref/resource", uri: "demo://t/{id}" })],
  ]);
});

Deno.test("offer requests: with one server by its own names, every name and URI is the server's", async () => {
  const { offers, asked } = offersOf();
  const requests = new OfferRequests({ offers, servers: ["ev", "fs"], own: "ev" });
  assert.deepEqual((await requests.listResources()).resources, [{ uri: "demo://a", name: "a" }]);
  assert.deepEqual((await requests.listPrompts()).prompts, [{ name: "greet", description: "Greets." }]);
  assert.deepEqual((await requests.read("demo://a")).contents, [{ uri: "demo://a", text: "x" }]);
  assert.deepEqual(asked.at(-1), ["read", "ev", "demo://a"]);
});

Deno.test("offer requests: a resource not found is -32602 with the URI asked in data (SEP-2164)", async () => {
  const cases: [Envelope, number, unknown][] = [
    // The server's -32602 without data, and the -32002 of revisions before SEP-2164: -32602, the client's URI.
    [
      failure("execution_error", "Resource demo://gone not found", { metadata: { mcp_code: -32602 } }),
      -32602,
      {
        uri: "toolgate+ev:demo://gone",
      },
    ],
    [failure("execution_error", "Resource not found", { metadata: { mcp_code: -32002 } }), -32602, {
      uri: "toolgate+ev:demo://gone",
    }],
    // Another error keeps its code, and no data.
    [failure("execution_error", "boom", { metadata: { mcp_code: -32603 } }), -32603, undefined],
  ];
  for (const [answer, code, data] of cases) {
    const { offers } = offersOf({ read: answer });
    const error = await new OfferRequests({ offers, servers: ["ev"] }).read("toolgate+ev:demo://gone").then(
      () => undefined,
      (error) => error as McpError,
    );
    assert.ok(error instanceof McpError);
    assert.equal(error.code, code);
    assert.deepEqual(error.data, data);
  }
  const unrouted = await new OfferRequests({ offers: offersOf().offers, servers: ["ev"] }).read(
    "toolgate+nope:demo://a",
  ).then(() => undefined, (error) => error as McpError);
  assert.equal(unrouted?.code, -32602);
  assert.deepEqual(unrouted?.data, { uri: "toolgate+nope:demo://a" });
});
