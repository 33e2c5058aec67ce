/** The agent loop command (`toolgate --prompt TEXT`, also `toolgate run`). Not built yet. @module */
import { type Command, UsageError } from "../cli.ts";

/** `toolgate run --prompt TEXT` */
export const runCommand: Command = {
  name: "run",
  summary: "run the agent loop against an OpenAI-compatible endpoint (the default with --prompt)",
  usage: "toolgate [run] --prompt TEXT [options]",
  options: { prompt: { type: "string", value: "TEXT", help: "the user's request" } },
  run() {
    return Promise.reject(new UsageError("the agent loop is not built yet", "run"));
  },
};
