/** The `serve` command: the manifest's tools over MCP. Not built yet. @module */
import { type Command, UsageError } from "../cli.ts";

/** `toolgate serve` */
export const serveCommand: Command = {
  name: "serve",
  summary: "serve the tools over the Model Context Protocol (stdio, or HTTP with --http)",
  usage: "toolgate serve [--http PORT] [options]",
  options: {},
  run() {
    return Promise.reject(new UsageError("the MCP server is not built yet", "serve"));
  },
};
