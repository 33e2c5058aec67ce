/** The `serve` command: the manifest's tools over MCP, on stdio or (with `--http`) Streamable HTTP. @module */
import type { Command } from "./cli.ts";
import { CALL_LIMITS, SESSION_LIMITS } from "../mcp/limits.ts";
import { JOB_CAPS } from "../run/job_owners.ts";
import { APPROVAL_OPTIONS } from "./approval_options.ts";
import { EXECUTOR_OPTIONS } from "./executor_options.ts";

/** `toolgate serve` */
export const serveCommand: Command = {
  name: "serve",
  summary: "serve the tools over the Model Context Protocol (stdio, or HTTP with --http)",
  usage:
    "toolgate serve [--http PORT [--host HOST] [--token TOKEN]] [--yes | --allow-tools A,B | --approve-hosts H] [options]",
  options: {
    http: {
      type: "string",
      value: "PORT",
      help: "serve Streamable HTTP on PORT (0: a free one) instead of stdio",
    },
    host: { type: "string", value: "HOST", help: "the interface --http binds (default 127.0.0.1)" },
    console: {
      type: "string",
      value: "[PORT]",
      help:
        "serve a web console on 127.0.0.1:PORT (none or 0: a free one); its one-time link is printed on stderr",
    },
    token: {
      type: "string",
      value: "TOKEN",
      help: "the bearer token HTTP clients must send (default env TOOLGATE_MCP_TOKEN; required with --http)",
    },
    "max-calls": {
      type: "string",
      value: "N",
      help:
        `most calls in flight across all sessions (default ${CALL_LIMITS.maxCalls}); more wait their turn`,
    },
    "max-session-calls": {
      type: "string",
      value: "N",
      help:
        `most calls in flight in one session (default ${CALL_LIMITS.maxSessionCalls}); more wait their turn`,
    },
    "max-session-jobs": {
      type: "string",
      value: "N",
      help: `most background jobs one session runs at once (default ${JOB_CAPS.perOwner}); more are refused`,
    },
    "max-jobs": {
      type: "string",
      value: "N",
      help: `most background jobs running at once across all sessions (default ${JOB_CAPS.total})`,
    },
    "max-sessions": {
      type: "string",
      value: "N",
      help: `most HTTP sessions open at once (default ${SESSION_LIMITS.maxSessions}); more are refused (503)`,
    },
    "session-idle": {
      type: "string",
      value: "SEC",
      help: `close an HTTP session idle this long (default ${SESSION_LIMITS.idleSec})`,
    },
    "sse-poll": {
      type: "string",
      value: "SEC",
      help:
        "close a call's SSE stream after SEC; the client resumes it with Last-Event-ID (default 0: never)",
    },
    server: {
      type: "string",
      value: "NAME",
      help:
        "serve only the tools of this MCP server of mcpServers, by the server's own tool names (a host's entry per server: docs/import.md)",
    },
    "allow-store-secrets": {
      type: "boolean",
      help:
        "let store_secret write the secret store (default: a value lives in its MCP session's memory only)",
    },
    ...APPROVAL_OPTIONS,
    ...EXECUTOR_OPTIONS,
  },
  details: [
    "Over stdio (the default) stdout carries protocol messages only; the server stops when stdin ends.",
    "With --http the endpoint is http://HOST:PORT/mcp, and every request needs `Authorization: Bearer TOKEN`;",
    "the bound address is printed on stderr. Prefer TOOLGATE_MCP_TOKEN to --token: arguments are visible to",
    "other users in the process list.",
    "Read-only tools that stay on the machine always run. A call that writes, runs programs or can reach the",
    "network runs when --yes, --allow-tools or (http_fetch to a listed host) --approve-hosts approves it; else the",
    "client's user is asked through MCP elicitation when the client declared it, and it is `rejected` otherwise.",
    "Each session has its own scheduler: calls of concurrent tools side by side, any other call alone, in arrival",
    "order; calls past --max-session-calls or --max-calls wait their turn (a cancelled one leaves the line).",
    "Over HTTP a client that disconnects cancels its calls; a browser Origin other than this host or loopback",
    "gets 403.",
    "store_secret keeps a value in its session's memory only; --allow-store-secrets lets it write the secret",
    "store (the form says when it would replace a stored value, and the audit line says it did).",
    "A client's cancellation ends the call's tree. Background jobs (exec with background: true) belong to the",
    "session that started them: no other session sees them, and they end (killed_by: session) when it closes,",
    "is deleted (HTTP DELETE), expires (--session-idle) or its client disconnects (stdio).",
    "For the operator, stderr has a line when each job starts and ends (its session, pid and command);",
    "`kill -TERM -- -PID` ends one job's tree, and SIGINT or SIGTERM ends every tool's tree, background jobs",
    "included, and stops the server.",
    "--console [PORT] serves a web console on loopback (docs/console.md): the calls live, each with Stop while it",
    "runs, approvals with a click (a call no client can be asked about waits for it, up to the call's timeout),",
    "background jobs with Stop, the audit log (by tool, outcome and time), confinement per tool, and trust with",
    "a Trust button. Open it through the one-time link printed on stderr.",
    "Example (an MCP host's config, with toolgate installed by `deno task install`; the README has it whole):",
    '  {"command": "toolgate", "args": ["serve", "--cwd", "/path/to/your/project"]}',
  ].join("\n"),
  async run(parsed, io) {
    // The implementation loads only when this command runs: every other command starts without it.
    return await (await import("./serve_mcp.ts")).serveMcp(parsed, io);
  },
};
