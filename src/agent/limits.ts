/**
 * The agent loop's chat client defaults (its endpoint and bounds), in a module of their own so that reading the
 * settings, or planning a launch's permissions, does not load the chat client.
 *
 * @module
 */

/**
 * The most bytes of an answer read by default (16 MiB): a chat completion is a few kilobytes, a long one with
 * tool calls a few hundred; past this size an answer is a fault or an attack, and reading it whole could take the
 * process's memory (Deno cannot make a string past about 512 MB at all).
 */
export const DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

/** The default chat-completions endpoint, when neither `--base-url` nor a variable below says otherwise. */
export const DEFAULT_BASE_URL = "https://api.openai.com/v1";

/** The variables that name the endpoint, first found first: agentcli's, then the OpenAI SDKs'. */
export const BASE_URL_VARIABLES: readonly string[] = ["OAI_BASE_URL", "OPENAI_BASE_URL"];

/**
 * The endpoint `env` names (or the default): the one place the run and the launch plan (which grants its host)
 * read it from.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { endpointFromEnv } from "./limits.ts";
 * assert.equal(endpointFromEnv({ OPENAI_BASE_URL: "http://127.0.0.1:8080/v1" }), "http://127.0.0.1:8080/v1");
 * ```
 */
export function endpointFromEnv(env: Readonly<Record<string, string>>): string {
  for (const name of BASE_URL_VARIABLES) if (env[name]) return env[name];
  return DEFAULT_BASE_URL;
}
