/**
 * The `log` command: this workspace's audit log, oldest first, one line per call, each line's digest checked
 * under the user's audit key; damaged or altered lines are named, and make the exit code 1.
 *
 * @module
 */
import {
  type Command,
  EXIT,
  expectPositionals,
  flag,
  type Io,
  type ParsedArgs,
  stopSignals,
  stringOption,
  UsageError,
} from "./cli.ts";
import { resolve } from "../base/paths.ts";
import { FAILURE_KINDS } from "../contract.ts";
import { auditDirFor } from "../state/state.ts";
import type { LogEntry, LogFilter } from "../run/audit_reader.ts";

const POLL_MS = 250;
const decoder = new TextDecoder();

/** The audit folder `log` reads: `--audit-dir`, else the workspace's (`--cwd`, else here, by its real path). */
async function auditFolder(parsed: ParsedArgs, io: Io): Promise<{ dir: string; workspace?: string }> {
  const given = stringOption(parsed, "audit-dir");
  if (given !== undefined) return { dir: resolve(io.cwd, given) };
  const cwd = resolve(io.cwd, stringOption(parsed, "cwd") ?? ".");
  const workspace = await Deno.realPath(cwd).catch(() => {
    throw new UsageError(`--cwd ${JSON.stringify(cwd)} is not a folder toolgate can read`, "log");
  });
  return { dir: auditDirFor(io.env, workspace), workspace };
}

/** The filter the options ask for; `parseSince` reads `--since` (from the reader module, loaded by then). */
function readFilter(parsed: ParsedArgs, since: (text: string) => Date | undefined): LogFilter {
  const outcome = stringOption(parsed, "outcome");
  const outcomes = ["ok", "failed", ...Object.keys(FAILURE_KINDS)];
  if (outcome !== undefined && !outcomes.includes(outcome)) {
    throw new UsageError(
      `--outcome must be one of ${outcomes.join(", ")} (got ${JSON.stringify(outcome)})`,
      "log",
    );
  }
  const sinceText = stringOption(parsed, "since");
  const sinceTime = sinceText === undefined ? undefined : since(sinceText);
  if (sinceText !== undefined && sinceTime === undefined) {
    throw new UsageError(
      `--since takes an age (30s, 10m, 2h, 7d) or a time (2026-11-26, 2026-11-26T10:00:00Z), got ${
        JSON.stringify(sinceText)
      }`,
      "log",
    );
  }
  const tools = parsed.values.tool;
  return { tools: Array.isArray(tools) ? tools : undefined, outcome, since: sinceTime };
}

/** The key to check lines with, or why there is none (said once, on stderr). */
async function checkingKey(io: Io): Promise<{ key?: CryptoKey; why?: string }> {
  const { readAuditKey } = await import("../state/audit_log.ts");
  const { auditHmacKey } = await import("../state/audit_seal.ts");
  try {
    const raw = readAuditKey(io.env);
    if (raw === undefined) return { why: "there is no audit key yet" };
    return { key: await auditHmacKey(raw) };
  } catch (error) {
    return { why: (error as Error).message };
  }
}

/** Counts what was seen, for the summary and the exit code. */
interface Tally {
  shown: number;
  damaged: number;
  altered: number;
  unsigned: number;
}

/** `toolgate log` */
export const logCommand: Command = {
  name: "log",
  summary: "this workspace's audit log, one line per call, each line's digest checked",
  usage: "toolgate log [--tool NAME]... [--outcome OUTCOME] [--since AGE|TIME] [--follow] [--json]",
  options: {
    tool: { type: "string", multiple: true, value: "NAME", help: "only this tool's calls (repeatable)" },
    outcome: {
      type: "string",
      value: "OUTCOME",
      help:
        "only calls that ended so: ok, failed (any failure), or a failure kind (timeout, user_denied, ...)",
    },
    since: {
      type: "string",
      value: "AGE|TIME",
      help: "only calls since then: 30s, 10m, 2h, 7d, or an ISO time",
    },
    follow: { type: "boolean", short: "f", help: "keep printing calls as they are recorded (Ctrl-C ends)" },
    json: { type: "boolean", help: "one JSON record per line, with its integrity (verified, unsigned, ...)" },
    cwd: {
      type: "string",
      value: "DIR",
      help: "the workspace whose log to read (default: the current folder)",
    },
    "audit-dir": { type: "string", value: "DIR", help: "read the audit folder given to --audit-dir instead" },
  },
  details: [
    "Each line: the time (UTC), the tool, the outcome, the duration, and what approved the call (read-only,",
    "own-command for `toolgate call`, yes, allow-tools, approve-hosts, always, person, console). toolgate signs each",
    "line with the user's audit key ($XDG_STATE_HOME/toolgate/audit.key); a line that is not JSON is reported",
    "as damaged, a line whose digest does not match as ALTERED, and either makes the exit code 1. Lines without",
    "a digest (written without the key, or by an older toolgate) are shown and counted as unsigned.",
  ].join("\n"),
  async run(parsed, io) {
    expectPositionals(parsed, 0, "log");
    const { dayFiles, dayOf, formatEntry, keeps, parseSince, readLogLine } = await import(
      "../run/audit_reader.ts"
    );
    const now = new Date();
    const filter = readFilter(parsed, (text) => parseSince(text, now));
    const json = flag(parsed, "json");
    const { dir, workspace } = await auditFolder(parsed, io);
    const { key, why } = await checkingKey(io);
    const tally: Tally = { shown: 0, damaged: 0, altered: 0, unsigned: 0 };
    const show = async (entry: LogEntry) => {
      if (entry.kind === "damaged") {
        tally.damaged++;
        await io.stderr(`toolgate: ${entry.file}:${entry.line}: damaged: ${entry.why}\n`);
        return;
      }
      if (!keeps(entry.record, filter)) return;
      tally.shown++;
      if (entry.integrity === "altered") {
        tally.altered++;
        await io.stderr(
          `toolgate: ${entry.file}:${entry.line}: altered: its digest does not match its text\n`,
        );
      }
      if (entry.integrity === "unsigned") tally.unsigned++;
      await io.stdout(
        json
          ? JSON.stringify({ ...entry.record, integrity: entry.integrity }) + "\n"
          : formatEntry(entry.record, entry.integrity) + "\n",
      );
    };
    // Where each file was read to (bytes, and lines before that): --follow reads on from there.
    const read = new Map<string, { bytes: number; lines: number }>();
    const sinceDay = filter.since?.toISOString().slice(0, 10).replaceAll("-", "");
    /** Reads what is new in every day file; a last line without its line break waits, unless `final`. */
    const readNew = async (final: boolean) => {
      for (const file of dayFiles(dir)) {
        if (sinceDay !== undefined && dayOf(file) < sinceDay) continue;
        const at = read.get(file) ?? { bytes: 0, lines: 0 };
        const bytes = await Deno.readFile(file);
        const end = final ? bytes.length : bytes.lastIndexOf(0x0a) + 1;
        if (end <= at.bytes) continue;
        const lines = decoder.decode(bytes.subarray(at.bytes, end)).split("\n");
        // The text after the last line break is no line (the last line of all ends with one).
        if (lines.at(-1) === "") lines.pop();
        read.set(file, { bytes: end, lines: at.lines + lines.length });
        for (const [i, text] of lines.entries()) {
          if (text === "") continue;
          await show(await readLogLine(text, file, at.lines + i + 1, key));
        }
      }
    };
    const follow = flag(parsed, "follow");
    await readNew(!follow);
    if (why !== undefined && tally.shown > 0) {
      await io.stderr(`toolgate: the lines' digests were not checked: ${why}\n`);
    }
    if (!follow) {
      if (tally.shown === 0 && tally.damaged === 0) {
        await io.stderr(
          `toolgate: no calls recorded${workspace ? ` for ${workspace}` : ""}${
            filter.tools || filter.outcome || filter.since ? " that match" : ""
          } (the audit log is ${dir})\n`,
        );
      }
      if (tally.unsigned > 0 && key !== undefined) {
        await io.stderr(
          `toolgate: ${tally.unsigned} line${tally.unsigned === 1 ? "" : "s"} carry no digest ` +
            "(written without the audit key, or by an older toolgate): not checked\n",
        );
      }
      return tally.damaged + tally.altered > 0 ? EXIT.failure : EXIT.ok;
    }
    const signals = stopSignals();
    let stopped = false;
    const stop = signals.next().then(() => void (stopped = true));
    try {
      while (!stopped) {
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([stop, new Promise((resolve) => timer = setTimeout(resolve, POLL_MS))]);
        clearTimeout(timer);
        if (!stopped) await readNew(false);
      }
    } finally {
      signals.dispose();
    }
    return tally.damaged + tally.altered > 0 ? EXIT.failure : EXIT.ok;
  },
};
