/**
 * Benchmarks loading a generated manifest of 1,000 tools with distinct schemas: the lazy load (JSONC, every rule,
 * the meta-schema check) and the `validate` load (every schema compiled). Target: under 100 ms.
 *
 * Run: `deno run -A tests/bench/manifest_bench.ts`
 *
 * @module
 */
import { join } from "node:path";
import { parseJsonc } from "../../src/manifest/jsonc.ts";
import { loadManifest } from "../../src/manifest/manifest.ts";
import { type ManifestOptions } from "../../src/manifest/manifest_types.ts";
import { seededRandom } from "../seeded_random.ts";

/** The target for validating 1,000 tools, schemas compiled. */
export const TARGET_MS = 100;
const TOOL_COUNT = 1_000;
const WARMUP = 3;
const ITERATIONS = 9;

const WORDS = [
  "path",
  "query",
  "limit",
  "offset",
  "timezone",
  "url",
  "method",
  "pattern",
  "recursive",
  "encoding",
  "branch",
  "message",
  "tags",
  "owner",
  "count",
  "since",
  "format",
  "depth",
  "language",
  "threshold",
];

/** One property schema of a realistic kind, made distinct by `tool` and `index`. */
function propertySchema(next: () => number, tool: number, index: number): Record<string, unknown> {
  const description = `Argument ${index} of tool ${tool}`;
  switch (Math.floor(next() * 7)) {
    case 0:
      return { type: "string", description, minLength: 1, maxLength: 256 + tool };
    case 1:
      return { type: "integer", description, minimum: 0, maximum: 1_000 + tool, default: index };
    case 2:
      return { type: "number", description, exclusiveMinimum: 0 };
    case 3:
      return { type: "boolean", description, default: false };
    case 4:
      return { type: "string", description, enum: ["asc", "desc", `mode_${tool}_${index}`] };
    case 5:
      return { type: "array", description, items: { type: "string", pattern: `^[a-z]{1,${8 + index}}$` } };
    default:
      return {
        type: "object",
        description,
        properties: {
          name: { type: "string" },
          value: { type: ["string", "number"] },
          [`extra_${tool}`]: { type: "string", format: "date-time" },
        },
        required: ["name"],
        additionalProperties: false,
      };
  }
}

/** A manifest of `count` tools, each with its own schema of 3 to 8 properties. */
export function generateManifest(count: number = TOOL_COUNT): { tools: Record<string, unknown>[] } {
  const next = seededRandom(20_260_101);
  const tools: Record<string, unknown>[] = [];
  for (let tool = 0; tool < count; tool++) {
    const properties: Record<string, unknown> = {};
    const names: string[] = [];
    const size = 3 + Math.floor(next() * 6);
    for (let index = 0; index < size; index++) {
      const name = `${WORDS[Math.floor(next() * WORDS.length)]}_${index}`;
      names.push(name);
      properties[name] = propertySchema(next, tool, index);
    }
    tools.push({
      name: `tool_${tool}`,
      description: `Tool number ${tool}: does one thing with ${names.join(", ")}.`,
      schema: {
        type: "object",
        properties,
        required: names.filter(() => next() < 0.5),
        additionalProperties: false,
      },
      command: [`./tools/bin/tool_${tool}`, "--mode", `m${tool % 7}`],
      timeoutSec: 1 + (tool % 30),
      envPassthrough: tool % 3 === 0 ? ["TZ", "LANG"] : [],
      readOnly: tool % 2 === 0,
      concurrent: tool % 4 === 0,
    });
  }
  return { tools };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** The median time of `task` over the iterations that follow the warm-up. */
async function measure(task: () => Promise<void> | void): Promise<number> {
  const times: number[] = [];
  for (let run = 0; run < WARMUP + ITERATIONS; run++) {
    const start = performance.now();
    await task();
    const elapsed = performance.now() - start;
    if (run >= WARMUP) times.push(elapsed);
  }
  return median(times);
}

async function load(path: string, options: ManifestOptions): Promise<void> {
  const result = await loadManifest(path, options);
  if (!result.ok) {
    throw new Error(`the generated manifest is invalid:\n${result.errors.slice(0, 5).join("\n")}`);
  }
  if (result.manifest.tools.length !== TOOL_COUNT) throw new Error("the generated manifest lost tools");
}

/**
 * Writes the generated manifest and its programs to a temp folder and measures both loads (median of several runs
 * after a warm-up), in milliseconds.
 *
 * @example
 * ```ts ignore
 * import { benchManifest } from "./manifest_bench.ts";
 * const { manifest_load_compiled_ms } = await benchManifest();
 * ```
 */
export async function benchManifest(): Promise<Record<string, number>> {
  const dir = await Deno.makeTempDir({ prefix: "toolgate_bench_" });
  try {
    const path = join(dir, "tools.json");
    await Deno.mkdir(join(dir, "tools/bin"), { recursive: true });
    await Promise.all(
      Array.from(
        { length: TOOL_COUNT },
        (_, i) => Deno.writeTextFile(join(dir, `tools/bin/tool_${i}`), "#!/bin/sh\n"),
      ),
    );
    const text = JSON.stringify(generateManifest(), null, 2);
    await Deno.writeTextFile(path, text);
    return {
      manifest_load_ms: await measure(() => load(path, {})),
      manifest_load_compiled_ms: await measure(() => load(path, { compileSchemas: true })),
      // Where the lazy load's time goes: the JSONC parse of the ~2 MB file alone.
      manifest_jsonc_parse_ms: await measure(async () => {
        if (!(await parseJsonc(text, path)).ok) throw new Error("the generated manifest does not parse");
      }),
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) {
  const results = await benchManifest();
  const labels: Record<string, string> = {
    manifest_load_ms: "loadManifest, 1,000 tools (schemas checked, compiled lazily)",
    manifest_load_compiled_ms: "loadManifest, 1,000 tools, compileSchemas: true",
    manifest_jsonc_parse_ms: "of which the JSONC parse alone",
  };
  for (const [key, ms] of Object.entries(results)) {
    const ratio = key === "manifest_jsonc_parse_ms"
      ? ""
      : ` (${(ms / TARGET_MS).toFixed(2)}x the ${TARGET_MS} ms target)`;
    console.log(`${labels[key] ?? key}: ${ms.toFixed(1)} ms${ratio}`);
  }
}
