/** The agent loop command (`toolgate --prompt TEXT`, also `toolgate run`): its options and help. @module */
import type { Command } from "./cli.ts";
import { AGENT_OPTIONS } from "./run_settings.ts";
import { APPROVAL_OPTIONS } from "./approval_options.ts";
import { EXECUTOR_OPTIONS } from "./executor_options.ts";

/** `toolgate run --prompt TEXT` */
export const runCommand: Command = {
  name: "run",
  summary: "run the agent loop against an OpenAI-compatible endpoint (the default with --prompt)",
  usage: "toolgate [run] --prompt TEXT [options]",
  options: {
    ...AGENT_OPTIONS,
    ...APPROVAL_OPTIONS,
    ...EXECUTOR_OPTIONS,
    console: {
      type: "string",
      value: "[PORT]",
      help:
        "serve a web console on 127.0.0.1:PORT (none or 0: a free one; docs/console.md): the calls live, approvals with a click (the first answer, console or terminal, wins)",
    },
  },
  details: [
    "Sends the request and the manifest's tools to POST {base-url}/chat/completions, runs the tools the model",
    "calls (concurrent ones side by side), and prints the final answer on stdout. A call that writes, runs",
    "programs or can reach the network needs approval: asked on the terminal (yes / no / always), or given with",
    "--yes, --allow-tools or (http_fetch to a listed host) --approve-hosts; without a terminal and without those",
    "it is refused. Without --tools, TOOLGATE_TOOLS or a tools.json here (or up to the project's root) the model gets the built-in tool belt.",
    "--output jsonl prints one JSON event a line on stdout (request, response, tool_call, tool_result, answer,",
    "usage, error) and nothing else there. The endpoint's token usage is summed and shown at the end (stderr).",
    "--lazy-tools sends each tool as a name and a summary; its first call returns its full definition instead",
    "of running, and from then on it is sent in full (a tool with alwaysLoad: true always is).",
    "On a terminal, Ctrl-C stops the calls in flight (each answered killed_by: user) and the loop goes on to the",
    "model; a second Ctrl-C within 2 s quits (exit 130). Background jobs end when the run ends.",
    "Exit 1 when the endpoint fails, answers nonsense or the model is still calling tools after --max-steps.",
    'Example: OAI_MODEL=gpt-4o-mini toolgate --prompt "What time is it in Helsinki?"',
  ].join("\n"),
  async run(parsed, io) {
    // The implementation loads only when this command runs: every other command starts without it.
    return await (await import("./run_agent.ts")).runAgent(parsed, io);
  },
};
