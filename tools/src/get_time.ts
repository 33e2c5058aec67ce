// get_time: the current time in an IANA timezone, as {timezone, iso8601}. Needs no Deno permission at all.
import { readStdinArgs } from "../lib/args.ts";
import { invalidArgs, runTool } from "../lib/envelope.ts";
import { GET_TIME_ARGS } from "../schemas/get_time.ts";

const EXPECTED = "an IANA timezone, e.g. Europe/Helsinki";

/** The offset of `zone` at `instant`, as `+HH:MM`. */
function offsetOf(instant: Date, zone: string): string {
  const name = new Intl.DateTimeFormat("en-US", { timeZone: zone, timeZoneName: "longOffset" })
    .formatToParts(instant).find((part) => part.type === "timeZoneName")?.value ?? "GMT";
  const match = /GMT([+-]\d{2}):?(\d{2})?/.exec(name);
  return match ? `${match[1]}:${match[2] ?? "00"}` : "+00:00";
}

function isoIn(instant: Date, zone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    }).formatToParts(instant).map((part) => [part.type, part.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}${
    offsetOf(instant, zone)
  }`;
}

await runTool(async () => {
  const { timezone: zone } = await readStdinArgs(GET_TIME_ARGS);
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
  } catch {
    throw invalidArgs("timezone", `unknown timezone ${JSON.stringify(zone)}`, EXPECTED);
  }
  return { timezone: zone, iso8601: isoIn(new Date(), zone) };
});
