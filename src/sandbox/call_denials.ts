/**
 * A confined call's denials as typed entries (`{kind, target, rule}`): the egress proxy's refusals, known exactly
 * (a host the profile does not list, a credential's placeholder sent where it may not go), and the seccomp
 * filter's, inferred from what the tool said: the filter refuses with `EPERM` and toolgate cannot see which call
 * it refused (`SECCOMP_RET_LOG` goes to the kernel's audit log, which toolgate does not read), so a line of the
 * tool's stderr that says "Operation not permitted" and names a call the filter refuses (`unshare`, `mount`,
 * `ptrace`, `socket`...) becomes a `syscall` denial marked `inferred`.
 *
 * Not here: the envelope's constructor (`contract/envelope.ts`: `withDenials`), the filter itself
 * (seccomp_filter.ts), a path the sandbox hides (`process/run_envelope.ts`).
 *
 * @module
 */
import type { Denial } from "../contract.ts";
import type { EgressDecision } from "./proxy_settings.ts";

/** A line that says a call was refused with `EPERM`. */
const EPERM_LINE = /Operation not permitted|\bEPERM\b|\[Errno 1\]/;

/** The calls the filter refuses, as a tool's message names them: the pattern, the call, the filter's rule. */
const NAMED_CALLS: readonly (readonly [RegExp, string, string])[] = [
  [/\bunshare\b/, "unshare", "namespaces"],
  [/\b(?:setns|nsenter)\b/, "setns", "namespaces"],
  [/\bclone3?\s*[(:]/, "clone", "namespaces"],
  [/\bio_uring(?:_setup|_enter|_register)?\b/, "io_uring_setup", "io_uring"],
  [/\bbpf\b/i, "bpf", "bpf"],
  [/\buserfaultfd\b/, "userfaultfd", "userfaultfd"],
  [/\bperf_event_open\b/, "perf_event_open", "perf_event_open"],
  [/\bkeyctl/, "keyctl", "keyrings"],
  [/\badd_key/, "add_key", "keyrings"],
  [/\brequest_key/, "request_key", "keyrings"],
  [/\bprocess_vm_readv\b/, "process_vm_readv", "ptrace"],
  [/\bprocess_vm_writev\b/, "process_vm_writev", "ptrace"],
  [/\bptrace\b|PTRACE_/, "ptrace", "ptrace"],
  [/\bkexec(?:_file)?(?:_load)?\b/, "kexec_load", "kexec"],
  [/\b(?:f?init_module|delete_module|insert module|insmod|modprobe)\b/, "finit_module", "modules"],
  [/\bpivot_root\b/, "pivot_root", "mounts"],
  [/\b(?:move_mount|open_tree|fsopen|fsmount|fsconfig|fspick|mount_setattr)\b/, "move_mount", "mounts"],
  [/\bumount2?\b/, "umount2", "mounts"],
  [/\bmount\b/, "mount", "mounts"],
  [/\bswapon\b/, "swapon", "swap"],
  [/\bswapoff\b/, "swapoff", "swap"],
  [/\breboot\b/, "reboot", "reboot"],
  [/\bacct\b/, "acct", "acct"],
  [/\bpersonality\b/, "personality", "personality"],
  [/\bTIOCSTI\b/, "ioctl TIOCSTI", "terminal injection"],
  [/\bTIOCLINUX\b/, "ioctl TIOCLINUX", "terminal injection"],
  [/\bsocket(?:pair)?\b/, "socket", "sockets"],
];

/**
 * The seccomp filter's refusals a tool reported: each line of `failure` that says `EPERM` ("Operation not
 * permitted", Python's `[Errno 1]`) and names a call the filter refuses, in the line itself or in the traceback
 * lines just above it, as a `syscall` denial marked `inferred`, each call once. A line that names none is no
 * denial: `EPERM` has other causes (a file the tool does not own, a signal to another user's process).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { filterDenials } from "./call_denials.ts";
 * assert.deepEqual(filterDenials("unshare: unshare failed: Operation not permitted", false), [
 *   { kind: "syscall", target: "unshare", rule: "seccomp: namespaces", inferred: true },
 * ]);
 * assert.deepEqual(filterDenials("ping: socket: Operation not permitted", false)[0].rule, "seccomp: AF_UNIX sockets only");
 * assert.deepEqual(filterDenials("chmod: changing permissions of 'x': Operation not permitted", false), []);
 * ```
 */
export function filterDenials(failure: string, network: boolean): Denial[] {
  const lines = failure.split("\n");
  const denials: Denial[] = [];
  lines.forEach((line, at) => {
    if (!EPERM_LINE.test(line)) return;
    // A Python traceback names the call on the lines above its `PermissionError` (its code line, a `^^^` marker).
    const above = lines.slice(Math.max(0, at - 2), at).filter((l) => /^\s/.test(l));
    const named = NAMED_CALLS.find(([pattern]) => pattern.test(line)) ??
      NAMED_CALLS.find(([pattern]) => above.some((l) => pattern.test(l)));
    if (named === undefined) return;
    const [, target, group] = named;
    const rule = group === "sockets"
      ? (network ? "seccomp: no raw, packet, vsock or netlink sockets" : "seccomp: AF_UNIX sockets only")
      : `seccomp: ${group}`;
    if (!denials.some((d) => d.target === target)) {
      denials.push({ kind: "syscall", target, rule, inferred: true });
    }
  });
  return denials;
}

/**
 * The egress proxy's refusals of a call, known exactly: a host the profile does not list (`host`, rule `profile
 * net`), a credential's placeholder sent where it may not go (`credential`, the proxy's reason as the rule); each
 * once. Requests let through are none.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { egressDenials } from "./call_denials.ts";
 * assert.deepEqual(
 *   egressDenials([
 *     { host: "api.github.com", port: 443, allowed: true },
 *     { host: "evil.example", port: 443, allowed: false },
 *     { host: "evil.example", port: 443, allowed: false },
 *   ]),
 *   [{ kind: "host", target: "evil.example:443", rule: "profile net" }],
 * );
 * ```
 */
export function egressDenials(decisions: readonly EgressDecision[]): Denial[] {
  const denials: Denial[] = [];
  for (const decision of decisions) {
    if (decision.allowed) continue;
    const target = `${decision.host}:${decision.port}`;
    const denial: Denial = decision.reason === undefined
      ? { kind: "host", target, rule: "profile net" }
      : { kind: "credential", target, rule: decision.reason };
    if (!denials.some((d) => d.kind === denial.kind && d.target === target && d.rule === denial.rule)) {
      denials.push(denial);
    }
  }
  return denials;
}
