/**
 * The agent loop's events (`--output jsonl`): what happened in a run, one JSON object a line on stdout for scripts
 * and CI, secrets masked as in transcripts, and every character past ASCII escaped so that no line can drive a
 * terminal.
 *
 * @module
 */
import type { Envelope } from "../contract.ts";
import { redactDeep } from "../state/redact.ts";
import type { Usage, UsageTotals } from "./usage.ts";

/** A request is about to go to the endpoint. */
export interface RequestEvent {
  readonly type: "request";
  /** 1 for the run's first request. */
  readonly step: number;
  readonly model: string;
  /** Messages in the conversation sent. */
  readonly messages: number;
  /** Tools sent, stubs included. */
  readonly tools: number;
  /** Of those, the stubs (`--lazy-tools`). */
  readonly tool_stubs: number;
  /** The request body's size in UTF-8 bytes. */
  readonly bytes: number;
}

/** The endpoint answered a request. */
export interface ResponseEvent {
  readonly type: "response";
  readonly step: number;
  readonly finish_reason?: string;
  /** The answer's text (`null` when it had none). */
  readonly text: string | null;
  /** How many tools it calls. */
  readonly tool_calls: number;
  /** The tokens the endpoint counted for this request, when it said. */
  readonly usage?: Usage;
}

/** The model called a tool (before it is checked, approved or run). */
export interface ToolCallEvent {
  readonly type: "tool_call";
  readonly step: number;
  readonly id: string;
  readonly name: string;
  /** The arguments as the model sent them (JSON text, maybe malformed). */
  readonly arguments: string;
}

/** A call's answer, as the model receives it. */
export interface ToolResultEvent {
  readonly type: "tool_result";
  readonly step: number;
  readonly id: string;
  readonly name: string;
  readonly ok: boolean;
  /** The envelope in the tool message (cut to the model's budget). */
  readonly envelope: Envelope;
}

/** The final answer. */
export interface AnswerEvent {
  readonly type: "answer";
  readonly step: number;
  readonly text: string;
  readonly finish_reason?: string;
}

/** The run's token totals (only when the endpoint reported usage). */
export interface UsageEvent extends UsageTotals {
  readonly type: "usage";
}

/** Why a run failed (exit 1; a stop by a signal exits with the signal's code). */
export interface ErrorEvent {
  readonly type: "error";
  /**
   * `endpoint` (failed or answered nonsense), `step_limit`, `empty_answer`, `transcript` (not saved), `stopped`
   * (SIGINT, SIGTERM or SIGHUP ended the run).
   */
  readonly reason: "endpoint" | "step_limit" | "empty_answer" | "transcript" | "stopped";
  readonly message: string;
}

/** Any event of a run. */
export type AgentEvent =
  | RequestEvent
  | ResponseEvent
  | ToolCallEvent
  | ToolResultEvent
  | AnswerEvent
  | UsageEvent
  | ErrorEvent;

/** Receives the loop's events. */
export type EventSink = (event: AgentEvent) => Promise<void>;

/**
 * One JSON line, pure ASCII: every character past it (C1 controls, bidi overrides, line separators included) is a
 * `\u` escape, as are the controls `JSON.stringify` already escapes; the value is unchanged for any JSON reader.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { asciiJsonLine } from "./events.ts";
 * assert.equal(asciiJsonLine({ text: "é\u202e" }), '{"text":"\\u00e9\\u202e"}\n');
 * ```
 */
export function asciiJsonLine(value: unknown): string {
  return JSON.stringify(value).replace(
    /[\u007f-\uffff]/g,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`,
  ) + "\n";
}

/**
 * An event sink that writes each event as one line, every string in it redacted first.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonlSink } from "./events.ts";
 * const lines: string[] = [];
 * const sink = jsonlSink(async (line) => void lines.push(line), (text) => text.replaceAll("sk-1", "[REDACTED]"));
 * await sink({ type: "error", reason: "endpoint", message: "bad key sk-1" });
 * assert.equal(lines[0], '{"type":"error","reason":"endpoint","message":"bad key [REDACTED]"}\n');
 * ```
 */
export function jsonlSink(
  write: (line: string) => Promise<void>,
  redact: (text: string) => string,
): EventSink {
  return (event) => write(asciiJsonLine(redactDeep(event, redact)));
}
