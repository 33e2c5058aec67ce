/** The `trust` command: trusts the manifest a run here would use, showing what it trusts. @module */
import {
  type Command,
  CommandFailure,
  EXIT,
  expectPositionals,
  flag,
  stringOption,
  UsageError,
} from "./cli.ts";
import { isOwnManifest } from "../manifest/manifest_location.ts";
import { stateRoot } from "../state/state.ts";
import { NOT_COVERED, readManifestContent } from "../manifest/trust.ts";
import { describeChanges, serverLine, toolLine } from "../manifest/trust_changes.ts";
import { forgetTrust, readTrustRecord, writeTrustRecord } from "../manifest/trust_record.ts";
import { manifestLocationOf, workspaceOf } from "./load.ts";
import type { Io, ParsedArgs } from "./cli.ts";
import { EXECUTOR_OPTIONS, executorFromArgs, executorSettings } from "./executor_options.ts";

/** `toolgate trust [--tools PATH] [--forget]` */
export const trustCommand: Command = {
  name: "trust",
  summary: "trust the manifest found here (its tools, profiles and programs, as they are now)",
  usage: "toolgate trust [--tools PATH] [--forget] [--update NAME[,NAME...]|all] [--sandbox MODE]",
  options: {
    // The servers start here to be pinned: as confined as the runs that will use them, or as unconfined.
    sandbox: EXECUTOR_OPTIONS.sandbox,
    forget: { type: "boolean", help: "forget the trust instead: its tools ask again before they run" },
    update: {
      type: "string",
      value: "NAME",
      help: "install these package servers (npx, uvx, ...) again at their newest version (all: every one)",
    },
  },
  details: [
    "A tools.json found in this folder or above it runs only once you trusted that exact content: toolgate",
    "records a digest of the manifest, of each tool's profile, of each program and of the code each tool's and",
    "MCP server's command line names (./srv.py, a folder, python -m pkg), in its state folder.",
    "A change to any of them is shown as what changed, and nothing runs until you trust it again. This command",
    "trusts the manifest a run here would use (or --tools PATH), and prints what it trusts. A manifest you name",
    "with --tools or TOOLGATE_TOOLS is trusted for that run; the built-in tool belt always is.",
    "A server run by a package runner (npx, uvx, pipx run, deno run npm:) is installed here, once, confined and",
    'pinned (docs/gateway.md, "Package servers"); --update NAME installs it again at its newest version.',
    "Each MCP server is started to pin its tools' definitions; one that cannot be pinned is said with its reason,",
    "and the command exits 1. --sandbox off starts them unconfined, as `call --sandbox off` would run them.",
    "It closes with the tools a server says only read (readOnlyHint) that the server's readOnly does not list:",
    'they ask for approval at every call until you list them (docs/approvals.md, "An MCP server\'s tools").',
  ].join("\n"),
  async run(parsed, io) {
    expectPositionals(parsed, 0, "trust");
    const location = manifestLocationOf(parsed, io);
    const path = location.path;
    if (location.source === "belt" || isOwnManifest(path)) {
      await io.stdout(`${path} is toolgate's own tool belt: it needs no trust\n`);
      return EXIT.ok;
    }
    const content = await readManifestContent(path, undefined, { workspace: workspaceOf(parsed, io) });
    if (content === undefined) throw new CommandFailure(`cannot read the manifest ${path}`);
    const state = stateRoot(io.env);
    if (flag(parsed, "forget")) {
      const had = forgetTrust(state, content.realPath);
      await io.stdout(had ? `forgot the trust in ${path}\n` : `${path} was not trusted\n`);
      return EXIT.ok;
    }
    const record = readTrustRecord(state, content.realPath);
    // Each tool and server with the code its command line names, then what no digest covers.
    const tools = [
      ...content.summary.tools.map((tool) => `  ${toolLine(tool)}`),
      ...(content.summary.servers ?? []).map((server) => `  ${serverLine(server)}`),
      `  (${NOT_COVERED})`,
    ];
    if (record?.digest === content.digest) {
      await io.stdout(
        [`${path} is trusted already (since ${record.trustedAt}), unchanged:`, ...tools, ""].join("\n"),
      );
      return await pinServers(parsed, io, path, content.realPath) ? EXIT.ok : EXIT.failure;
    }
    const lines = record === undefined ? [] : [
      `changed since you trusted it (${record.trustedAt}):`,
      ...describeChanges(record.summary, content.summary).map((line) => `  ${line}`),
    ];
    writeTrustRecord(state, content, new Date());
    const count = content.summary.tools.length;
    await io.stdout(
      [...lines, `trusted ${path}: ${count} tool${count === 1 ? "" : "s"}, as they are now:`, ...tools, ""]
        .join("\n"),
    );
    return await pinServers(parsed, io, path, content.realPath) ? EXIT.ok : EXIT.failure;
  },
};

/**
 * Pins the definitions of the tools the manifest's MCP servers expose, as they are now: each server is started
 * (confined, as a run starts it) and listed; what changed since the last pin is shown field by field, and a
 * description with invisible characters is flagged. Whether every server could be pinned (else the command fails).
 */
async function pinServers(parsed: ParsedArgs, io: Io, path: string, realPath: string): Promise<boolean> {
  const { loadManifest } = await import("../manifest/manifest.ts");
  const loaded = await loadManifest(path, { allowAbsoluteCommands: flag(parsed, "allow-absolute-commands") });
  if (!loaded.ok || (loaded.manifest.servers ?? []).length === 0) return true;
  const [{ readPins, writePins }, { readOnlyAdvice, reviewLines, reviewServers }] = await Promise.all([
    import("../manifest/pins.ts"),
    import("./trust_review.ts"),
  ]);
  const state = stateRoot(io.env);
  const before = readPins(state, realPath);
  const settings = { ...await executorSettings(parsed, io, "trust"), auditDir: null };
  // Package servers (npx, uvx, ...) are installed, pinned, before they start to be listed.
  const { installPackages } = await import("../packages/package_install.ts");
  const update = stringOption(parsed, "update");
  const names = update === undefined || update === "all" ? [] : update.split(",").map((name) => name.trim());
  const unknown = names.find((name) => !loaded.manifest.servers.some((server) => server.name === name));
  if (unknown !== undefined) {
    throw new UsageError(
      `--update ${JSON.stringify(unknown)}: the manifest has no MCP server of that name`,
      "trust",
    );
  }
  const installed = await installPackages({
    manifest: loaded.manifest,
    manifestRealPath: realPath,
    state,
    env: io.env,
    workspace: await Deno.realPath(settings.cwd),
    sandbox: settings.sandbox,
    bwrap: io.env.TOOLGATE_BWRAP || undefined,
    update: update === "all" ? true : new Set(names),
    progress: (line) => io.stderr(`${line}\n`),
  });
  if (installed.lines.length > 0) {
    await io.stdout(
      ["the MCP servers' packages:", ...installed.lines.map((line) => `  ${line}`), ""].join("\n"),
    );
  }
  const { executor } = await executorFromArgs(parsed, io, loaded.manifest, "trust", settings, {
    jobs: false,
    gateway: false,
  });
  // The servers start here; what is withheld now is what this command pins.
  await executor.connectGateway();
  let reviewed;
  try {
    // A server whose package could not be installed just now is not started: its line says so, not "run trust".
    reviewed = await reviewServers(
      loaded.manifest.servers.map((server) => server.name),
      before,
      (server) =>
        installed.failed.includes(server)
          ? Promise.reject(new Error("its package could not be installed (said above)"))
          : executor.serverDefinitions(server),
    );
  } finally {
    await executor.close();
  }
  const { pins } = reviewed;
  // A server whose package could not be installed just now says that, not "run toolgate trust".
  const servers = reviewed.servers.map((review) => {
    const reason = installFailure(installed, review.server);
    return review.error === undefined || reason === undefined ? review : { ...review, error: reason };
  });
  const lines = reviewLines(servers);
  writePins(state, realPath, pins);
  const advice = readOnlyAdvice(loaded.manifest.servers, pins);
  await io.stdout(
    ["pinned the MCP servers' tool definitions, as they are now:", ...lines, ...advice, ""].join("\n"),
  );
  return installed.failed.length === 0 && servers.every((review) => review.error === undefined);
}

/** Why the package of `server` could not be installed by this trust, from its line; `undefined` if it was. */
function installFailure(
  installed: { readonly lines: readonly string[]; readonly failed: readonly string[] },
  server: string,
): string | undefined {
  if (!installed.failed.includes(server)) return undefined;
  const line = installed.lines.find((text) => text.startsWith(`${server}: `)) ?? "";
  const at = line.indexOf(" cannot be installed: ");
  if (at >= 0) {
    return `its package could not be installed: ${line.slice(at + " cannot be installed: ".length)}`;
  }
  // An entry toolgate cannot install at all (a docker entry): its line says why.
  return line.slice(server.length + 2) || undefined;
}
