/**
 * `serve`'s reload of its manifest: it watches the manifest file and its trust record, and on a change (settled for
 * a moment) reads the manifest once and decides. Content the user has not trusted is not served (one line naming
 * `toolgate trust`); trusted content whose own tools need nothing beyond what this process was granted and read at
 * start, with the same MCP servers, takes the old tools' place (the clients of both eras are told the list
 * changed); trusted content that needs more is one line saying to restart `serve`. Each line once per content.
 *
 * The trust check and the load use the same bytes: the content is read once, its digest compared with the record,
 * and those very bytes validated (a file swapped between the check and the load is never the one served). The
 * manifest must still resolve to the file `serve` started with (a link turned elsewhere is refused).
 *
 * Not here: what "beyond" means (`../launcher/manifest_fit.ts`), the swap of the tools
 * (`Executor.replaceOwnTools`), the trust record (`../manifest/trust_record.ts`).
 *
 * @module
 */
import { basename, dirname } from "../base/paths.ts";
import type { Io, ParsedArgs } from "./cli.ts";
import type { Executor } from "../run/executor.ts";
import type { Manifest, ToolSpec } from "../manifest/manifest_types.ts";
import type { ManifestLocation } from "../manifest/manifest_location.ts";
import { type ManifestContent, readManifestContent } from "../manifest/trust.ts";
import { readTrustRecord, trustDir } from "../manifest/trust_record.ts";
import { keepDigests, readKnownDigests } from "../manifest/trust_digests.ts";
import type { KnownDigests } from "../manifest/file_pins.ts";
import { ensurePrivateDir } from "../state/private_dir.ts";
import { configRoot, stateRoot } from "../state/state.ts";
import { beyondGrants } from "../launcher/manifest_fit.ts";
import { approvalSettings } from "./approval_options.ts";
import { loadTrusted } from "./load.ts";

/** How long a change must have settled before the manifest is read again (an editor writes in several steps). */
export const RELOAD_SETTLE_MS = 300;

/** What one look at the manifest decided: nothing changed, or the line that says what was done. */
export type ReloadOutcome =
  | { readonly kind: "unchanged" }
  | { readonly kind: "untrusted" | "refused" | "swapped"; readonly line: string };

/** What a {@linkcode ManifestReload} watches and swaps. */
export interface ManifestReloadOptions {
  readonly parsed: ParsedArgs;
  readonly io: Io;
  /** Where the manifest is, as the command located it. */
  readonly location: ManifestLocation;
  /** The workspace (the tools' cwd). */
  readonly workspace: string;
  /** The manifest served now (as `narrow` made it), whose variables and secrets were read at start. */
  readonly manifest: Manifest;
  /** The content the trust gate pinned at start, when it checked one. */
  readonly content?: ManifestContent;
  readonly executor: Executor;
  /**
   * Told once the new tools are in place, with the names of those added, changed or removed (`serve` forgets the
   * approvals given to them "always", and tells its clients).
   */
  readonly toolsChanged: (names: readonly string[]) => void;
  /** What `serve` serves of a manifest (`--server NAME`: that server's tools only). */
  readonly narrow: (manifest: Manifest) => Manifest;
  /** The calls run on a worker pool, whose workers load their own manifest. */
  readonly pooled: boolean;
}

/** Why `path` cannot be read (` (REASON)`), or nothing when it can be now. */
function unreadable(path: string): string {
  try {
    Deno.readFileSync(Deno.realPathSync(path));
    return "";
  } catch (error) {
    return ` (${error instanceof Error ? error.message : String(error)})`;
  }
}

/** A tool as compared: everything it is but its place in the manifest, and its program's bytes as trusted. */
function shape(tool: ToolSpec, manifest: Manifest): string {
  const { index: _, ...rest } = tool;
  return JSON.stringify({ ...rest, programDigest: manifest.pinned?.get(tool.program)?.digest });
}

/** What changed between two lists of own tools: `added a; changed b; removed c` (or `undefined`), and their names. */
function toolChanges(before: Manifest, after: Manifest): { said?: string; names: string[] } {
  const own = (manifest: Manifest) => manifest.tools.filter((tool) => tool.upstream === undefined);
  const old = new Map(own(before).map((tool) => [tool.name, shape(tool, before)]));
  const now = new Map(own(after).map((tool) => [tool.name, shape(tool, after)]));
  const added = [...now.keys()].filter((name) => !old.has(name));
  const removed = [...old.keys()].filter((name) => !now.has(name));
  const changed = [...now.keys()].filter((name) => old.has(name) && old.get(name) !== now.get(name));
  const parts = [
    added.length > 0 ? `added ${added.join(", ")}` : "",
    changed.length > 0 ? `changed ${changed.join(", ")}` : "",
    removed.length > 0 ? `removed ${removed.join(", ")}` : "",
  ].filter((part) => part !== "");
  return {
    said: parts.length === 0 ? undefined : parts.join("; "),
    names: [...added, ...changed, ...removed],
  };
}

/**
 * The MCP servers' part of a manifest, as compared: their specs, and what their trust pinned (their command lines'
 * code and profiles). A running server keeps what it started with: a change to it waits for a restart.
 */
function serversPart(manifest: Manifest, content: ManifestContent | undefined): string {
  const servers = content?.summary.servers ?? [];
  const roots = servers.flatMap((server) => server.code.map((root) => root.path));
  const code = Object.entries(content?.summary.code ?? {}).filter(([path]) =>
    roots.some((root) => path === root || (root.endsWith("/") && path.startsWith(root)))
  );
  return JSON.stringify({ specs: manifest.servers ?? [], servers, code });
}

/**
 * Watches `serve`'s manifest and takes a re-trusted one in place where it can (see the module's doc).
 *
 * @example Not run as a doc test: it needs a running `serve` (tests/mcp/reload_test.ts runs one).
 * ```ts ignore
 * const reload = new ManifestReload({ parsed, io, location, workspace, manifest, executor, toolsChanged, narrow, pooled: false });
 * reload.watch();
 * // ... serve ...
 * reload.close();
 * ```
 */
export class ManifestReload {
  readonly #options: ManifestReloadOptions;
  /** The manifest served now: the start's, then each one taken in place. */
  #served: Manifest;
  /** The digest of the content served now, when known. */
  #digest?: string;
  /** The real path the manifest had at start: a later one elsewhere is refused. */
  #realPath?: string;
  /** The MCP servers' part at start. */
  #servers?: string;
  /** The last line said: the same one is not said again for the next event. */
  #said?: string;
  #watcher?: Deno.FsWatcher;
  #timer?: ReturnType<typeof setTimeout>;
  /** The looks, one after another. */
  #chain: Promise<unknown> = Promise.resolve();
  #closed = false;

  constructor(options: ManifestReloadOptions) {
    this.#options = options;
    this.#served = options.manifest;
    this.#digest = options.content?.digest;
    this.#realPath = options.content?.realPath;
    if (options.content !== undefined) this.#servers = serversPart(options.manifest, options.content);
  }

  /** The state folder: where the trust records are. */
  #state(): string {
    return stateRoot(this.#options.io.env);
  }

  /** What the start serves, as a later look compares it (read now when the gate did not read it). */
  async #baseline(): Promise<void> {
    if (this.#realPath !== undefined) return;
    const { location, workspace, manifest } = this.#options;
    const content = await readManifestContent(location.path, undefined, { workspace });
    this.#realPath = content?.realPath;
    // Named for the run, it was read moments ago: as it is now is what is served (a change comes as an event).
    this.#digest = content?.digest;
    this.#servers = serversPart(manifest, content);
  }

  /**
   * Starts watching the manifest's folder and the trust records (each change looked at once it settled), saying
   * each outcome's line on stderr. A folder that cannot be watched is one line: the manifest then changes at a
   * restart only.
   */
  watch(): void {
    const { location, io } = this.#options;
    void this.#chain.then(() => this.#baseline()).then(async () => {
      if (this.#closed) return;
      const names = new Set([basename(location.path), ...this.#realPath ? [basename(this.#realPath)] : []]);
      const folders = new Set([dirname(location.path), ...this.#realPath ? [dirname(this.#realPath)] : []]);
      const records = trustDir(this.#state());
      try {
        ensurePrivateDir(records, dirname(this.#state()));
        this.#watcher = Deno.watchFs([...folders, records], { recursive: false });
      } catch (error) {
        await io.stderr(
          `toolgate: cannot watch ${location.path} for changes (${(error as Error).message}): a manifest ` +
            "trusted again is served once serve restarts\n",
        );
        return;
      }
      for await (const event of this.#watcher) {
        if (event.paths.some((path) => names.has(basename(path)) || dirname(path) === records)) this.#soon();
      }
    }).catch(async (error) => {
      if (!this.#closed) await io.stderr(`toolgate: watching ${location.path} stopped: ${error.message}\n`);
    });
  }

  /** A look once the changes settled. */
  #soon(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#chain = this.#chain.then(async () => {
        if (this.#closed) return;
        const outcome = await this.check();
        if (outcome.kind === "unchanged" || outcome.line === this.#said) return;
        this.#said = outcome.line;
        await this.#options.io.stderr(outcome.line + "\n");
      }).catch(async (error) => {
        // The tools served stay as they were; the operator hears why nothing changed.
        await this.#options.io.stderr(
          `toolgate: looking at ${this.#options.location.path} again failed: ${(error as Error).message}\n`,
        );
      });
    }, RELOAD_SETTLE_MS);
  }

  /** Stops watching (a look under way ends first). */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    try {
      this.#watcher?.close();
    } catch {
      // Closed already.
    }
    await this.#chain;
  }

  /**
   * Looks at the manifest once: reads it, checks its trust, and takes it in place when it fits (the clients are
   * told); the outcome's line says what was done.
   */
  async check(): Promise<ReloadOutcome> {
    await this.#baseline();
    const { location, workspace, io, parsed } = this.#options;
    const path = location.path;
    const keeps = "still serving the tools it had";
    // Files still as the last trusted read found them (same identity and times) are not read again: a process
    // that keeps rewriting the manifest costs a stat of each file, as every command's trust check does.
    let known: KnownDigests = new Map();
    const content = await readManifestContent(path, (realPath) => {
      try {
        known = readKnownDigests(this.#state(), realPath);
      } catch {
        // Unreadable: every file is read.
      }
      return known;
    }, { workspace });
    if (content === undefined) {
      return {
        kind: "refused",
        line: `toolgate: cannot read the manifest ${path}${unreadable(path)}: ${keeps}`,
      };
    }
    if (content.digest === this.#digest) return { kind: "unchanged" };
    if (this.#realPath !== undefined && content.realPath !== this.#realPath) {
      return {
        kind: "refused",
        line:
          `toolgate: ${path} now resolves to ${content.realPath}, not the ${this.#realPath} serve started ` +
          `with: ${keeps}; restart serve to serve it`,
      };
    }
    let trusted: boolean;
    try {
      trusted = readTrustRecord(this.#state(), content.realPath)?.digest === content.digest;
    } catch (error) {
      return {
        kind: "untrusted",
        line: `toolgate: ${path} changed, and ${(error as Error).message}: ${keeps}`,
      };
    }
    if (!trusted) {
      return {
        kind: "untrusted",
        line:
          `toolgate: ${path} changed and is not trusted: ${keeps}; check it, then run \`toolgate trust\` ` +
          "to serve it",
      };
    }
    // Kept for trusted content only, as the trust gate keeps them.
    keepDigests(this.#state(), content.realPath, known, content.digests);
    const loaded = await loadTrusted(parsed, io, path, content);
    if (!loaded.ok) {
      return {
        kind: "refused",
        line: `toolgate: ${path} was trusted again but does not load (${loaded.errors[0]}): ${keeps}`,
      };
    }
    let next: Manifest;
    try {
      next = this.#options.narrow(loaded.manifest);
    } catch (error) {
      // `--server NAME` and a manifest without that server any more.
      return {
        kind: "refused",
        line:
          `toolgate: ${path} was trusted again, but ${
            (error as Error).message
          }: ${keeps}; restart serve to ` +
          "serve it",
      };
    }
    const beyond = this.#beyond(next, content);
    if (beyond.length > 0) {
      return {
        kind: "refused",
        line: `toolgate: ${path} was trusted again, but it needs more than this serve was started with ` +
          `(${beyond.join("; ")}): ${keeps}; restart serve to serve it`,
      };
    }
    const changes = toolChanges(this.#served, next);
    this.#options.executor.replaceOwnTools(next);
    this.#served = next;
    this.#digest = content.digest;
    this.#options.toolsChanged(changes.names);
    // What the start says of each tool (one that runs unconfined, a limit that cannot hold), for the new ones.
    const { executor } = this.#options;
    for (const note of await executor.startNotes(changes.names)) {
      await io.stderr(`toolgate: warning: ${note}\n`);
    }
    return {
      kind: "swapped",
      line: `toolgate: ${path} was trusted again: serving its tools as they are now (${
        changes.said ?? "no tool served changed"
      }); clients are told`,
    };
  }

  /** What `next` needs beyond this process (see `manifest_fit.ts`), with the MCP servers and the pool. */
  #beyond(next: Manifest, content: ManifestContent): string[] {
    const { io, parsed, workspace, manifest: start } = this.#options;
    const beyond: string[] = [];
    if (this.#options.pooled) beyond.push("its calls run on a worker pool, whose workers load the manifest");
    if (serversPart(next, content) !== this.#servers) beyond.push("its mcpServers changed");
    const stateDirs: string[] = [];
    for (const root of [stateRoot, configRoot]) {
      try {
        stateDirs.push(root(io.env));
      } catch {
        // No HOME: no state folder to keep from the tools.
      }
    }
    beyond.push(
      ...beyondGrants(next, { start, env: io.env, workspace, stateDirs, reads: content.codePaths }),
    );
    try {
      approvalSettings(parsed, next, "serve");
    } catch (error) {
      beyond.push((error as Error).message);
    }
    return beyond;
  }
}
