/**
 * The gateway: the manifest's MCP servers as one more source of tools. It starts each server at first use, lists
 * the tools its `allow`/`deny` expose and whose definitions the user pinned (`toolgate trust`), withholds the
 * others, and runs calls, answering with envelopes.
 *
 * @module
 */
import { type Envelope, failure, type FailureEnvelope, withWarnings } from "../contract.ts";
import type { ToolSpec } from "../manifest/manifest.ts";
import { errorEnvelope, exposed, resultEnvelope, upstreamSpec } from "./gateway_tools.ts";
import {
  definitionOf,
  type PinSet,
  samePin,
  type ToolDefinition,
  type WithheldReason,
} from "../manifest/pins.ts";
import { gatewayName, serverOfName, type ServerSpec } from "../manifest/server_spec.ts";
import { oneLine, Upstream, UpstreamError, type UpstreamOptions } from "./upstream.ts";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import type { Tool } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import type { GatewayCallOptions, ToolGateway } from "../run/tool_gateway.ts";
import { UpstreamOffers } from "./upstream_offers.ts";

/** What a {@linkcode Gateway} needs: the servers, what starts them, and the pins the user trusted. */
export interface GatewayOptions extends Omit<UpstreamOptions, "server" | "onToolsChanged"> {
  readonly servers: readonly ServerSpec[];
  /** The definitions the user trusted, by server and tool. */
  readonly pins: PinSet;
  /** Told when a server said its tools changed, once they are listed again and checked against the pins. */
  readonly onToolsChanged?: () => void;
}

/**
 * The manifest's MCP servers, connected on demand.
 *
 * @example Not run as a doc test: it starts the manifest's MCP servers (the gateway tests run them).
 * ```ts ignore
 * const gateway = new Gateway({ servers: manifest.servers, pins, launcher, env, workspace, secret, graceMs });
 * await gateway.refresh(["fs"]);
 * gateway.tools.map((tool) => tool.name); // ["mcp__fs__read_file", ...]
 * await gateway.close();
 * ```
 */
export class Gateway implements ToolGateway {
  readonly #options: GatewayOptions;
  readonly #upstreams = new Map<string, Upstream>();
  readonly #specs = new Map<string, ToolSpec>();
  readonly #withheld = new Map<string, WithheldReason>();
  readonly #problems = new Map<string, string>();
  /** Each listed tool's verdict against its pin (see #matchesPin). */
  readonly #checked = new WeakMap<Tool, boolean>();
  /** The servers' resources, prompts and completions, against their pins (upstream_offers.ts). */
  readonly offers: UpstreamOffers;

  /** A gateway over `options.servers`; no server starts until its tools are first needed. */
  constructor(options: GatewayOptions) {
    this.#options = options;
    for (const server of options.servers) {
      // A server that says its tools changed is listed again at once: a tool it added is withheld (a call to it
      // answers `rejected`, naming `toolgate trust`) until the user trusts it; a changed one is refused at its call.
      // Its clients are told once the new listing is checked (`serve` passes `tools/list_changed` on).
      const onToolsChanged = () => void this.#list(server.name).then(() => options.onToolsChanged?.());
      this.#upstreams.set(server.name, new Upstream({ ...options, server, onToolsChanged }));
    }
    this.offers = new UpstreamOffers({ ...options, upstream: (name) => this.#upstream(name) });
  }

  /** The servers, by name. */
  get servers(): readonly ServerSpec[] {
    return this.#options.servers;
  }

  /** The exposed tools of the servers listed so far, in server order. */
  get tools(): ToolSpec[] {
    return [...this.#specs.values()];
  }

  /** Why a server could not be listed, by server: one line each. */
  get problems(): ReadonlyMap<string, string> {
    return this.#problems;
  }

  /** The tools withheld (no pin, or a changed definition), by `mcp__SERVER__TOOL` name. */
  get withheld(): ReadonlyMap<string, WithheldReason> {
    return this.#withheld;
  }

  /**
   * The answer to a call of `name` when it cannot run: withheld (`rejected`, naming `toolgate trust`), or its
   * server could not be listed (`unavailable`); `undefined` when nothing stands in its way.
   */
  refusal(name: string): FailureEnvelope | undefined {
    const reason = this.#withheld.get(name);
    if (reason !== undefined) return withheldEnvelope(name, reason);
    const server = serverOfName(name);
    const problem = server === undefined ? undefined : this.#problems.get(server);
    if (problem === undefined) return undefined;
    // A reason that ends its sentence already gets no second full stop.
    const said = /[.!?]$/.test(problem) ? problem : `${problem}.`;
    return failure("unavailable", `The MCP server ${JSON.stringify(server)} is not available: ${said}`, {
      tool: name,
      retryable: false,
    });
  }

  /** The running server's pid (its sandbox's first process), for tests and diagnostics. */
  pid(server: string): number | undefined {
    return this.#upstreams.get(server)?.pid;
  }

  /** Starts (if need be) and lists the named servers (default all); a server that fails says why in `problems`. */
  async refresh(names?: Iterable<string>): Promise<void> {
    const wanted = names === undefined ? [...this.#upstreams.keys()] : [...new Set(names)];
    await Promise.all(wanted.map((name) => this.#list(name)));
  }

  /**
   * The server's exposed tools' current definitions (by `allow`/`deny`, pinned or not), then its prompts',
   * resources' and resource templates' (upstream_offers.ts): what `trust` pins.
   */
  async definitions(server: string): Promise<ToolDefinition[]> {
    const upstream = this.#upstream(server);
    const spec = this.#server(server);
    const tools = await upstream.listTools();
    return [
      ...tools.filter((tool) => exposed(spec, tool.name)).map((tool) =>
        definitionOf(tool as unknown as Record<string, unknown>)
      ),
      ...await this.offers.definitions(server),
    ];
  }

  async #list(name: string): Promise<void> {
    const server = this.#server(name);
    for (const key of [...this.#specs.keys()]) {
      if (this.#specs.get(key)!.upstream?.server === name) this.#specs.delete(key);
    }
    for (const key of [...this.#withheld.keys()]) {
      if (key.startsWith(gatewayName(name, ""))) this.#withheld.delete(key);
    }
    let tools;
    try {
      tools = await this.#upstream(name).listTools();
      this.#problems.delete(name);
    } catch (error) {
      this.#problems.set(name, error instanceof UpstreamError ? error.message : oneLine(error));
      return;
    }
    const pins = this.#options.pins[name] ?? {};
    for (const [index, tool] of tools.entries()) {
      if (!exposed(server, tool.name)) continue;
      const full = gatewayName(name, tool.name);
      const pinned = Object.hasOwn(pins, tool.name) ? pins[tool.name] : undefined;
      if (!samePin(definitionOf(tool as unknown as Record<string, unknown>), pinned)) {
        this.#withheld.set(full, pinned === undefined ? "new" : "changed");
        continue;
      }
      const spec = upstreamSpec(server, tool, index);
      if (spec !== undefined) this.#specs.set(full, spec);
    }
  }

  #server(name: string): ServerSpec {
    const server = this.#options.servers.find((s) => s.name === name);
    if (server === undefined) throw new UpstreamError(`no MCP server is named ${JSON.stringify(name)}`);
    return server;
  }

  #upstream(name: string): Upstream {
    this.#server(name);
    return this.#upstreams.get(name)!;
  }

  /**
   * Runs one upstream call. The tool's current definition is checked against its pin first (a server may change
   * its tools while it runs, or after a restart): a changed one is `rejected` until the user trusts it again.
   */
  async call(
    spec: ToolSpec,
    args: Record<string, unknown>,
    options: GatewayCallOptions,
  ): Promise<Envelope> {
    const { server, tool } = spec.upstream!;
    const upstream = this.#upstream(server);
    try {
      const tools = await upstream.listTools();
      const current = tools.find((t) => t.name === tool);
      const pinned = this.#options.pins[server]?.[tool];
      if (current === undefined) {
        return failure("tool_not_found", `The MCP server ${JSON.stringify(server)} no longer has the tool.`, {
          tool: spec.name,
        });
      }
      if (!this.#matchesPin(current, pinned)) return withheldEnvelope(spec.name, "changed");
      const mark = upstream.egressMark;
      const result = await upstream.callTool(tool, args, {
        ...options,
        asking: {
          tool: spec,
          questions: options.questions,
          scrub: options.scrub,
          onSampling: options.onSampling,
        },
      });
      options.onEgress?.(upstream.egressSince(mark));
      const refused = upstream.refusedSince(mark);
      const answer = resultEnvelope(spec.name, result);
      return refused.length === 0 ? answer : withWarnings(answer, refused);
    } catch (error) {
      return errorEnvelope(spec.name, server, error, options.signal, options.timeoutMs);
    }
  }

  /**
   * Is the listed tool's definition its pin? Known once per listing: a listing's tool objects are new after each
   * start and each `tools/list_changed`, and the pins are fixed for the gateway's life, so a warm call does not
   * rebuild and compare the canonical JSON of its schemas.
   */
  #matchesPin(tool: Tool, pinned: ToolDefinition | undefined): boolean {
    let same = this.#checked.get(tool);
    if (same === undefined) {
      same = samePin(definitionOf(tool as unknown as Record<string, unknown>), pinned);
      this.#checked.set(tool, same);
    }
    return same;
  }

  /** Ends every server's tree. */
  async close(): Promise<void> {
    await Promise.all([...this.#upstreams.values()].map((upstream) => upstream.close()));
  }
}

/**
 * The answer to a call of a withheld tool: `rejected`, naming `toolgate trust`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { withheldEnvelope } from "./gateway.ts";
 * assert.equal(withheldEnvelope("mcp__fs__read", "new").kind, "rejected");
 * ```
 */
export function withheldEnvelope(name: string, reason: WithheldReason): FailureEnvelope {
  const why = reason === "new"
    ? "its definition has not been trusted yet"
    : "its definition (description, schemas or annotations) changed since the user trusted it";
  return failure(
    "rejected",
    `The tool ${name} is withheld: ${why}; it was not run. The user can review it with \`toolgate trust\`.`,
    { tool: name, retryable: false },
  );
}
