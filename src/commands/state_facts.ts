/**
 * What doctor says of toolgate's own files: the state and configuration folders, the audit log's folder and its
 * files, the secret store and how its key is kept. Read by the setup report (`setup_report.ts`).
 *
 * @module
 */
import { auditDirFor, configRoot, stateRoot } from "../state/state.ts";
import type { Problem, SetupReport } from "./setup_report.ts";

/**
 * Where state, the audit log and the secret store are, and their trouble (added to `problems`).
 *
 * @example Not run as a doc test: it reads the user's own state folders.
 * ```ts ignore
 * import { stateFacts } from "./state_facts.ts";
 * const problems: { problem: string; fix: string; blocking: boolean }[] = [];
 * const facts = await stateFacts(Deno.env.toObject(), Deno.cwd(), problems);
 * ```
 */
export async function stateFacts(
  env: Readonly<Record<string, string>>,
  cwd: string,
  problems: Problem[],
): Promise<SetupReport["state"]> {
  let stateDir: string | null = null;
  let configDir: string | null = null;
  try {
    stateDir = stateRoot(env);
    configDir = configRoot(env);
  } catch (error) {
    problems.push({
      problem: (error as Error).message,
      fix: "set HOME (or XDG_STATE_HOME and XDG_CONFIG_HOME) to an absolute path",
      blocking: true,
    });
    return { stateDir, configDir, auditDir: null, auditFiles: 0, secretStore: null };
  }
  let auditDir: string | null = null;
  let auditFiles = 0;
  try {
    auditDir = auditDirFor(env, await Deno.realPath(cwd));
    for (const entry of Deno.readDirSync(auditDir)) if (/^\d{8}\.log$/.test(entry.name)) auditFiles++;
  } catch {
    // No call was audited here yet.
  }
  const { SecretStore } = await import("../state/secret_store.ts");
  const store = new SecretStore({ env });
  let secretStore: SetupReport["state"]["secretStore"];
  try {
    const backend = store.keySource() === "keyring"
      ? "key in the desktop keyring (secret-tool)"
      : `key in ${store.keyPath}`;
    secretStore = { path: store.path, backend, secrets: store.list().length };
  } catch (error) {
    secretStore = { path: store.path, backend: "unreadable", secrets: 0 };
    problems.push({
      problem: `the secret store cannot be read: ${(error as Error).message}`,
      fix: "fix or move the file named (toolgate never changes it)",
      blocking: false,
    });
  }
  return { stateDir, configDir, auditDir, auditFiles, secretStore };
}
