// get_time's arguments, declared once: tools.json's schema is written from this (`deno task tools-json`),
// and the tool reads its arguments by it (tools/lib/args.ts).
import type { ArgsSchema } from "../lib/args.ts";

/** The arguments of `get_time`: get the current time in an IANA timezone. */
export const GET_TIME_ARGS = {
  type: "object",
  properties: {
    timezone: {
      type: "string",
      minLength: 1,
      description: "IANA timezone, e.g. Europe/Helsinki",
    },
  },
  required: ["timezone"],
  additionalProperties: false,
} as const satisfies ArgsSchema;
