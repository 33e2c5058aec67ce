/**
 * What an MCP server behind the gateway says while it runs, handed to the call that caused it as that call's tool
 * events (the same events a `toolgate/1` tool's log and progress messages are, so `serve`, the console and the
 * agent loop's progress line show them as they show a tool's): its own progress (`notifications/progress`, by
 * the progress token toolgate gave the call, so it is always the right call's) and its log messages
 * (`notifications/message`, which MCP ties to no request: one is the call's when it is the server's only call in
 * flight; while none or several are, it cannot be told whose it is and reaches no caller). It also keeps the log
 * level the gateway's callers asked for, so that the server is asked for it at each start.
 *
 * Not here: redaction of what reaches a caller (the executor's, `src/run/gateway_link.ts`), the level each client
 * gets (`src/mcp/client_asks.ts` filters by its session's), the server's life (`upstream.ts`).
 *
 * @module
 */
import { isRecord } from "../contract.ts";
import { LOG_LEVELS, type LogLevel, PROTOCOL_LIMITS, type ToolEvent } from "../manifest/tool_messages.ts";

/** One call in flight, while it is: its progress token, and its end. */
export interface VoiceOfCall {
  /**
   * The progress token to send with the call (`params._meta.progressToken`); `undefined` when nobody listens, so
   * that the server is not asked for progress nobody hears.
   */
  readonly token?: string;
  /** The call ended: nothing more is its. */
  readonly close: () => void;
}

/** One call in flight: where its events go, and how many went (at most a `toolgate/1` tool's number). */
interface Entry {
  readonly onEvent?: (event: ToolEvent) => void;
  sent: number;
}

/** The most characters of a log message's text (and a progress message) kept for the caller. */
const MAX_TEXT = 2_000;

/**
 * The most characters of a log message's data, as JSON, passed on as the server sent it; a larger one reaches the
 * caller as its text cut to {@linkcode MAX_TEXT} (a server may send lines of up to 64 MiB, a thousand per call).
 */
const MAX_DATA = 64 * 1024;

/** The most characters of a logger's name kept. */
const MAX_LOGGER = 200;

/** `text` cut to `max` characters, `...` saying so. */
function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}...` : text;
}

/**
 * A server's log notification (`notifications/message` params) as a call's tool event: its level, its logger
 * prefixed with the server's name (`ev`, or `ev/reporter` when the server named one), its data as it sent it (up to
 * 64 KiB of JSON; a larger one as its text, cut), and that data as one line of text for a person (a string as it
 * is, anything else as JSON), cut to 2,000 characters. `undefined` for a level
 * MCP does not know.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { logEvent } from "./server_voice.ts";
 * assert.deepEqual(logEvent("ev", { level: "warning", logger: "disk", data: "almost full" }), {
 *   kind: "log", level: "warning", logger: "ev/disk", message: "almost full", data: "almost full",
 * });
 * assert.equal(logEvent("ev", { level: "loud", data: "x" }), undefined);
 * ```
 */
export function logEvent(server: string, params: unknown): ToolEvent | undefined {
  if (!isRecord(params) || !LOG_LEVELS.includes(params.level as LogLevel)) return undefined;
  const logger = typeof params.logger === "string" && params.logger !== ""
    ? `${server}/${cut(params.logger, MAX_LOGGER)}`
    : server;
  const text = typeof params.data === "string" ? params.data : JSON.stringify(params.data) ?? "";
  const message = cut(text, MAX_TEXT);
  return {
    kind: "log",
    level: params.level as LogLevel,
    logger,
    message,
    data: text.length > MAX_DATA ? message : params.data,
  };
}

/**
 * One server's voice: its calls in flight, each with where its events go, and the log level asked of it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ServerVoice } from "./server_voice.ts";
 * const voice = new ServerVoice("ev");
 * const heard: unknown[] = [];
 * const call = voice.open((event) => heard.push(event));
 * voice.log({ level: "info", data: "working" });
 * voice.progress({ progressToken: call.token, progress: 1, total: 2, message: "half" });
 * voice.progress({ progressToken: "another call's", progress: 1 });
 * call.close();
 * voice.log({ level: "info", data: "after the call" });
 * assert.deepEqual(heard, [
 *   { kind: "log", level: "info", logger: "ev", message: "working", data: "working" },
 *   { kind: "progress", progress: 1, total: 2, message: "half" },
 * ]);
 * ```
 */
export class ServerVoice {
  readonly #server: string;
  readonly #calls = new Set<Entry>();
  /** The calls in flight that listen, by the progress token each was given. */
  readonly #tokens = new Map<string, Entry>();
  #level?: LogLevel;

  /** The voice of the server named `server` (its name prefixes its loggers). */
  constructor(server: string) {
    this.#server = server;
  }

  /** A call begins: its events go to `onEvent` until it is closed. */
  open(onEvent?: (event: ToolEvent) => void): VoiceOfCall {
    const entry: Entry = { onEvent, sent: 0 };
    this.#calls.add(entry);
    // A token of toolgate's own, unguessable: the server's progress for it is this call's, and no other's.
    const token = onEvent === undefined ? undefined : `toolgate-${crypto.randomUUID()}`;
    if (token !== undefined) this.#tokens.set(token, entry);
    return {
      token,
      close: () => {
        this.#calls.delete(entry);
        if (token !== undefined) this.#tokens.delete(token);
      },
    };
  }

  /**
   * A progress notification of the server (`notifications/progress` params): the event of the call whose token it
   * names, while that call is in flight; nobody's otherwise.
   */
  progress(params: unknown): void {
    if (!isRecord(params) || typeof params.progressToken !== "string") return;
    const entry = this.#tokens.get(params.progressToken);
    if (
      entry?.onEvent === undefined || typeof params.progress !== "number" || !Number.isFinite(params.progress)
    ) {
      return;
    }
    const event: { kind: "progress"; progress: number; total?: number; message?: string } = {
      kind: "progress",
      progress: params.progress,
    };
    if (typeof params.total === "number" && Number.isFinite(params.total)) event.total = params.total;
    if (typeof params.message === "string") event.message = cut(params.message, MAX_TEXT);
    this.#deliver(entry, event);
  }

  /** A log notification of the server: the event of its only call in flight, or nobody's. */
  log(params: unknown): void {
    if (this.#calls.size !== 1) return;
    const event = logEvent(this.#server, params);
    if (event === undefined) return;
    const [only] = this.#calls;
    this.#deliver(only, event);
  }

  /** An event to its call, unless the call had its fill (a server that floods its caller is not heard past it). */
  #deliver(entry: Entry, event: ToolEvent): void {
    if (entry.onEvent === undefined || entry.sent >= PROTOCOL_LIMITS.maxMessages) return;
    entry.sent += 1;
    entry.onEvent(event);
  }

  /**
   * A caller asks for `level`: kept when it is less severe than what was asked before (every caller then gets what
   * it asked for; each filters the rest). Whether the server is to be told.
   */
  want(level: LogLevel): boolean {
    if (this.#level !== undefined && LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(this.#level)) {
      return false;
    }
    this.#level = level;
    return true;
  }

  /** The least severe level asked so far, to ask of the server at each start; `undefined` when none was. */
  get level(): LogLevel | undefined {
    return this.#level;
  }
}
