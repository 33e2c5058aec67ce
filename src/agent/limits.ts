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

/** The default chat-completions endpoint, when neither `--base-url` nor `OAI_BASE_URL` says otherwise. */
export const DEFAULT_BASE_URL = "https://api.openai.com/v1";
