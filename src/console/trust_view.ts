/**
 * The console's trust view: the trust state of the manifest (trusted, changed with what changed, never trusted)
 * and of its MCP servers' tool definitions (new, changed field by field, pinned), and the **Trust** action, which
 * records what the person saw exactly as `toolgate trust` does: the manifest's digest, then the servers' pins. The
 * action carries the version of the view the person read: when the manifest or a definition changed since, nothing
 * is recorded and the view is shown again.
 *
 * @module
 */
import { type ManifestLocation, needsTrust } from "../manifest/manifest_location.ts";
import { NOT_COVERED, readManifestContent } from "../manifest/trust.ts";
import { describeChanges, serverLine, toolLine } from "../manifest/trust_changes.ts";
import { readTrustRecord, writeTrustRecord } from "../manifest/trust_record.ts";
import { readPins, type ToolDefinition, writePins } from "../manifest/pins.ts";
import { reviewServers, type ServerReview } from "../commands/trust_review.ts";
import { sha256Hex } from "../base/sha256_hex.ts";

/** What the trust view shows. */
export interface TrustView {
  readonly manifest: {
    readonly path: string;
    /** `needs-none`: named for this run, or toolgate's own belt. */
    readonly state: "trusted" | "changed" | "untrusted" | "needs-none" | "unreadable";
    readonly detail: string;
    /**
     * What changed since it was trusted (every tool and server, when it never was): `trust_changes.ts`'s lines,
     * then what no digest covers.
     */
    readonly changes: readonly string[];
    /** Its tools and MCP servers as trusted now (with the code each names), a line each. */
    readonly tools: readonly string[];
  };
  readonly servers: readonly ServerReview[];
  /** Whether a Trust would record anything. */
  readonly pending: boolean;
  /** Names this very view: the Trust action must carry it. */
  readonly version: string;
}

/** Where the trust view reads and records. */
export interface TrustSource {
  /** The view as it stands now (the servers are listed again). */
  view(): Promise<TrustView>;
  /** Records what the view `version` showed; `stale` when the view changed since (nothing recorded). */
  trust(version: string): Promise<"trusted" | "stale">;
}

/** What the trust view needs of the run. */
export interface TrustInputs {
  /** The manifest the command runs, and why that one. */
  readonly location: ManifestLocation;
  /** Where the tools and servers run (a relative path their command lines name is looked for there too). */
  readonly workspace?: string;
  /** toolgate's state folder (trust records and pins live there); `null`: none (nothing can be recorded). */
  readonly stateDir: string | null;
  /** The manifest's MCP servers, by name. */
  readonly servers: readonly string[];
  /** Lists a server's tool definitions as they are now (the run's connected gateway). */
  readonly definitions: (server: string) => Promise<ToolDefinition[]>;
  readonly now?: () => Date;
}

/**
 * The trust view of a run, and its Trust action.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { trustSource } from "./trust_view.ts";
 * const source = trustSource({
 *   location: { path: "/srv/p/tools.json", source: "tools" },
 *   stateDir: null,
 *   servers: [],
 *   definitions: () => Promise.resolve([]),
 * });
 * assert.equal((await source.view()).manifest.state, "needs-none");
 * ```
 */
export function trustSource(inputs: TrustInputs): TrustSource {
  const read = async () => {
    const { location, stateDir } = inputs;
    const path = location.path;
    // Read for a named manifest too: its servers' pins are keyed by its real path.
    const content = location.source === "belt"
      ? undefined
      : await readManifestContent(path, undefined, { workspace: inputs.workspace });
    let manifest: TrustView["manifest"];
    if (!needsTrust(location)) {
      const detail = location.source === "belt"
        ? "the built-in tool belt: it needs no trust"
        : "named by you for this run (--tools or TOOLGATE_TOOLS): trusted for this run";
      manifest = { path, state: "needs-none", detail, changes: [], tools: [] };
    } else if (content === undefined || stateDir === null) {
      const detail = content === undefined ? "it cannot be read" : "toolgate has no state folder here";
      manifest = { path, state: "unreadable", detail, changes: [], tools: [] };
    } else {
      let record;
      try {
        record = readTrustRecord(stateDir, content.realPath, { strict: false });
      } catch {
        record = undefined;
      }
      // Each tool and server with the code its command line names; what a Trust would record ends with what no
      // digest covers.
      const tools = [
        ...content.summary.tools.map(toolLine),
        ...(content.summary.servers ?? []).map(serverLine),
      ];
      const caveat = `(${NOT_COVERED})`;
      if (record === undefined) {
        const changes = [...describeChanges(undefined, content.summary), caveat];
        manifest = { path, state: "untrusted", detail: "never trusted", changes, tools };
      } else if (record.digest === content.digest) {
        manifest = { path, state: "trusted", detail: `trusted at ${record.trustedAt}`, changes: [], tools };
      } else {
        const changes = [...describeChanges(record.summary, content.summary), caveat];
        const detail = `changed since it was trusted (${record.trustedAt})`;
        manifest = { path, state: "changed", detail, changes, tools };
      }
    }
    const realPath = content?.realPath;
    const before = realPath !== undefined && stateDir !== null ? readPins(stateDir, realPath) : {};
    // Pins are kept beside the manifest's trust record: without one to key them by, servers are shown, not pinned.
    const reviewed = await reviewServers(inputs.servers, before, inputs.definitions);
    const serversPending = realPath !== undefined && stateDir !== null &&
      reviewed.servers.some((server) => server.tools.some((tool) => tool.state !== "pinned"));
    const manifestPending = manifest.state === "changed" || manifest.state === "untrusted";
    const version = await sha256Hex(JSON.stringify([content?.digest ?? null, reviewed.pins]));
    const view: TrustView = {
      manifest,
      servers: reviewed.servers,
      pending: manifestPending || serversPending,
      version,
    };
    return { view, content, pins: reviewed.pins };
  };
  return {
    async view() {
      return (await read()).view;
    },
    async trust(version) {
      const { view, content, pins } = await read();
      if (view.version !== version) return "stale";
      const { stateDir } = inputs;
      if (content === undefined || stateDir === null) return "trusted";
      // As `toolgate trust`: the manifest's content, then the servers' definitions as listed now.
      if (view.manifest.state !== "trusted") {
        writeTrustRecord(
          stateDir,
          content,
          (inputs.now ?? (() => new Date()))(),
        );
      }
      if (inputs.servers.length > 0) writePins(stateDir, content.realPath, pins);
      return "trusted";
    },
  };
}
