// A confined call's denials (src/sandbox/call_denials.ts): what the egress proxy refused, exactly, and which of a
// tool's "Operation not permitted" lines name a call the seccomp filter refuses (inferred), with no denial for an
// EPERM of another cause.
import assert from "node:assert/strict";
import { egressDenials, filterDenials } from "../../src/sandbox/call_denials.ts";

Deno.test("call denials: the filter's refusals as programs report them become typed syscall denials", () => {
  const cases: [string, string, string][] = [
    ["unshare: unshare failed: Operation not permitted", "unshare", "seccomp: namespaces"],
    ["mount: /mnt: mount failed: Operation not permitted.", "mount", "seccomp: mounts"],
    ["strace: ptrace(PTRACE_TRACEME, ...): Operation not permitted", "ptrace", "seccomp: ptrace"],
    ["io_uring_setup: Operation not permitted", "io_uring_setup", "seccomp: io_uring"],
    ["bpf(BPF_PROG_LOAD): Operation not permitted", "bpf", "seccomp: bpf"],
    ["keyctl_join_session_keyring: Operation not permitted", "keyctl", "seccomp: keyrings"],
    [
      "insmod: ERROR: could not insert module x.ko: Operation not permitted",
      "finit_module",
      "seccomp: modules",
    ],
    ["ping: socket: Operation not permitted", "socket", "seccomp: AF_UNIX sockets only"],
  ];
  for (const [line, target, rule] of cases) {
    assert.deepEqual(filterDenials(`some output\n${line}\n`, false), [
      { kind: "syscall", target, rule, inferred: true },
    ], line);
  }
  // A profile with network: the socket rule says what is still refused.
  assert.equal(
    filterDenials("socket: Operation not permitted", true)[0].rule,
    "seccomp: no raw, packet, vsock or netlink sockets",
  );
});

Deno.test("call denials: a Python traceback names the call on the lines above its PermissionError", () => {
  const traceback = [
    "Traceback (most recent call last):",
    '  File "/w/probe.py", line 2, in <module>',
    "    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)",
    "        ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    "PermissionError: [Errno 1] Operation not permitted",
  ].join("\n");
  assert.deepEqual(filterDenials(traceback, true).map((d) => d.target), ["socket"]);
});

Deno.test("call denials: an EPERM that names no call the filter refuses is no denial, and each call counts once", () => {
  assert.deepEqual(filterDenials("chmod: changing permissions of 'x': Operation not permitted", false), []);
  assert.deepEqual(filterDenials("kill: (1) - Operation not permitted", false), []);
  assert.deepEqual(filterDenials("unshare: Permission denied", false), []);
  assert.deepEqual(
    filterDenials(
      "unshare: unshare failed: Operation not permitted\nunshare: unshare failed: Operation not permitted",
      false,
    )
      .length,
    1,
  );
});

Deno.test("call denials: the proxy's refusals are exact: a host not listed, a placeholder sent elsewhere", () => {
  assert.deepEqual(
    egressDenials([
      { host: "api.github.com", port: 443, allowed: true },
      { host: "evil.example", port: 443, allowed: false },
      {
        host: "api.github.com",
        port: 80,
        allowed: false,
        reason: "the placeholder of the credential GH was sent in plain HTTP",
      },
    ]),
    [
      { kind: "host", target: "evil.example:443", rule: "profile net" },
      {
        kind: "credential",
        target: "api.github.com:80",
        rule: "the placeholder of the credential GH was sent in plain HTTP",
      },
    ],
  );
});
