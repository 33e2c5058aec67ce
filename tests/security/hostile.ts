/**
 * Shared by the attack tests on what leaves toolgate (issue 11): the hostile fixture manifest (a tool that prints
 * a passthrough secret, one that prints terminal escapes, a schema with catastrophic patterns), the agent CLI run
 * against a scripted endpoint, and the search for a secret in any of its forms.
 *
 * @module
 */
import { join } from "node:path";
import { secretForms } from "../../src/state/redact.ts";
import { type ChatServer, type Script, startChatServer } from "../agent/chat_server.ts";
import { type CliResult, runAgentCli, scriptedRunArgs } from "../agent/run_cli.ts";
import { realTempDir } from "./helpers.ts";
import { FIXTURES } from "../support.ts";

/** The hostile fixture manifest. */
export const HOSTILE: string = join(FIXTURES, "hostile", "tools.json");

/** The arguments of `toolgate serve` over the hostile manifest, unconfined, no audit, in `dir`. */
export function serveHostileArgs(dir: string): string[] {
  return ["serve", "--tools", HOSTILE, "--sandbox", "off", "--no-audit", "--cwd", dir];
}

/** A PEM key: a quote, a backslash, newlines, a tab and characters past ASCII. */
export const PEM_SECRET = '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADAN"BgkqhkiG9w0\\BAQEFAASC\tBKcwgg€é\n' +
  "-----END PRIVATE KEY-----\n";
/** A JSON credential: JSON text, with an escaped newline inside, as a variable's value. */
export const JSON_SECRET = JSON.stringify({
  type: "service_account",
  private_key: "-----BEGIN KEY-----\nZmFrZS1rZXktYm9keQ\n-----END KEY-----\n",
  client_email: "robot-7f3a@example.iam",
});

/**
 * Where `text` shows `secret`: any of its forms (raw, JSON-escaped once or twice, ASCII-escaped), or any run of 8
 * characters of it that holds a letter or a digit (a fragment a cut or a partial mask left behind).
 */
export function leaksOf(text: string, secret: string): string[] {
  const found = secretForms(secret).filter((form) => text.includes(form));
  for (const line of secret.split(/[\n\t"\\]/)) {
    for (let i = 0; i + 8 <= line.length; i++) {
      const piece = line.slice(i, i + 8);
      if (/[A-Za-z0-9]/.test(piece) && !/^-+[A-Z ]*-*$/.test(piece) && text.includes(piece)) {
        found.push(piece);
      }
    }
  }
  return [...new Set(found)];
}

/** An agent run: its output, the scripted server (with the requests it received) and its folders. */
export interface AgentRun extends CliResult {
  readonly server: ChatServer;
  readonly dir: string;
  /** XDG_STATE_HOME of the run: the audit log is under it. */
  readonly state: string;
  /** Stops the server and removes the folders. */
  cleanup(): Promise<void>;
}

/**
 * Runs `toolgate --prompt hi` over the hostile manifest (or `manifest`) against a server playing `script`; `env`
 * may place the state folder elsewhere (then `state` is an empty folder of its own).
 */
export async function runAgent(
  script: Script,
  args: readonly string[] = [],
  env: Record<string, string> = {},
  manifest: string = HOSTILE,
): Promise<AgentRun> {
  const server = startChatServer(script);
  const dir = await realTempDir("toolgate_hostile_");
  const state = await realTempDir("toolgate_hostile_state_");
  const result = await runAgentCli([...scriptedRunArgs(server.baseUrl, manifest, dir), ...args], {
    env: { XDG_STATE_HOME: state, ...env },
    cwd: dir,
  });
  return {
    ...result,
    server,
    dir,
    state,
    cleanup: async () => {
      await server.close();
      await Deno.remove(dir, { recursive: true });
      await Deno.remove(state, { recursive: true });
    },
  };
}

/** Every file under `dir`, as text. */
export async function allText(dir: string): Promise<string> {
  let out = "";
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) out += await allText(path);
    else if (entry.isFile) out += await Deno.readTextFile(path).catch(() => "");
  }
  return out;
}
