/** The `serve` command: the manifest's tools over MCP, on stdio or (with `--http`) Streamable HTTP. @module */
import denoJson from "../../deno.json" with { type: "json" };
import {
  type Command,
  EXIT,
  expectPositionals,
  flag,
  type Io,
  type ParsedArgs,
  parseNumber,
  stringOption,
  UsageError,
} from "../cli.ts";
import type { Manifest } from "../manifest.ts";
import type { ApprovalPolicy } from "../mcp/approval.ts";
import { type HttpServing, serveHttp } from "../mcp/http.ts";
import { ToolService } from "../mcp/server.ts";
import { serveStdio } from "../mcp/stdio.ts";
import type { ProcessRegistry } from "../process_tree.ts";
import { EXECUTOR_OPTIONS, executorFromArgs } from "./executor_options.ts";
import { loadForCommand } from "./load.ts";

/** The exit codes of a stop by signal, as the shell reports them. */
const SIGNAL_EXIT = { SIGINT: 130, SIGTERM: 143 } as const;
type StopSignal = keyof typeof SIGNAL_EXIT;

/** `toolgate serve` */
export const serveCommand: Command = {
  name: "serve",
  summary: "serve the tools over the Model Context Protocol (stdio, or HTTP with --http)",
  usage: "toolgate serve [--http PORT [--host HOST] [--token TOKEN]] [--yes | --allow-tools A,B] [options]",
  options: {
    http: {
      type: "string",
      value: "PORT",
      help: "serve Streamable HTTP on PORT (0: a free one) instead of stdio",
    },
    host: { type: "string", value: "HOST", help: "the interface --http binds (default 127.0.0.1)" },
    token: {
      type: "string",
      value: "TOKEN",
      help: "the bearer token HTTP clients must send (default env TOOLGATE_MCP_TOKEN; required with --http)",
    },
    yes: { type: "boolean", help: "let every tool run, including those that are not read-only" },
    "allow-tools": {
      type: "string",
      multiple: true,
      value: "A,B",
      help: "let these tools run although they are not read-only (repeatable)",
    },
    ...EXECUTOR_OPTIONS,
  },
  details: [
    "Over stdio (the default) stdout carries protocol messages only; the server stops when stdin ends.",
    "With --http the endpoint is http://HOST:PORT/mcp, and every request needs `Authorization: Bearer TOKEN`;",
    "the bound address is printed on stderr. Prefer TOOLGATE_MCP_TOKEN to --token: arguments are visible to",
    "other users in the process list.",
    "Read-only tools always run; any other tool is answered `rejected` unless --yes or --allow-tools names it.",
    "SIGINT or SIGTERM ends the tools' process trees and stops the server.",
    'Example (an MCP host\'s config): {"command": "deno", "args": ["task", "agent", "serve"]}',
  ].join("\n"),
  async run(parsed, io) {
    expectPositionals(parsed, 0, "serve");
    const http = httpSettings(parsed, io);
    const manifest = await loadForCommand(parsed, io);
    if (!manifest) return EXIT.failure;
    const approval = approvalPolicy(parsed, manifest);
    // The server's own shutdown answers the calls in flight before the trees end: the registry must not exit first.
    const { executor, registry } = await executorFromArgs(parsed, io, manifest, "serve", undefined, false);
    const onError = (message: string) => void io.stderr(message + "\n");
    const service = new ToolService({ executor, approval, version: denoJson.version, onError });
    const stop = untilSignal();
    try {
      let stopped: StopSignal | undefined;
      if (http) {
        let serving: HttpServing;
        try {
          serving = serveHttp(service, { ...http, onError });
        } catch (error) {
          const problem = listenProblem(error, http);
          if (problem === undefined) throw error;
          await io.stderr(`toolgate: ${problem}\n`);
          return EXIT.failure;
        }
        await io.stderr(`toolgate: MCP server listening on ${serving.url}\n`);
        stopped = await Promise.race([stop.signal, serving.finished.then(() => undefined)]);
        await shutdown(service, registry, serving.close);
      } else {
        const serving = await serveStdio(service);
        stopped = await Promise.race([stop.signal, serving.ended.then(() => undefined)]);
        await shutdown(service, registry, serving.close);
      }
      return stopped === undefined ? EXIT.ok : SIGNAL_EXIT[stopped];
    } finally {
      stop.dispose();
    }
  },
};

/** `--http`, `--host` and the token, checked; `undefined` for stdio. */
function httpSettings(
  parsed: ParsedArgs,
  io: Io,
): { hostname: string; port: number; token: string } | undefined {
  const port = stringOption(parsed, "http");
  const host = stringOption(parsed, "host");
  const tokenOption = stringOption(parsed, "token");
  if (port === undefined) {
    if (host !== undefined) throw new UsageError("--host needs --http", "serve");
    if (tokenOption !== undefined) throw new UsageError("--token needs --http", "serve");
    return undefined;
  }
  const number = parseNumber(port, "--http", "serve", { integer: true, min: 0, exclusive: false });
  if (number > 65535) {
    throw new UsageError(`--http must be a port number 0-65535 (got ${JSON.stringify(port)})`, "serve");
  }
  const hostname = host ?? "127.0.0.1";
  if (hostname.trim() === "") throw new UsageError("--host must not be empty", "serve");
  const token = (tokenOption ?? io.env.TOOLGATE_MCP_TOKEN ?? "").trim();
  if (token === "") {
    throw new UsageError(
      "--http needs a bearer token: set TOOLGATE_MCP_TOKEN (or pass --token); clients send it as " +
        "`Authorization: Bearer TOKEN`",
      "serve",
    );
  }
  return { hostname, port: number, token };
}

/** Why the socket cannot be bound (in use, no such address, no permission), or `undefined` for a bug. */
function listenProblem(error: unknown, http: { hostname: string; port: number }): string | undefined {
  const where = `${http.hostname}:${http.port}`;
  if (error instanceof Deno.errors.NotCapable) {
    // Port 0 is any free port: only the host can be granted ahead.
    const grant = http.port === 0 ? http.hostname : where;
    return `cannot listen on ${where}: Deno's net permission is missing; run with --allow-net=${grant}`;
  }
  const known = error instanceof Deno.errors.AddrInUse || error instanceof Deno.errors.AddrNotAvailable ||
    error instanceof Deno.errors.PermissionDenied;
  return known ? `cannot listen on ${where}: ${(error as Error).message}` : undefined;
}

/** `--yes` and `--allow-tools`; a name the manifest does not have is a usage error (a typo would deny silently). */
function approvalPolicy(parsed: ParsedArgs, manifest: Manifest): ApprovalPolicy {
  const raw = parsed.values["allow-tools"];
  const names = (Array.isArray(raw) ? raw : typeof raw === "string" ? [raw] : [])
    .flatMap((value) => value.split(","))
    .map((name) => name.trim())
    .filter((name) => name !== "");
  for (const name of names) {
    if (!manifest.byName.has(name)) {
      throw new UsageError(
        `--allow-tools names ${JSON.stringify(name)}, which the manifest does not have`,
        "serve",
      );
    }
  }
  return { yes: flag(parsed, "yes"), allowTools: new Set(names) };
}

/**
 * Stops the service (the calls in flight are stopped and answered, within the kill grace and a second), closes
 * the transport, and ends any tree still registered.
 */
async function shutdown(
  service: ToolService,
  registry: ProcessRegistry,
  close: () => Promise<void>,
): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const grace = new Promise<void>((resolve) => timer = setTimeout(resolve, registry.graceMs + 1000));
  await Promise.race([service.stop(), grace]);
  clearTimeout(timer);
  await close();
  await registry.endAll();
}

/** SIGINT and SIGTERM as a promise, while the server runs. */
function untilSignal(): { signal: Promise<StopSignal>; dispose: () => void } {
  const { promise, resolve } = Promise.withResolvers<StopSignal>();
  if (Deno.build.os === "windows") return { signal: promise, dispose: () => {} };
  const onInt = () => resolve("SIGINT");
  const onTerm = () => resolve("SIGTERM");
  Deno.addSignalListener("SIGINT", onInt);
  Deno.addSignalListener("SIGTERM", onTerm);
  return {
    signal: promise,
    dispose: () => {
      Deno.removeSignalListener("SIGINT", onInt);
      Deno.removeSignalListener("SIGTERM", onTerm);
    },
  };
}
