// get_time: the current time in an IANA timezone, as {timezone, iso8601}. Needs no Deno permission at all.

interface Input {
  timezone?: unknown;
}

function fail(message: string): never {
  console.error(JSON.stringify({ error: message }));
  Deno.exit(1);
}

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

const raw = await new Response(Deno.stdin.readable).text();
let parsed: unknown;
try {
  parsed = JSON.parse(raw.trim() || "{}");
} catch {
  fail("arguments must be a JSON object");
}
// `null`, an array or a scalar parses fine but is no arguments object: say so rather than crash.
if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
  fail("arguments must be a JSON object");
}
const input = parsed as Input;
const zone = input.timezone;
if (typeof zone !== "string" || zone.trim() === "") fail("timezone is required, e.g. Europe/Helsinki");
try {
  new Intl.DateTimeFormat("en-US", { timeZone: zone });
} catch {
  fail(`unknown timezone ${JSON.stringify(zone)}`);
}
console.log(JSON.stringify({ timezone: zone, iso8601: isoIn(new Date(), zone) }));
