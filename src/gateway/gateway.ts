/**
 * The gateway: the manifest's MCP servers as one more source of tools. It starts each server at first use, lists
 * the tools its `allow`/`deny` expose and whose definitions the user pinned (`toolgate trust`), withholds the
 * others, and runs calls, answering with envelopes. The pin is the contract while a server runs: every new listing
 * (after `tools/list_changed`, at each start) is checked against the pins at once, and a call carries only the
 * arguments its pin declares.
 *
 * Not here: one server's life and its voice (`upstream.ts`, `server_voice.ts`), the pins (src/manifest/pins.ts).
 *
 * @module
 */
import { type Envelope, failure, type FailureEnvelope, withWarnings } from "../contract.ts";
import type { ToolSpec } from "../manifest/manifest_types.ts";
import { errorEnvelope, exposed, resultEnvelope, upstreamSpec } from "./gateway_tools.ts";
import {
  definitionOf,
  type PinSet,
  samePin,
  type ToolDefinition,
  type WithheldReason,
} from "../manifest/pins.ts";
import { gatewayName, serverOfName, type ServerSpec } from "../manifest/server_spec.ts";
import { pinSummary } from "../manifest/pin_summary.ts";
import { undeclaredArgument } from "../manifest/declared_arguments.ts";
import { oneLine, Upstream, UpstreamError, type UpstreamOptions } from "./upstream.ts";
// @ts-types="npm:@modelcontextprotocol/sdk@1.32.2/types"
import type { Tool } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import type { GatewayCallOptions, ToolGateway } from "../run/tool_gateway.ts";
import { UpstreamOffers } from "./upstream_offers.ts";
import type { LogLevel } from "../manifest/tool_messages.ts";

/** What a {@linkcode Gateway} needs: the servers, what starts them, and the pins the user trusted. */
export interface GatewayOptions
  extends Omit<UpstreamOptions, "server" | "onToolsChanged" | "onListed" | "onConnected"> {
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
  /** What changed in each withheld tool's definition, in words (`pin_summary.ts`). */
  readonly #changes = new Map<string, string>();
  /** The servers listed at least once: a later listing that changes what is exposed tells the clients. */
  readonly #listedOnce = new Set<string>();
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
      // Every new listing (after each start of the server too, announced or not) is checked against the pins at
      // once: a tool whose definition changed is withheld, and the clients are told when what is exposed changed.
      const onListed = (tools: Tool[]) => {
        const first = !this.#listedOnce.has(server.name);
        this.#listedOnce.add(server.name);
        if (this.#apply(server.name, tools) && !first) options.onToolsChanged?.();
      };
      // A server started again forgot its subscriptions: those still held are asked of it again.
      const onConnected = () => this.offers.reconnected(server.name);
      this.#upstreams.set(
        server.name,
        new Upstream({ ...options, server, onToolsChanged, onListed, onConnected }),
      );
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
    if (reason !== undefined) return withheldEnvelope(name, reason, this.#changes.get(name));
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

  /** A caller asks for log messages from `level` up: every server is asked for the least severe level asked. */
  setLogLevel(level: LogLevel): void {
    for (const upstream of this.#upstreams.values()) upstream.setLogLevel(level);
  }

  /** What changed in a withheld tool's definition, in words (`its input schema (new argument: x) changed ...`). */
  changes(name: string): string | undefined {
    return this.#changes.get(name);
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
    let tools;
    try {
      tools = await this.#upstream(name).listTools();
      this.#problems.delete(name);
    } catch (error) {
      this.#forget(name);
      this.#problems.set(name, error instanceof UpstreamError ? error.message : oneLine(error));
      return;
    }
    // Applied by the upstream's own report of it already; a listing cached from before is applied again.
    this.#apply(name, tools);
  }

  /** The exposed and withheld tools of server `name` dropped. */
  #forget(name: string): void {
    for (const key of [...this.#specs.keys()]) {
      if (this.#specs.get(key)!.upstream?.server === name) this.#specs.delete(key);
    }
    for (const key of [...this.#withheld.keys()]) {
      if (key.startsWith(gatewayName(name, ""))) {
        this.#withheld.delete(key);
        this.#changes.delete(key);
      }
    }
  }

  /** A listing of server `name` checked against its pins: what it exposes, what it withholds. Did that change? */
  #apply(name: string, tools: readonly Tool[]): boolean {
    const server = this.#server(name);
    const before = this.#exposure(name);
    this.#forget(name);
    const pins = this.#options.pins[name] ?? {};
    for (const [index, tool] of tools.entries()) {
      if (!exposed(server, tool.name)) continue;
      const full = gatewayName(name, tool.name);
      const pinned = Object.hasOwn(pins, tool.name) ? pins[tool.name] : undefined;
      const current = definitionOf(tool as unknown as Record<string, unknown>);
      if (!samePin(current, pinned)) {
        this.#withheld.set(full, pinned === undefined ? "new" : "changed");
        const summary = pinSummary(pinned, current);
        if (summary !== undefined) this.#changes.set(full, summary);
        continue;
      }
      const spec = upstreamSpec(server, tool, index);
      if (spec !== undefined) this.#specs.set(full, spec);
    }
    return this.#exposure(name) !== before;
  }

  /** What server `name` exposes and withholds now, as one text (to see whether a listing changed it). */
  #exposure(name: string): string {
    const prefix = gatewayName(name, "");
    return JSON.stringify([
      [...this.#specs.keys()].filter((key) => key.startsWith(prefix)),
      [...this.#withheld].filter(([key]) => key.startsWith(prefix)),
    ]);
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
      if (!this.#matchesPin(current, pinned)) {
        const changes = pinSummary(pinned, definitionOf(current as unknown as Record<string, unknown>));
        return withheldEnvelope(spec.name, pinned === undefined ? "new" : "changed", changes);
      }
      // The pin is the contract: an argument its schema does not declare never reaches the server (the preflight
      // refused it already for every caller that goes through it).
      const undeclared = undeclaredArgument(args, pinned?.inputSchema);
      if (undeclared !== undefined) {
        return failure(
          "invalid_args",
          `Unexpected argument \`${undeclared}\`: the MCP server's tool was trusted without it, so it is not sent.`,
          { tool: spec.name, field: undeclared, expected: "only what the trusted schema declares" },
        );
      }
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
export function withheldEnvelope(name: string, reason: WithheldReason, changes?: string): FailureEnvelope {
  const why = reason === "new"
    ? "its definition has not been trusted yet"
    : changes !== undefined
    ? `${changes.replace(/since it was trusted$/, "since the user trusted it")}`
    : "its definition (description, schemas or annotations) changed since the user trusted it";
  return failure(
    "rejected",
    `The tool ${name} is withheld: ${why}; it was not run. The user can review it with \`toolgate trust\`.`,
    { tool: name, retryable: false },
  );
}
