/**
 * The `run` command's settings (the agent loop's): its options, and their resolution, flag over environment over
 * default, into one checked value (prompt and system texts read from their files or stdin).
 *
 * @module
 */
import { resolve } from "../base/paths.ts";
import {
  choiceOption,
  flag,
  type Io,
  type OptionSpec,
  type ParsedArgs,
  parseNumber,
  stringOption,
  UsageError,
} from "./cli.ts";
import { BASE_URL_VARIABLES, DEFAULT_BASE_URL, DEFAULT_MAX_RESPONSE_BYTES } from "../agent/limits.ts";

/** Defaults of the agent loop's settings (agentcli's, where it has one). */
export const AGENT_DEFAULTS = {
  baseUrl: DEFAULT_BASE_URL,
  system: "You are a helpful, precise assistant. Use tools when strictly helpful.",
  maxSteps: 8,
  httpTimeoutSec: 90,
  httpRetries: 2,
  httpMaxBytes: DEFAULT_MAX_RESPONSE_BYTES,
} as const;

/** The agent loop's own options (the executor's come from `EXECUTOR_OPTIONS`). */
export const AGENT_OPTIONS: Record<string, OptionSpec> = {
  prompt: { type: "string", value: "TEXT", help: "the user's request" },
  "prompt-file": { type: "string", value: "PATH", help: "read the request from a file (`-` for stdin)" },
  system: { type: "string", value: "TEXT", help: "the system prompt (default: agentcli's)" },
  "system-file": {
    type: "string",
    value: "PATH",
    help: "read the system prompt from a file (`-` for stdin)",
  },
  "base-url": {
    type: "string",
    value: "URL",
    help:
      `the OpenAI-compatible API (env OAI_BASE_URL, then OPENAI_BASE_URL; default ${AGENT_DEFAULTS.baseUrl})`,
  },
  model: {
    type: "string",
    value: "ID",
    help: "the model, as the endpoint names it (env OAI_MODEL; required: toolgate sends no default model)",
  },
  "api-key": {
    type: "string",
    value: "KEY",
    help:
      "sent as a Bearer token (env OAI_API_KEY, then OPENAI_API_KEY; prefer those: argv is visible to others)",
  },
  "max-steps": {
    type: "string",
    value: "N",
    help: `most requests to the model before giving up (default ${AGENT_DEFAULTS.maxSteps})`,
  },
  "http-timeout": {
    type: "string",
    value: "SEC",
    help:
      `per-attempt HTTP timeout in seconds, or 30s / 2m (env OAI_HTTP_TIMEOUT, default ${AGENT_DEFAULTS.httpTimeoutSec})`,
  },
  "http-retries": {
    type: "string",
    value: "N",
    help:
      `retries on network errors, timeouts, 429 and 5xx (env OAI_HTTP_RETRIES, default ${AGENT_DEFAULTS.httpRetries})`,
  },
  "http-max-bytes": {
    type: "string",
    value: "N",
    help:
      `most bytes of one answer, streamed or not; a larger one fails, unretried (env OAI_HTTP_MAX_BYTES, default ${AGENT_DEFAULTS.httpMaxBytes}, 16 MiB)`,
  },
  temperature: { type: "string", value: "T", help: "sampling temperature (default: the endpoint's)" },
  stream: { type: "boolean", help: "stream the answer (server-sent events), printing it as it arrives" },
  quiet: { type: "boolean", short: "q", help: "no progress on stderr" },
  debug: { type: "boolean", help: "dump each request and response on stderr (the API key masked)" },
  "save-messages": { type: "string", value: "PATH", help: "write the conversation as JSON at the end" },
  "load-messages": {
    type: "string",
    value: "PATH",
    help: "resume a conversation saved with --save-messages (a --prompt is added to it)",
  },
  output: {
    type: "string",
    value: "FORMAT",
    help:
      "text (default: the answer on stdout) or jsonl (one JSON event a line on stdout, nothing else there)",
  },
  "lazy-tools": {
    type: "boolean",
    help: "send each tool as a name and a summary first; its full definition after its first call",
  },
  images: {
    type: "boolean",
    help: "send the tools' images to the model after their results (env OAI_IMAGES=1; default: a note)",
  },
  audio: {
    type: "boolean",
    help: "send the tools' WAV and MP3 audio to the model after their results (env OAI_AUDIO=1)",
  },
};

/** The forms of `--output`. */
export const OUTPUT_FORMATS = ["text", "jsonl"] as const;
/** What stdout carries: the answer's text, or one JSON event a line. */
export type OutputFormat = typeof OUTPUT_FORMATS[number];

/** Every setting of one agent run, checked. */
export interface AgentSettings {
  /** Without trailing slashes. */
  readonly baseUrl: string;
  readonly model: string;
  readonly apiKey?: string;
  readonly maxSteps: number;
  readonly httpTimeoutMs: number;
  readonly httpRetries: number;
  /** The most bytes of one answer from the endpoint. */
  readonly httpMaxBytes: number;
  readonly temperature?: number;
  /** The system prompt given (`undefined` when none was: the default applies to a new conversation). */
  readonly system?: string;
  /** The user's request; absent only when resuming a conversation. */
  readonly prompt?: string;
  readonly stream: boolean;
  /** `--yes` (an approval option, declared with the others in `commands/approval_options.ts`). */
  readonly yes: boolean;
  readonly quiet: boolean;
  readonly debug: boolean;
  readonly output: OutputFormat;
  /** Tools disclosed on demand: stubs first. */
  readonly lazyTools: boolean;
  /** The endpoint takes images in a user message: the tools' images are sent (`--images`, `OAI_IMAGES`). */
  readonly images: boolean;
  /** The endpoint takes `input_audio`: the tools' WAV and MP3 audio are sent (`--audio`, `OAI_AUDIO`). */
  readonly audio: boolean;
  /** Absolute paths. */
  readonly saveMessages?: string;
  readonly loadMessages?: string;
}

const COMMAND = "run";

/** A value from a flag or, failing that, the first set variable; empty counts as unset. */
function pick(
  parsed: ParsedArgs,
  name: string,
  env: Readonly<Record<string, string>>,
  variables: readonly string[],
): { value: string; label: string } | undefined {
  const value = stringOption(parsed, name);
  if (value !== undefined) return { value, label: `--${name}` };
  for (const variable of variables) {
    const found = env[variable];
    if (found !== undefined && found !== "") return { value: found, label: variable };
  }
  return undefined;
}

/** A yes-or-no variable: `1`, `true` or `yes` is on; unset, empty, `0`, `false` or `no` off; anything else a mistake. */
function switchedOn(env: Readonly<Record<string, string>>, name: string): boolean {
  const value = (env[name] ?? "").trim().toLowerCase();
  if (["1", "true", "yes"].includes(value)) return true;
  if (["", "0", "false", "no"].includes(value)) return false;
  throw new UsageError(`${name} must be 1 or 0 (got ${JSON.stringify(env[name])})`, COMMAND);
}

/**
 * Reads a timeout in seconds: a plain number, or a Go-style duration (`90s`, `1m30s`, `500ms`) as agentcli's
 * `OAI_HTTP_TIMEOUT` holds. Throws {@linkcode UsageError}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseSeconds } from "./run_settings.ts";
 * assert.equal(parseSeconds("90", "--http-timeout"), 90);
 * assert.equal(parseSeconds("1m30s", "OAI_HTTP_TIMEOUT"), 90);
 * ```
 */
export function parseSeconds(raw: string, label: string): number {
  const text = raw.trim();
  if (/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(text)) {
    const units: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600 };
    let total = 0;
    for (const [, amount, , unit] of text.matchAll(/(\d+(\.\d+)?)(ms|s|m|h)/g)) {
      total += Number(amount) * units[unit];
    }
    if (total > 0) return total;
  }
  return parseNumber(raw, label, COMMAND);
}

async function readSource(path: string, label: string, io: Io): Promise<string> {
  if (path === "-") return await io.stdin();
  try {
    return await Deno.readTextFile(resolve(io.cwd, path));
  } catch (error) {
    const reason = error instanceof Deno.errors.NotFound ? "no such file" : (error as Error).message;
    throw new UsageError(`${label} ${JSON.stringify(path)}: cannot read it: ${reason}`, COMMAND);
  }
}

async function text(
  parsed: ParsedArgs,
  io: Io,
  inline: string,
  file: string,
): Promise<string | undefined> {
  const given = stringOption(parsed, inline);
  const path = stringOption(parsed, file);
  if (given !== undefined && path !== undefined) {
    throw new UsageError(`--${inline} and --${file} cannot be used together`, COMMAND);
  }
  return path !== undefined ? await readSource(path, `--${file}`, io) : given;
}

/**
 * Resolves the agent loop's settings; throws {@linkcode UsageError} for anything missing or malformed.
 *
 * @example Not run as a doc test: it needs a parsed command line and a command's Io.
 * ```ts ignore
 * import { resolveSettings } from "./run_settings.ts";
 * const settings = await resolveSettings(parsed, io);
 * // settings.baseUrl; // "https://api.openai.com/v1" unless --base-url or OAI_BASE_URL says otherwise
 * ```
 */
export async function resolveSettings(parsed: ParsedArgs, io: Io): Promise<AgentSettings> {
  const { env } = io;
  if (stringOption(parsed, "prompt-file") === "-" && stringOption(parsed, "system-file") === "-") {
    throw new UsageError("--prompt-file and --system-file cannot both read stdin", COMMAND);
  }
  const prompt = await text(parsed, io, "prompt", "prompt-file");
  const system = await text(parsed, io, "system", "system-file");
  const load = stringOption(parsed, "load-messages");
  if (prompt === undefined && load === undefined) {
    throw new UsageError("give the request with --prompt TEXT or --prompt-file PATH", COMMAND);
  }
  if (prompt !== undefined && prompt.trim() === "") throw new UsageError("the prompt is empty", COMMAND);

  const base = pick(parsed, "base-url", env, BASE_URL_VARIABLES);
  const baseUrl = (base?.value ?? AGENT_DEFAULTS.baseUrl).trim().replace(/\/+$/, "");
  let url: URL | undefined;
  try {
    url = new URL(baseUrl);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
    throw new UsageError(
      `${base?.label ?? "the base URL"} must be an http(s) URL (got ${JSON.stringify(base?.value)})`,
      COMMAND,
    );
  }

  // No default: a made-up default name sent to a public endpoint fails there with a 404 that says little.
  const model = pick(parsed, "model", env, ["OAI_MODEL"])?.value?.trim();
  if (!model) {
    throw new UsageError(
      `no model is configured: pass --model NAME or set OAI_MODEL to a model ${url.host} serves`,
      COMMAND,
    );
  }
  const apiKey = pick(parsed, "api-key", env, ["OAI_API_KEY", "OPENAI_API_KEY"])?.value;

  const steps = stringOption(parsed, "max-steps");
  const maxSteps = steps === undefined
    ? AGENT_DEFAULTS.maxSteps
    : parseNumber(steps, "--max-steps", COMMAND, { integer: true });
  const timeout = pick(parsed, "http-timeout", env, ["OAI_HTTP_TIMEOUT"]);
  const httpTimeoutMs = Math.round(
    (timeout === undefined ? AGENT_DEFAULTS.httpTimeoutSec : parseSeconds(timeout.value, timeout.label)) *
      1000,
  );
  const retries = pick(parsed, "http-retries", env, ["OAI_HTTP_RETRIES"]);
  const httpRetries = retries === undefined
    ? AGENT_DEFAULTS.httpRetries
    : parseNumber(retries.value, retries.label, COMMAND, { integer: true, exclusive: false });
  const maxBytes = pick(parsed, "http-max-bytes", env, ["OAI_HTTP_MAX_BYTES"]);
  const httpMaxBytes = maxBytes === undefined
    ? AGENT_DEFAULTS.httpMaxBytes
    : parseNumber(maxBytes.value, maxBytes.label, COMMAND, { integer: true });
  const rawTemperature = stringOption(parsed, "temperature");
  const temperature = rawTemperature === undefined
    ? undefined
    : parseNumber(rawTemperature, "--temperature", COMMAND, { exclusive: false });

  const output = choiceOption(parsed, "output", OUTPUT_FORMATS, "text", COMMAND);

  const save = stringOption(parsed, "save-messages");
  return {
    baseUrl,
    model,
    apiKey,
    maxSteps,
    httpTimeoutMs,
    httpRetries,
    httpMaxBytes,
    temperature,
    system,
    prompt,
    stream: flag(parsed, "stream"),
    yes: flag(parsed, "yes"),
    quiet: flag(parsed, "quiet"),
    debug: flag(parsed, "debug"),
    output: output as OutputFormat,
    lazyTools: flag(parsed, "lazy-tools"),
    images: flag(parsed, "images") || switchedOn(env, "OAI_IMAGES"),
    audio: flag(parsed, "audio") || switchedOn(env, "OAI_AUDIO"),
    saveMessages: save === undefined ? undefined : resolve(io.cwd, save),
    loadMessages: load === undefined ? undefined : resolve(io.cwd, load),
  };
}
