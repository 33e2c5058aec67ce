/**
 * Transcripts: the conversation written as JSON (`--save-messages`, secrets redacted), read back and checked
 * (`--load-messages`), and the opening messages of a run, new or resumed.
 *
 * @module
 */
import { dirname, join } from "../base/paths.ts";
import { prepareDir } from "../state/private_dir.ts";
import { writePrivateText } from "../state/private_file.ts";
import { isRecord } from "../contract.ts";
import { redactDeep } from "../state/redact.ts";
import { AgentError } from "./errors.ts";
import { type ChatMessage, checkMessages } from "./messages.ts";

/**
 * A transcript that cannot be read or resumed: the person's mistake (a bad `--load-messages` file, a conversation
 * that ends where no prompt may follow), which the command reports as a usage error.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TranscriptError } from "./transcript.ts";
 * assert.equal(new TranscriptError("--load-messages run.json: no such file").name, "TranscriptError");
 * ```
 */
export class TranscriptError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TranscriptError";
  }
}

/**
 * Writes the messages as a pretty JSON array, every string redacted, through a temporary file so that a reader
 * never sees half a transcript. Throws an {@linkcode AgentError} when it cannot.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { loadTranscript, saveTranscript } from "./transcript.ts";
 * const file = `${await Deno.makeTempDir()}/run.json`;
 * await saveTranscript(file, [{ role: "user", content: "hi" }], (text) => text);
 * assert.deepEqual(await loadTranscript(file), [{ role: "user", content: "hi" }]);
 * ```
 */
export async function saveTranscript(
  path: string,
  messages: readonly ChatMessage[],
  redact: (text: string) => string,
): Promise<void> {
  const body = transcriptText(messages, redact);
  // A fixed name beside the file, so that the run's permission set can name it ahead (`PATH.tmp`).
  const temp = `${path}.tmp`;
  try {
    // A missing folder is made when this run may (the least set names only the file and its temporary file).
    await Deno.mkdir(dirname(path), { recursive: true }).catch(() => {});
    await Deno.writeTextFile(temp, body, { mode: 0o600 });
    await Deno.rename(temp, path);
  } catch (error) {
    await Deno.remove(temp).catch(() => {});
    throw new AgentError(`cannot write the transcript ${path}: ${(error as Error).message}`);
  }
}

/**
 * The transcript's text as {@linkcode saveTranscript} writes it: a pretty JSON array, every string redacted.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { transcriptText } from "./transcript.ts";
 * assert.equal(transcriptText([{ role: "user", content: "key sk-1" }], (text) => text.replace("sk-1", "[REDACTED]")), '[\n  {\n    "role": "user",\n    "content": "key [REDACTED]"\n  }\n]\n');
 * ```
 */
export function transcriptText(messages: readonly ChatMessage[], redact: (text: string) => string): string {
  return JSON.stringify(redactDeep(messages, redact), null, 2) + "\n";
}

/**
 * Keeps a transcript that could not be written where the person asked: in `dir` (a folder of toolgate's own, made
 * 0700), under a name of its own (0600); returns its path. Throws when even that cannot be written.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { keepTranscript } from "./transcript.ts";
 * const kept = keepTranscript(await Deno.makeTempDir() + "/transcripts", [{ role: "user", content: "hi" }], (t) => t);
 * assert.ok(kept.endsWith(".json"));
 * ```
 */
export function keepTranscript(
  dir: string,
  messages: readonly ChatMessage[],
  redact: (text: string) => string,
): string {
  prepareDir(dir);
  const stamp = new Date().toISOString().replaceAll(":", "-").replace(/\.\d+Z$/, "Z");
  const path = join(dir, `${stamp}-${crypto.randomUUID().slice(0, 8)}.json`);
  writePrivateText(path, transcriptText(messages, redact));
  return path;
}

/**
 * Reads a transcript written by {@linkcode saveTranscript} (a JSON array of messages, or an object holding one in
 * `messages`); throws {@linkcode TranscriptError} naming the file and the first problem.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { loadTranscript } from "./transcript.ts";
 * const file = await Deno.makeTempFile({ suffix: ".json" });
 * await Deno.writeTextFile(file, JSON.stringify({ messages: [{ role: "user", content: "hi" }] }));
 * assert.deepEqual(await loadTranscript(file), [{ role: "user", content: "hi" }]);
 * ```
 */
export async function loadTranscript(path: string): Promise<ChatMessage[]> {
  const fail = (message: string) => new TranscriptError(`--load-messages ${path}: ${message}`);
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    throw fail(error instanceof Deno.errors.NotFound ? "no such file" : (error as Error).message);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw fail(`not JSON (${(error as Error).message})`);
  }
  return checkMessages(isRecord(value) && "messages" in value ? value.messages : value, fail);
}

/** What a run starts from. */
export interface OpeningOptions {
  /** A loaded conversation, when resuming. */
  readonly loaded?: readonly ChatMessage[];
  /** A system prompt given on the command line. */
  readonly system?: string;
  /** Used for a new conversation when no system prompt is given. */
  readonly defaultSystem: string;
  /** The user's request; may be absent when resuming. */
  readonly prompt?: string;
}

/**
 * The messages a run starts from: a new conversation (system, user), or a loaded one with the given system prompt
 * in place of its own and the prompt appended. Throws {@linkcode TranscriptError} when a resumed conversation leaves
 * nothing to do.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openingMessages } from "./transcript.ts";
 * assert.deepEqual(openingMessages({ defaultSystem: "Be brief.", prompt: "hi" }), [{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }]);
 * ```
 */
export function openingMessages(options: OpeningOptions): ChatMessage[] {
  if (options.loaded === undefined) {
    return [
      { role: "system", content: options.system ?? options.defaultSystem },
      { role: "user", content: options.prompt ?? "" },
    ];
  }
  const messages = [...options.loaded];
  if (options.system !== undefined) {
    if (messages[0]?.role === "system") messages[0] = { role: "system", content: options.system };
    else messages.unshift({ role: "system", content: options.system });
  }
  if (options.prompt !== undefined) {
    messages.push({ role: "user", content: options.prompt });
    return messages;
  }
  const last = messages[messages.length - 1];
  if (last === undefined) throw new TranscriptError("the loaded conversation is empty; give a --prompt");
  if (last.role === "assistant" && !(last.tool_calls?.length)) {
    throw new TranscriptError(
      "the loaded conversation ends with the model's answer; give a --prompt to go on",
    );
  }
  if (last.role === "assistant") {
    throw new TranscriptError(
      "the loaded conversation ends with tool calls that were never answered; it cannot be resumed as is",
    );
  }
  return messages;
}
