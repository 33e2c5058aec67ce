/** The `secrets` command: set, list and remove the secrets toolgate gives tools by name. @module */
import { type Command, EXIT, expectPositionals, type Io, UsageError } from "./cli.ts";

const ACTIONS = ["set", "list", "rm"] as const;

/** `toolgate secrets set NAME | list | rm NAME` */
export const secretsCommand: Command = {
  name: "secrets",
  summary: "set, list or remove the secrets tools receive by name (toolgate secrets set NAME)",
  usage: "toolgate secrets set NAME | toolgate secrets list | toolgate secrets rm NAME",
  options: {},
  details: [
    "set reads the value from the terminal without echo, or from stdin when it is not a terminal",
    '(printf %s "$TOKEN" | toolgate secrets set GITHUB_TOKEN); list prints names and when each was set, never',
    'a value. A tool receives a secret it declares ("secrets": ["GITHUB_TOKEN"]) as a variable, from the store',
    "first, then from toolgate's environment. The store is $XDG_CONFIG_HOME/toolgate/secrets.json (0600), each",
    "value encrypted with a key kept in the desktop keyring (secret-tool) where there is one, else in",
    "$XDG_STATE_HOME/toolgate/secrets.key (0600).",
  ].join("\n"),
  async run(parsed, io) {
    const [action, rawName] = parsed.positionals;
    if (action === undefined || !(ACTIONS as readonly string[]).includes(action)) {
      throw new UsageError(
        action === undefined
          ? "secrets needs an action: set, list or rm"
          : `unknown action ${JSON.stringify(action)} (set, list or rm)`,
        "secrets",
      );
    }
    expectPositionals(parsed, action === "list" ? 1 : 2, "secrets");
    const { SecretStore, checkSecretName } = await import("../state/secret_store.ts");
    const store = new SecretStore({ env: io.env });
    if (action === "list") {
      const secrets = store.list();
      for (const secret of secrets) await io.stdout(`${secret.name}\t${secret.setAt}\n`);
      // Said on stderr, so that a script reading the list still reads nothing.
      if (secrets.length === 0) {
        await io.stderr("toolgate: no secret is stored (toolgate secrets set NAME)\n");
      }
      return EXIT.ok;
    }
    if (rawName === undefined) throw new UsageError(`secrets ${action} needs a NAME`, "secrets");
    let name: string;
    try {
      name = checkSecretName(rawName.trim().toUpperCase());
    } catch (error) {
      throw new UsageError((error as Error).message, "secrets");
    }
    if (action === "rm") {
      if (store.remove(name)) {
        await io.stderr(`toolgate: removed the secret ${name}\n`);
        return EXIT.ok;
      }
      await io.stderr(`toolgate: no secret named ${name} is stored\n`);
      return EXIT.failure;
    }
    const value = await readValue(name, io);
    if (value === null || value === "") {
      await io.stderr(`toolgate: no value given; ${name} was not stored\n`);
      return EXIT.failure;
    }
    await store.set(name, value);
    const where = store.keySource() === "keyring"
      ? "its key in the desktop keyring"
      : `its key in ${store.keyPath}`;
    await io.stderr(`toolgate: stored the secret ${name} in ${store.path} (encrypted, ${where})\n`);
    return EXIT.ok;
  },
};

/** The value, typed without echo on a terminal, or the whole of stdin less one final line break. */
async function readValue(name: string, io: Io): Promise<string | null> {
  const { readHiddenLine, secretFromText } = await import("../ui/secret_input.ts");
  if (io.interactive) return await readHiddenLine(`Value of ${name} (typing is not shown): `, io.stderr);
  return secretFromText(await io.stdin());
}
