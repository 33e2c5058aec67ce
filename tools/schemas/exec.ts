// exec's arguments, declared once: tools.json's schema is written from this (`deno task tools-json`),
// and the tool reads its arguments by it (tools/lib/args.ts).
import type { ArgsSchema } from "../lib/args.ts";

/** The arguments of `exec`: run a program from an argv, or a shell command line with pipefail, in a workspace directory. */
export const EXEC_ARGS = {
  type: "object",
  properties: {
    argv: {
      type: "array",
      items: {
        type: "string",
      },
      default: [],
      description: 'Program and arguments, no shell, e.g. ["git", "status"]; give argv or shell',
      "x-toolgate-risk": true,
    },
    shell: {
      type: "string",
      default: "",
      description:
        'Command line for bash with pipefail, e.g. "git log --oneline | head -n 5"; give argv or shell',
      "x-toolgate-risk": true,
    },
    cwd: {
      type: "string",
      default: ".",
      description: "Relative working directory, e.g. src",
      "x-toolgate-risk": true,
    },
    timeout_ms: {
      type: "integer",
      minimum: 1,
      maximum: 3600000,
      default: 30000,
      description: "Kill the program after this long (at most an hour)",
    },
    idle_timeout_ms: {
      type: "integer",
      minimum: 0,
      maximum: 3600000,
      default: 0,
      description: "Kill the program after this long without output on stdout or stderr (0: no idle limit)",
    },
    background: {
      type: "boolean",
      default: false,
      description: "Start it as a background job and return its job_id, pid and log_file at once",
      "x-toolgate-risk": true,
    },
    env: {
      type: "array",
      default: [],
      description: 'Variables to add to PATH and HOME, e.g. [{"name": "CI", "value": "1"}]',
      items: {
        type: "object",
        properties: {
          name: {
            type: "string",
            pattern: "^[A-Za-z_][A-Za-z0-9_]*$",
          },
          value: {
            type: "string",
          },
        },
        required: ["name", "value"],
        additionalProperties: false,
      },
      "x-toolgate-risk": true,
    },
    stdin: {
      type: "string",
      default: "",
      description: "Text to write to the program's stdin, e.g. 1 2 3",
      "x-toolgate-risk": true,
    },
    max_output_chars: {
      type: "integer",
      minimum: 200,
      maximum: 1000000,
      default: 20000,
      description: "Longer stdout or stderr keeps its head and tail",
    },
  },
  additionalProperties: false,
} as const satisfies ArgsSchema;
