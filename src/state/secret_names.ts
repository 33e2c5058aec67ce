/** Which variable names mark their values as secrets (a passthrough `TZ` is none). @module */

/**
 * The words that mark a variable's name as naming a secret, matched against each part of the name (split at `_`,
 * `-`, `.` and a lower-to-upper case change), in any case. `CERT` is not one: certificates are public, and their
 * variables (`SSL_CERT_FILE`) hold paths.
 */
const SECRET_WORDS = new Set([
  "KEY",
  "KEYS",
  "TOKEN",
  "TOKENS",
  "SECRET",
  "SECRETS",
  "PASSWORD",
  "PASSWORDS",
  "PASSWD",
  "PASS",
  "PASSPHRASE",
  "PWD",
  "CREDENTIAL",
  "CREDENTIALS",
  "CREDS",
  "AUTH",
  "AUTHORIZATION",
  "COOKIE",
  "COOKIES",
  "SESSION",
  "PRIVATE",
  "SIGNATURE",
  "DSN",
]);
/** A name part ending in one of these is a secret's too: `APIKEY`, `GHTOKEN`, `CLIENTSECRET`, `DBPASSWORD`. */
const SECRET_ENDINGS = ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD"];
/**
 * Variables whose names hold a secret's word but whose values are not secrets: the working directory, the
 * desktop session's ids and sockets. Masking them would garble every path they appear in.
 */
const NOT_SECRET = new Set([
  "PWD",
  "OLDPWD",
  "SSH_AUTH_SOCK",
  "DBUS_SESSION_BUS_ADDRESS",
  "SESSION_MANAGER",
  "DESKTOP_SESSION",
  "GNOME_DESKTOP_SESSION_ID",
]);

/**
 * Whether a variable's name marks its value as a secret: a part of it (split at `_`, `-`, `.` and where lower
 * case turns upper) is one of KEY, TOKEN, SECRET, PASSWORD, PASSWD, PASS, PASSPHRASE, PWD, CREDENTIAL(S), CREDS,
 * AUTH, AUTHORIZATION, COOKIE, SESSION, PRIVATE, SIGNATURE, DSN (or a plural), or ends in KEY, TOKEN, SECRET,
 * PASSWORD or PASSWD; except the working directory and the desktop session's variables (`PWD`, `XDG_SESSION_*`,
 * `SSH_AUTH_SOCK`, ...).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { secretName } from "./secret_names.ts";
 * assert.ok(secretName("MY_API_KEY"));
 * assert.ok(secretName("githubToken"));
 * assert.equal(secretName("TZ"), false);
 * assert.equal(secretName("GIT_AUTHOR_NAME"), false); // AUTHOR is not AUTH
 * ```
 */
export function secretName(name: string): boolean {
  const upper = name.toUpperCase();
  if (NOT_SECRET.has(upper) || upper.startsWith("XDG_")) return false;
  const parts = name.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toUpperCase().split(/[^A-Z0-9]+/);
  return parts.some((part) =>
    SECRET_WORDS.has(part) || SECRET_ENDINGS.some((end) => part.length > end.length && part.endsWith(end))
  );
}
