/**
 * The agent loop's built-in `read_resource`: offered beside the tools when an MCP server of the manifest offers
 * resources, it lists them (no `uri`: every server's pinned resources and templates, each URI as toolgate names
 * it, `toolgate+SERVER:URI`) or reads one, through the executor's offers, so each read is confined to the
 * server's profile, checked against the pins, audited and cleared of secrets as `serve`'s are. Reading needs no
 * approval: it runs no tool and changes nothing.
 *
 * Not here: the offers themselves (run/offer_link.ts, gateway/upstream_offers.ts), `serve`'s handlers
 * (mcp/upstream_offers.ts).
 *
 * @module
 */
import { type Envelope, failure, isRecord, type JsonValue, success } from "../contract.ts";
import { unwrapUri, wrapUri } from "../manifest/offer_names.ts";
import type { OpenAITool } from "../manifest/tool_definitions.ts";
import type { Executor } from "../run/executor.ts";

/** The built-in's name. */
export const READ_RESOURCE = "read_resource";

/** The servers whose resources the loop offers its model. */
export interface LoopResources {
  readonly servers: readonly string[];
}

/**
 * The servers of the executor's manifest that offer resources (the gateway connected), or `undefined` when none
 * does or a tool of the manifest is named `read_resource` already.
 *
 * @example Not run as a doc test: it asks the manifest's MCP servers.
 * ```ts ignore
 * const resources = await loopResources(executor); // { servers: ["ev"] }
 * ```
 */
export async function loopResources(executor: Executor): Promise<LoopResources | undefined> {
  const names = (executor.manifest.servers ?? []).map((server) => server.name);
  if (names.length === 0 || executor.manifest.byName.has(READ_RESOURCE)) return undefined;
  const offered = await Promise.all(
    names.map(async (name) => (await executor.offers.capabilities(name)).resources ? [name] : []),
  );
  const servers = offered.flat();
  return servers.length === 0 ? undefined : { servers };
}

/**
 * The built-in in OpenAI's shape.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readResourceOpenAI } from "./resource_tools.ts";
 * assert.equal(readResourceOpenAI({ servers: ["ev"] }).function.name, "read_resource");
 * ```
 */
export function readResourceOpenAI(resources: LoopResources): OpenAITool {
  return {
    type: "function",
    function: {
      name: READ_RESOURCE,
      description: "Reads a resource of an MCP server (" + resources.servers.join(", ") +
        "). Without `uri`, " +
        "lists them: each resource's `uri` (toolgate+SERVER:URI), name and description, and the URI templates " +
        "a URI may also follow. With `uri`, answers its contents.",
      parameters: {
        type: "object",
        properties: {
          uri: { type: "string", description: "A resource's uri as listed (toolgate+SERVER:URI)." },
        },
        additionalProperties: false,
      },
    },
  };
}

/**
 * A call of `read_resource` (`argsText` its JSON arguments): the list, or the resource read, each URI as toolgate
 * names it; a failure envelope saying why not.
 *
 * @example Not run as a doc test: it reads from the manifest's MCP servers.
 * ```ts ignore
 * const envelope = await answerResourceCall('{"uri":"toolgate+ev:demo://resource/static/document/features.md"}', executor, resources);
 * ```
 */
export async function answerResourceCall(
  argsText: string,
  executor: Executor,
  resources: LoopResources,
): Promise<Envelope> {
  let args: unknown;
  try {
    args = JSON.parse(argsText === "" ? "{}" : argsText);
  } catch {
    return failure("invalid_args", "The arguments are not JSON.", {
      tool: READ_RESOURCE,
      field: "arguments",
    });
  }
  const uri = isRecord(args) ? args.uri : undefined;
  if (uri === undefined) return await listed(executor, resources);
  if (typeof uri !== "string") {
    return failure("invalid_args", "`uri` must be a string.", { tool: READ_RESOURCE, field: "uri" });
  }
  const routed = unwrapUri(uri);
  if (routed === undefined || !resources.servers.includes(routed.server)) {
    return failure(
      "invalid_args",
      `${uri} is not a resource toolgate lists: call ${READ_RESOURCE} without a uri for the list.`,
      { tool: READ_RESOURCE, field: "uri" },
    );
  }
  const read = await executor.offers.read(routed.server, routed.uri);
  if (!read.ok) return { ...read, tool: READ_RESOURCE };
  const contents = isRecord(read.result) && Array.isArray(read.result.contents) ? read.result.contents : [];
  const renamed = contents.map((item) =>
    isRecord(item) && typeof item.uri === "string" ? { ...item, uri: wrapUri(routed.server, item.uri) } : item
  );
  return success({ contents: renamed } as JsonValue, { tool: READ_RESOURCE });
}

/** Every server's pinned resources and templates, named as toolgate names them. */
async function listed(executor: Executor, resources: LoopResources): Promise<Envelope> {
  const all: Record<string, JsonValue>[] = [];
  const templates: Record<string, JsonValue>[] = [];
  for (const server of resources.servers) {
    for (
      const [list, into, key] of [["resources", all, "uri"], [
        "resourceTemplates",
        templates,
        "uriTemplate",
      ]] as const
    ) {
      const envelope = await executor.offers.list(server, list);
      if (!envelope.ok) continue;
      const items = isRecord(envelope.result) && Array.isArray(envelope.result.items)
        ? envelope.result.items
        : [];
      for (const item of items) {
        if (!isRecord(item) || typeof item[key] !== "string") continue;
        into.push({ ...item, [key]: wrapUri(server, item[key] as string) } as Record<string, JsonValue>);
      }
    }
  }
  return success({ resources: all, templates }, { tool: READ_RESOURCE });
}
