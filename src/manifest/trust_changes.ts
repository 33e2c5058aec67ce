/**
 * How a manifest's trusted content reads to a person: each tool in one line, and a change as what changed (tools
 * added and removed, commands, profiles, programs, the manifest's own files), every name and path from the
 * manifest one visible token.
 *
 * @module
 */
import { visible, visibleToken as shown } from "../base/text.ts";
import { MAX_OWN_FILES, type TrustedTool, type TrustSummary } from "./trust.ts";

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
 * import { toolLine } from "./trust_changes.ts";
 * toolLine({ name: "ls", command: ["./tools/bin/ls"], profile: "none", profileDigest: "sha256:1", reach: "writes nothing; no network" });
 * // 'ls: ["./tools/bin/ls"], profile none (writes nothing; no network), program none'
 * ```
 */
export function toolLine(tool: TrustedTool): string {
  const command = visible(JSON.stringify(tool.command));
  return `${shown(tool.name)}: ${command}, profile ${shown(tool.profile)} (${tool.reach}), program ${
    short(tool.programDigest)
  }`;
}

/**
 * What changed from the trusted summary to the present one, a line each: tools added and removed, commands,
 * profiles and programs changed, the rest of the manifest's text, and its own files. With no earlier summary, every
 * tool is new.
 *
 * @example
 * ```ts
 * import { describeChanges } from "./trust_changes.ts";
 * const tool = { name: "ls", command: ["./tools/bin/ls"], profile: "none", profileDigest: "sha256:1", reach: "writes nothing; no network" };
 * const summary = { manifest: "sha256:a", tools: [tool], files: {}, filesComplete: true };
 * describeChanges(undefined, summary); // ['+ ls: ["./tools/bin/ls"], ...']
 * ```
 */
export function describeChanges(before: TrustSummary | undefined, now: TrustSummary): string[] {
  if (before === undefined) return now.tools.map((tool) => `+ ${toolLine(tool)}`);
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
  if (lines.length === 0 && before.manifest !== now.manifest) {
    lines.push("~ the manifest's other fields changed (descriptions, schemas, limits or variables)");
  }
  return [...lines, ...fileChanges(before, now)];
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
  // A program's change is said with its tool's.
  const lines = changed
    .filter(([path]) => ![...programs].some((program) => program.endsWith(`/${path}`)))
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
