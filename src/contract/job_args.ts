// job's arguments, declared once: tools.json's schema is written from this (`deno task tools-json`), and
// toolgate, which answers the job tool itself (src/run/jobs.ts), reads its arguments by it (tools/lib/args.ts).
import type { ArgsSchema } from "./args.ts";

/** The arguments of `job`: poll a background job, wait for it to end, or kill its whole process tree. */
export const JOB_ARGS = {
  type: "object",
  properties: {
    action: {
      type: "string",
      enum: ["poll", "wait", "kill"],
      description:
        "poll: its state and the log's last lines now; wait: the same once it ends or timeout_ms passes; kill: end it",
    },
    job_id: {
      type: "string",
      description: "The job_id the background exec returned, e.g. job-1",
    },
    timeout_ms: {
      type: "integer",
      minimum: 0,
      maximum: 600000,
      default: 30000,
      description: "Longest time wait waits",
    },
    tail_lines: {
      type: "integer",
      minimum: 0,
      maximum: 2000,
      default: 40,
      description: "How many of the log's last lines to return",
    },
  },
  required: ["action", "job_id"],
  additionalProperties: false,
} as const satisfies ArgsSchema;
