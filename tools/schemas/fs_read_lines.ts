// fs_read_lines's arguments, declared once: tools.json's schema is written from this (`deno task tools-json`),
// and the tool reads its arguments by it (tools/lib/args.ts).
import type { ArgsSchema } from "../lib/args.ts";

/** The arguments of `fs_read_lines`: read lines start_line to end_line (1-based, inclusive) of a workspace text file. */
export const FS_READ_LINES_ARGS = {
  type: "object",
  properties: {
    path: {
      type: "string",
      minLength: 1,
      description: "Relative path inside the workspace, e.g. src/main.ts",
    },
    start_line: {
      type: "integer",
      minimum: 1,
      default: 1,
      description: "First line, 1-based",
    },
    end_line: {
      type: "integer",
      minimum: 0,
      default: 0,
      description: "Last line, inclusive; 0 reads to the end (at most 2000 lines per call)",
    },
  },
  required: ["path"],
  additionalProperties: false,
} as const satisfies ArgsSchema;
