/**
 * toolgate as a library: what a Deno program needs to load a `tools.json` manifest, run its tools through the same executor the CLI, the
 * agent loop and the MCP server use (preflight, the one approval policy, confinement, timeouts, tree kill, audit),
 * schedule calls as they do, and read or write the result envelopes.
 *
 * @example Run one tool
 * ```ts
 * import assert from "node:assert/strict";
 * import { Executor, loadManifest, serialize } from "./mod.ts";
 *
 * const loaded = await loadManifest("tools.json");
 * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
 * const executor = new Executor({
 *   manifest: loaded.manifest,
 *   env: { PATH: "/usr/bin:/bin", HOME: Deno.env.get("HOME") ?? "/root" }, // HOME: where its state lives
 *   cwd: Deno.cwd(),
 *   auditDir: null,
 * });
 * const envelope = await executor.call("get_time", '{"timezone":"UTC"}');
 * assert.ok(envelope.ok, serialize(envelope));
 * // Where bubblewrap is missing the envelope also carries a warning that the tool ran unconfined.
 * assert.match(serialize(envelope), /^\{"ok":true,"result":\{"timezone":"UTC","iso8601":"[^"]+"\},"tool":"get_time"[,}]/);
 * ```
 *
 * @example Calls a model chose: the approval policy decides, as in the agent loop
 * ```ts
 * import assert from "node:assert/strict";
 * import { Executor, loadManifest, Policy } from "./mod.ts";
 *
 * const loaded = await loadManifest("tools.json");
 * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
 * const executor = new Executor({ manifest: loaded.manifest, env: { PATH: "/usr/bin:/bin" }, cwd: Deno.cwd(), auditDir: null });
 * // Writes, programs and the network need approval: here only fs_write_file, and http_fetch to one host.
 * const policy = new Policy({ allowTools: ["fs_write_file"], approveHosts: [{ host: "api.example.com" }] });
 * const envelope = await executor.call("exec", '{"argv":["true"]}', { policy });
 * assert.ok(!envelope.ok); // nobody approved it
 * assert.equal(envelope.kind, "rejected");
 * ```
 *
 * @example A person's stop: the call's tree ends, and its envelope says `killed_by: "user"`
 * ```ts
 * import assert from "node:assert/strict";
 * import { Executor, loadManifest, UserStop } from "./mod.ts";
 *
 * const loaded = await loadManifest("tools.json");
 * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
 * const executor = new Executor({ manifest: loaded.manifest, env: { PATH: "/usr/bin:/bin" }, cwd: Deno.cwd(), auditDir: null });
 * const stop = new AbortController();
 * setTimeout(() => stop.abort(new UserStop("the person pressed stop")), 200);
 * const envelope = await executor.call("exec", '{"argv":["sleep","5"]}', { signal: stop.signal });
 * assert.ok(!envelope.ok);
 * // unavailable where it cannot be confined
 * assert.ok(envelope.kind === "unavailable" || envelope.killed_by === "user", envelope.message);
 * ```
 *
 * @example Hand the tools to a model API
 * ```ts
 * import assert from "node:assert/strict";
 * import { exportTools, loadManifest } from "./mod.ts";
 *
 * const loaded = await loadManifest("tools.json");
 * if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
 * const tools = exportTools(loaded.manifest, "openai"); // or "anthropic", "mcp", "names"
 * assert.equal(tools.length, loaded.manifest.tools.length);
 * ```
 *
 * @module
 */
import { loadSchemaEngine } from "./manifest/schema.ts";

// The library checks schemas synchronously (validateManifest, the executor's preflight): its engine loads here,
// once, when the library is imported. (The CLI loads it only when a command needs it.)
await loadSchemaEngine();

export {
  asEnvelope,
  type ContentBlock,
  type Denial,
  DENIAL_KINDS,
  type DenialKind,
  type Envelope,
  failure,
  FAILURE_KINDS,
  type FailureEnvelope,
  type FailureKind,
  failureMessage,
  type FailureOptions,
  isError,
  isSuccess,
  type JsonValue,
  MODEL_TEXT_LIMIT,
  serialize,
  success,
  type SuccessEnvelope,
  type SuccessOptions,
  successPayload,
  truncateForModel,
  withDenials,
} from "./contract.ts";
export { loadManifest, validateManifest } from "./manifest/manifest.ts";
export {
  type Manifest,
  type ManifestOptions,
  type ManifestResult,
  type TaskSupport,
  type ToolSpec,
} from "./manifest/manifest_types.ts";
export type { PermissionProfile, ProfileResult, ResourceLimits } from "./manifest/profiles.ts";
export type { PinnedProgram } from "./manifest/file_pins.ts";
export type { CredentialBinding } from "./manifest/credentials.ts";
export type { ServerSpec } from "./manifest/server_spec.ts";
export type { ToolDefinition } from "./manifest/pins.ts";
export type { Asked, LogLevel, SamplingRequest, ToolEvent, ToolProtocol } from "./manifest/tool_messages.ts";
export type {
  ElicitAnswer,
  QuestionContext,
  QuestionHandlers,
  RootsAnswer,
  SamplingAnswer,
  UrlQuestion,
} from "./run/tool_questions.ts";
export type {
  OfferCapabilities,
  OfferChanges,
  OfferLink,
  OfferList,
  PromptAsking,
  ServerOffers,
} from "./run/offer_link.ts";
export type { JobEvent, JobView } from "./run/jobs.ts";
export type { JobCaps } from "./run/job_owners.ts";
export {
  type Answer,
  type ApprovalQuestion,
  type ApprovedBy,
  type Ask,
  type DecideOptions,
  OWN_COMMAND,
  Policy,
  type PolicyOptions,
  type Verdict,
} from "./policy/policy.ts";
export type { CallRisk } from "./policy/risk.ts";
export type { Destination, HostEntry } from "./contract/host_list.ts";
export { CallLimit, type Release, Scheduler, type SchedulerOptions } from "./run/scheduler.ts";
export type { ControlPlane } from "./sandbox/control_plane.ts";
export type { CallDefaults, PoolAnswer, PoolRequest, RelayTarget, ToolPool } from "./run/tool_pool.ts";
export { type Redaction, redactionFor, type Redactor } from "./state/redact.ts";
export { type StopButton, UserStop } from "./process/stop.ts";
export {
  type ChatFacts,
  type ChatOutcome,
  type ChatSpan,
  NO_TRACING,
  openTracing,
  type SpanRole,
  type ToolCallFacts,
  type TraceCarrier,
  type TraceSpan,
  type Tracing,
} from "./run/tracing.ts";
export { Executor } from "./run/executor.ts";
export type { CallLimits, CallOptions, ExecutorOptions } from "./run/call_options.ts";
export { EXECUTOR_DEFAULTS } from "./process/executor_defaults.ts";
export type { Prepared, PreparedCall } from "./policy/prepared_call.ts";
export { SANDBOX_MODES, type SandboxMode } from "./sandbox/sandbox.ts";
export {
  type AnthropicTool,
  EXPORT_FORMATS,
  type ExportFormat,
  exportTools,
  type McpTool,
  type OpenAITool,
} from "./manifest/tool_definitions.ts";
