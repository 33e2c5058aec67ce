/**
 * How a manifest's trusted content reads to a person: each tool and each MCP server in one line (with the code its
 * command line names), and a change as what changed (tools and servers added and removed, commands, profiles,
 * programs, the code named, the manifest's own files), every name and path from the manifest one visible token.
 *
 * Not here: what the digest covers (`trust.ts`).
 *
 * @module
 */
import { visible, visibleToken as shown } from "../base/text.ts";
import {
  type CodeRoot,
  MAX_OWN_FILES,
  type TrustedServer,
  type TrustedTool,
  type TrustSummary,
} from "./trust.ts";

/** The most changed files an announcement lists one by one. */
const MAX_FILE_LINES = 20;

function short(digest: string | undefined): string {
  if (digest === undefined) return "none";
  return digest.startsWith("sha256:") ? digest.slice(0, 19) : digest;
}

/**
 * One tool as a person reads it: name, command, profile and what it allows, program digest.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { toolLine } from "./trust_changes.ts";
 * assert.equal(toolLine({ name: "ls", command: ["./tools/bin/ls"], profile: "none", profileDigest: "sha256:1", reach: "writes nothing; no network" }), 'ls: ["./tools/bin/ls"], profile none (writes nothing; no network), program none');
 * ```
 */
export function toolLine(tool: TrustedTool): string {
  const command = visible(JSON.stringify(tool.command));
  const code = tool.code === undefined || tool.code.length === 0 ? "" : `, code ${codeList(tool.code)}`;
  return `${shown(tool.name)}: ${command}, profile ${shown(tool.profile)} (${tool.reach}), program ${
    short(tool.programDigest)
  }${code}`;
}

/** The files and folders a command line names, as pinned: a folder with its count of files. */
function codeList(roots: readonly CodeRoot[]): string {
  return roots.map((root) =>
    root.wide === true
      ? `${shown(root.path)} (the workspace or a folder above it: not pinned)`
      : root.data === true
      ? `${shown(root.path)} (its profile may write it: data, not pinned)`
      : root.path.endsWith("/")
      ? `${shown(root.path)} (${root.files} file${root.files === 1 ? "" : "s"})`
      : shown(root.path)
  ).join(", ");
}

/**
 * One MCP server as a person reads it: name, command line, and the code it names (or that it names none).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { serverLine } from "./trust_changes.ts";
 * const server = { name: "s", command: "python3", args: ["./srv.py"], code: [{ path: "srv.py", files: 1 }] };
 * assert.equal(serverLine(server), 'server s: ["python3","./srv.py"], code srv.py');
 * ```
 */
export function serverLine(server: TrustedServer): string {
  const command = visible(JSON.stringify([server.command, ...server.args]));
  const code = server.code.length === 0 ? "no file of its own named" : `code ${codeList(server.code)}`;
  const profile = server.profile === undefined ? "" : `, profile ${shown(server.profile)} (${server.reach})`;
  return `server ${shown(server.name)}: ${command}${profile}, ${code}`;
}

/**
 * What changed from the trusted summary to the present one, a line each: tools added and removed, commands,
 * profiles and programs changed, the rest of the manifest's text, and its own files. With no earlier summary, every
 * tool is new.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { describeChanges } from "./trust_changes.ts";
 * const tool = { name: "ls", command: ["./tools/bin/ls"], profile: "none", profileDigest: "sha256:1", reach: "writes nothing; no network" };
 * const summary = { manifest: "sha256:a", tools: [tool], files: {}, filesComplete: true };
 * assert.deepEqual(describeChanges(undefined, summary), [
 *   '+ ls: ["./tools/bin/ls"], profile none (writes nothing; no network), program none',
 * ]);
 * ```
 */
export function describeChanges(before: TrustSummary | undefined, now: TrustSummary): string[] {
  if (before === undefined) {
    return [
      ...now.tools.map((tool) => `+ ${toolLine(tool)}`),
      ...(now.servers ?? []).map((server) => `+ ${serverLine(server)}`),
      ...(now.codeCapped === undefined ? [] : [cappedLine(now.codeCapped)]),
    ];
  }
  const lines: string[] = [];
  const old = new Map(before.tools.map((tool) => [tool.name, tool]));
  const present = new Set(now.tools.map((tool) => tool.name));
  for (const tool of now.tools) {
    const was = old.get(tool.name);
    if (was === undefined) {
      lines.push(`+ added ${toolLine(tool)}`);
      continue;
    }
    const name = shown(tool.name);
    if (JSON.stringify(was.command) !== JSON.stringify(tool.command)) {
      const command = (value: unknown) => visible(JSON.stringify(value));
      lines.push(`~ ${name}: command ${command(was.command)} -> ${command(tool.command)}`);
    }
    if (was.profile !== tool.profile || was.profileDigest !== tool.profileDigest) {
      const what = was.profile === tool.profile
        ? `profile ${shown(tool.profile)} changed`
        : `profile ${shown(was.profile)} -> ${shown(tool.profile)}`;
      lines.push(`~ ${name}: ${what} (was: ${was.reach}; now: ${tool.reach})`);
    }
    if (was.program === tool.program && was.programDigest !== tool.programDigest) {
      lines.push(
        `~ ${name}: program ${shown(tool.program ?? "")} changed (${short(was.programDigest)} -> ${
          short(tool.programDigest)
        })`,
      );
    }
  }
  for (const tool of before.tools) if (!present.has(tool.name)) lines.push(`- removed ${shown(tool.name)}`);
  lines.push(...serverChanges(before.servers ?? [], now.servers ?? []));
  if (lines.length === 0 && before.manifest !== now.manifest) {
    lines.push("~ the manifest's other fields changed (descriptions, schemas, limits or variables)");
  }
  return [...lines, ...codeChanges(before, now), ...fileChanges(before, now)];
}

/** Servers added and removed, and command lines changed. */
function serverChanges(before: readonly TrustedServer[], now: readonly TrustedServer[]): string[] {
  const lines: string[] = [];
  const old = new Map(before.map((server) => [server.name, server]));
  const present = new Set(now.map((server) => server.name));
  for (const server of now) {
    const was = old.get(server.name);
    if (was === undefined) {
      lines.push(`+ added ${serverLine(server)}`);
      continue;
    }
    if (JSON.stringify([was.command, ...was.args]) !== JSON.stringify([server.command, ...server.args])) {
      const command = (s: TrustedServer) => visible(JSON.stringify([s.command, ...s.args]));
      lines.push(`~ server ${shown(server.name)}: command ${command(was)} -> ${command(server)}`);
    }
    // A record made before servers' profiles were kept has none: nothing to compare.
    if (
      was.profileDigest !== undefined &&
      (was.profile !== server.profile || was.profileDigest !== server.profileDigest)
    ) {
      const what = was.profile === server.profile
        ? `profile ${shown(server.profile ?? "")} changed`
        : `profile ${shown(was.profile ?? "")} -> ${shown(server.profile ?? "")}`;
      lines.push(`~ server ${shown(server.name)}: ${what} (was: ${was.reach}; now: ${server.reach})`);
    }
  }
  for (const server of before) {
    if (!present.has(server.name)) lines.push(`- removed server ${shown(server.name)}`);
  }
  return lines;
}

function cappedLine(capped: string): string {
  return `~ the code the command lines name is more than toolgate pins (${capped}): the rest is not covered`;
}

/** Does a code root (`srv.py`, `pkg/`, `./`) hold the file keyed `file`? */
function holds(root: string, file: string): boolean {
  if (!root.endsWith("/")) return root === file;
  if (root === "./") return !file.startsWith("/");
  return file.startsWith(root);
}

/** The files of the code the command lines name that changed, each with the tools and servers that name it. */
function codeChanges(before: TrustSummary, now: TrustSummary): string[] {
  const old = before.code ?? {};
  const present = now.code ?? {};
  const changed: [string, "added" | "changed" | "removed"][] = [];
  for (const [path, digest] of Object.entries(present)) {
    if (old[path] === undefined) changed.push([path, "added"]);
    else if (old[path] !== digest) changed.push([path, "changed"]);
  }
  for (const path of Object.keys(old)) if (present[path] === undefined) changed.push([path, "removed"]);
  const owners = [
    ...[...before.tools, ...now.tools].map((tool) => ({
      name: `tool ${shown(tool.name)}`,
      code: tool.code ?? [],
    })),
    ...[...before.servers ?? [], ...now.servers ?? []].map((server) => ({
      name: `server ${shown(server.name)}`,
      code: server.code,
    })),
  ];
  const sign = { added: "+", changed: "~", removed: "-" };
  const lines = changed.map(([path, how]) => {
    const names = [
      ...new Set(
        owners.filter((owner) => owner.code.some((root) => holds(root.path, path))).map((o) => o.name),
      ),
    ];
    return `${sign[how]} code ${shown(path)} ${how}${
      names.length === 0 ? "" : ` (run by ${names.join(", ")})`
    }`;
  });
  const capped = now.codeCapped !== undefined && before.codeCapped === undefined
    ? [cappedLine(now.codeCapped)]
    : [];
  const shownLines = lines.length > MAX_FILE_LINES
    ? [...lines.slice(0, MAX_FILE_LINES), `  ... and ${lines.length - MAX_FILE_LINES} more files`]
    : lines;
  return [...shownLines, ...capped];
}

/** The manifest's own files that changed, other than programs (said above with their tools). */
function fileChanges(before: TrustSummary, now: TrustSummary): string[] {
  const programs = new Set(now.tools.flatMap((tool) => tool.program === undefined ? [] : [tool.program]));
  const old = before.files ?? {};
  const present = now.files ?? {};
  const changed: [string, "added" | "changed" | "removed"][] = [];
  for (const [path, digest] of Object.entries(present)) {
    if (old[path] === undefined) changed.push([path, "added"]);
    else if (old[path] !== digest) changed.push([path, "changed"]);
  }
  for (const path of Object.keys(old)) if (present[path] === undefined) changed.push([path, "removed"]);
  const sign = { added: "+", changed: "~", removed: "-" };
  // A program's change is said with its tool's, and a file of the code a command line names with its own.
  const code = (path: string) => now.code?.[path] !== undefined || before.code?.[path] !== undefined;
  const lines = changed
    .filter(([path]) => ![...programs].some((program) => program.endsWith(`/${path}`)) && !code(path))
    .map(([path, how]) => `${sign[how]} file ${shown(path)} ${how}`);
  if (now.filesComplete === false && before.filesComplete !== false) {
    lines.push(
      `~ the manifest's own files are more than toolgate pins (${MAX_OWN_FILES}): the rest is not covered`,
    );
  }
  return lines.length > MAX_FILE_LINES
    ? [...lines.slice(0, MAX_FILE_LINES), `  ... and ${lines.length - MAX_FILE_LINES} more files`]
    : lines;
}
