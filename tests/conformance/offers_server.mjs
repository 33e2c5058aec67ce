/**
 * The upstream MCP server of the gateway's conformance run (gateway_conformance_test.ts): a stdio server on the
 * official SDK (1.x, from the gateway tests' install under tests/.cache/gateway) offering exactly the resources,
 * resource template, prompts and completions the conformance suite's scenarios name (its reference server's
 * `test://static-text`, `test_simple_prompt`, ...), so that the suite meets them through `toolgate serve --server`.
 * A user's server in every other way: a manifest's `mcpServers` entry, confined and pinned by trust.
 *
 * @module
 */
// The SDK the gateway tests install (tests/.cache/gateway), found from here at run time.
const sdk = new URL("../.cache/gateway/node_modules/@modelcontextprotocol/sdk/dist/esm/", import.meta.url);
const { Server } = await import(new URL("server/index.js", sdk).href);
const { StdioServerTransport } = await import(new URL("server/stdio.js", sdk).href);
const {
  CompleteRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} = await import(new URL("types.js", sdk).href);

/** A 1x1 PNG. */
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

const RESOURCES = [
  {
    uri: "test://static-text",
    name: "static-text",
    description: "A static text resource.",
    mimeType: "text/plain",
  },
  {
    uri: "test://static-binary",
    name: "static-binary",
    description: "A static binary resource (a PNG).",
    mimeType: "image/png",
  },
  {
    uri: "test://watched-resource",
    name: "watched-resource",
    description: "A resource a client may subscribe to.",
    mimeType: "text/plain",
  },
];

const TEMPLATE = /^test:\/\/template\/([^/]+)\/data$/;

const PROMPTS = [
  { name: "test_simple_prompt", description: "A simple prompt without arguments." },
  {
    name: "test_prompt_with_arguments",
    description: "A prompt with two required arguments.",
    arguments: [
      { name: "arg1", description: "First test argument", required: true },
      { name: "arg2", description: "Second test argument", required: true },
    ],
  },
  {
    name: "test_prompt_with_embedded_resource",
    description: "A prompt that embeds a resource.",
    arguments: [{ name: "resourceUri", description: "URI of the resource to embed", required: true }],
  },
  { name: "test_prompt_with_image", description: "A prompt with an image." },
  { name: "test_input_required_result_prompt", description: "A prompt that asks the user for its context." },
];

const server = new Server(
  { name: "conformance-offers", version: "1.0.0" },
  { capabilities: { resources: { subscribe: true }, prompts: {}, completions: {} } },
);

server.setRequestHandler(ListResourcesRequestSchema, () => ({ resources: RESOURCES }));
server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
  resourceTemplates: [{
    uriTemplate: "test://template/{id}/data",
    name: "template-data",
    description: "Data by id.",
    mimeType: "application/json",
  }],
}));
server.setRequestHandler(ReadResourceRequestSchema, (request) => {
  const { uri } = request.params;
  if (uri === "test://static-text") {
    return {
      contents: [{ uri, mimeType: "text/plain", text: "This is the content of the static text resource." }],
    };
  }
  if (uri === "test://static-binary") return { contents: [{ uri, mimeType: "image/png", blob: PNG }] };
  if (uri === "test://watched-resource") {
    return { contents: [{ uri, mimeType: "text/plain", text: "watched" }] };
  }
  const templated = TEMPLATE.exec(uri);
  if (templated) {
    const id = decodeURIComponent(templated[1]);
    const text = JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` });
    return { contents: [{ uri, mimeType: "application/json", text }] };
  }
  throw new McpError(ErrorCode.InvalidParams, `Resource ${uri} not found`, { uri });
});
server.setRequestHandler(SubscribeRequestSchema, () => ({}));
server.setRequestHandler(UnsubscribeRequestSchema, () => ({}));

server.setRequestHandler(ListPromptsRequestSchema, () => ({ prompts: PROMPTS }));
server.setRequestHandler(GetPromptRequestSchema, async (request) => {
  const args = request.params.arguments ?? {};
  const said = (text) => ({ role: "user", content: { type: "text", text } });
  switch (request.params.name) {
    case "test_simple_prompt":
      return { messages: [said("This is a simple prompt for testing.")] };
    case "test_prompt_with_arguments":
      return { messages: [said(`Prompt with arguments: arg1='${args.arg1}', arg2='${args.arg2}'`)] };
    case "test_prompt_with_embedded_resource":
      return {
        messages: [
          {
            role: "user",
            content: {
              type: "resource",
              resource: {
                uri: args.resourceUri,
                mimeType: "text/plain",
                text: "Embedded resource content for testing.",
              },
            },
          },
          said("Please process the embedded resource above."),
        ],
      };
    case "test_prompt_with_image":
      return {
        messages: [
          { role: "user", content: { type: "image", data: PNG, mimeType: "image/png" } },
          said("Please analyze the image above."),
        ],
      };
    case "test_input_required_result_prompt": {
      // A question to the user while the prompt is got (the 2025-11-25 way: an elicitation request).
      const answer = await server.elicitInput({
        message: "What context should the prompt use?",
        requestedSchema: {
          type: "object",
          properties: { context: { type: "string" } },
          required: ["context"],
        },
      });
      const context = answer.action === "accept" ? String(answer.content?.context ?? "") : "(none)";
      return { messages: [said(`Use this context: ${context}`)] };
    }
  }
  throw new McpError(ErrorCode.InvalidParams, `Prompt ${request.params.name} not found`);
});

const CITIES = ["paris", "park", "party", "test", "testing"];
server.setRequestHandler(CompleteRequestSchema, (request) => {
  const values = CITIES.filter((value) => value.startsWith(request.params.argument.value));
  return { completion: { values, total: values.length, hasMore: false } };
});

await server.connect(new StdioServerTransport());
