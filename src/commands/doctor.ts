/**
 * The `doctor` command: prints the resolved setup and one line per problem with its fix (`--json` for scripts);
 * exit 1 when something the manifest needs cannot work here.
 *
 * @module
 */
import { choiceOption, type Command, EXIT, expectPositionals, flag, stringOption } from "./cli.ts";
import { SANDBOX_MODES, type SandboxMode } from "../sandbox/sandbox.ts";
import type { SetupReport } from "./setup_report.ts";
import denoJson from "../../deno.json" with { type: "json" };

/** The report as text for people: a block per concern, then the problems. */
function describe(report: SetupReport, version: string): string {
  const { manifest, agent, confinement, state } = report;
  const rows: [string, string][] = [];
  const row = (label: string, value: string) => rows.push([label, value]);
  row("manifest", `${manifest.path} (${manifest.why})`);
  row("", manifest.valid ? `valid, ${manifest.tools} tool${manifest.tools === 1 ? "" : "s"}` : "INVALID");
  row("trust", `${manifest.trust.state}: ${manifest.trust.detail}`);
  row("workspace", report.workspace);
  row(
    "model",
    agent.model.value === null
      ? "not set (OAI_MODEL or --model)"
      : `${agent.model.value} (${agent.model.from})`,
  );
  row("endpoint", `${agent.endpoint.value} (${agent.endpoint.from})`);
  row(
    "api key",
    agent.apiKey.value ? `set (${agent.apiKey.from})` : "not set (OAI_API_KEY or OPENAI_API_KEY)",
  );
  row("sandbox mode", `${confinement.mode.value} (${confinement.mode.from})`);
  const bwrap = confinement.bubblewrap;
  row(
    "bubblewrap",
    bwrap.works
      ? `${bwrap.path}, works`
      : bwrap.path === null
      ? `not found (${bwrap.reason})`
      : `${bwrap.path}, does not work here (${bwrap.reason})`,
  );
  row(
    "seccomp filter",
    confinement.seccomp === null
      ? "not tried (bubblewrap does not work here)"
      : confinement.seccomp.loads
      ? "loads (every confined call runs under it)"
      : `cannot be loaded here (${confinement.seccomp.reason})`,
  );
  row(
    "user namespaces",
    confinement.userNamespaces === null ? "unknown" : confinement.userNamespaces ? "yes" : "no",
  );
  const cg = confinement.cgroups;
  row(
    "cgroups",
    cg === null
      ? "none usable (process and memory limits fall back to rlimits)"
      : `v${cg.version}: ${[cg.pids ? "pids" : "", cg.memory ? "memory" : ""].filter(Boolean).join(", ")}`,
  );
  row("prlimit", confinement.prlimit ?? "not found (confined tools run without rlimit caps)");
  row(
    "session starter",
    confinement.sessionStart ??
      "not built (unconfined calls start through setsid and a shell, and, where bash is missing, descriptors " +
        "above 9 that whatever started toolgate left open reach the tools: docs/limits.md; `deno task install` " +
        "builds it with a C compiler)",
  );
  for (const profile of confinement.profiles) {
    const runs = profile.runs === "refused" ? "WILL NOT RUN" : profile.runs;
    row(`profile ${profile.profile}`, `${runs} (${profile.detail}): ${profile.tools.join(", ")}`);
  }
  for (const server of confinement.servers) {
    const runs = server.errors.length > 0 ? "CANNOT START" : server.runs ?? "";
    const program = server.program ?? "not found";
    const reads = server.reads.length === 0 ? "" : `; reads ${server.reads.join(", ")}`;
    row(`server ${server.server}`, `${runs} (${server.detail}${reads}): ${program}`);
  }
  row("state", state.stateDir ?? "none");
  row("config", state.configDir ?? "none");
  row("audit log", state.auditDir === null ? "none" : `${state.auditDir} (${state.auditFiles} day files)`);
  if (state.secretStore !== null) {
    const store = state.secretStore;
    row(
      "secret store",
      `${store.path} (${store.secrets} secret${store.secrets === 1 ? "" : "s"}, ${store.backend})`,
    );
  }
  const width = Math.max(...rows.map(([label]) => label.length)) + 2;
  const lines = [
    `toolgate ${version}`,
    ...rows.map(([label, value]) => `${label.padEnd(width)}${value}`),
    "",
  ];
  if (manifest.errors.length > 0) lines.push("manifest errors:", ...manifest.errors.map((e) => `  ${e}`), "");
  if (report.problems.length === 0) lines.push("no problems found");
  else {
    lines.push("problems:");
    for (const problem of report.problems) {
      lines.push(
        `  ${problem.blocking ? "error" : "warning"}: ${problem.problem}`,
        `    fix: ${problem.fix}`,
      );
    }
  }
  return lines.join("\n") + "\n";
}

/** `toolgate doctor` */
export const doctorCommand: Command = {
  name: "doctor",
  summary: "print the resolved setup (manifest, endpoint, confinement, state) and what will not work here",
  usage: "toolgate doctor [--json] [--sandbox MODE] [--tools PATH]",
  options: {
    json: { type: "boolean", help: "the report as one JSON object, for scripts" },
    sandbox: {
      type: "string",
      value: "MODE",
      help: "judge the tools as under this mode: auto (default, env TOOLGATE_SANDBOX), require, or off",
    },
  },
  details: [
    "Shows which manifest a run here uses and why, the workspace, the agent loop's model, endpoint and API key",
    "(from the environment; never a value), whether bubblewrap works here, user namespaces, cgroups and",
    "prlimit, what each permission profile the manifest uses gets here (confined, unconfined, or will not run),",
    "what each MCP server gets (its profile's reads, writes and network; confined or not; its program found),",
    "and where the state, the audit log and the secret store are. Then one line per problem with its fix.",
    "Exit 1 when something the manifest needs cannot work here (an invalid manifest, a missing program, a tool",
    "that needs confinement to write or reach the network where bubblewrap does not work); warnings alone exit 0.",
  ].join("\n"),
  async run(parsed, io) {
    expectPositionals(parsed, 0, "doctor");
    const given = stringOption(parsed, "sandbox");
    const sandbox = given === undefined
      ? undefined
      : choiceOption(parsed, "sandbox", SANDBOX_MODES, "auto", "doctor") as SandboxMode;
    const { setupReport } = await import("./setup_report.ts");
    const report = await setupReport({
      env: io.env,
      readEnv: io.readEnv,
      cwd: io.cwd,
      tools: stringOption(parsed, "tools"),
      sandbox,
      allowAbsoluteCommands: flag(parsed, "allow-absolute-commands"),
    });
    await io.stdout(
      flag(parsed, "json") ? JSON.stringify(report, null, 2) + "\n" : describe(report, denoJson.version),
    );
    return report.problems.some((problem) => problem.blocking) ? EXIT.failure : EXIT.ok;
  },
};
