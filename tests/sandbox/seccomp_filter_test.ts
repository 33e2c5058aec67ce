// The seccomp filter is data: each generated program is run here by a small classic-BPF interpreter over every
// call and argument case the issue names, for both architectures, against a reference written apart from the
// generator (the syscall numbers below, and the kernel headers where this machine has them).
import assert from "node:assert/strict";
import { seccompFilter } from "../../src/sandbox/seccomp_filter.ts";
import { type SeccompArch, SYSCALL_TABLES } from "../../src/sandbox/syscall_tables.ts";

const ALLOW = 0x7fff0000;
const EPERM = 0x00050001;
const ENOSYS = 0x00050026;
const KILL = 0x80000000;

interface Call {
  readonly nr: number;
  readonly arch: number;
  readonly args?: readonly bigint[];
}

/** Runs a classic-BPF seccomp program over one call; refuses any instruction the generator should not emit. */
function run(program: Uint8Array, call: Call): number {
  const data = new DataView(new ArrayBuffer(64));
  data.setInt32(0, call.nr, true);
  data.setUint32(4, call.arch, true);
  (call.args ?? []).forEach((arg, i) => data.setBigUint64(16 + 8 * i, BigInt.asUintN(64, arg), true));
  const view = new DataView(program.buffer, program.byteOffset, program.byteLength);
  const length = program.byteLength / 8;
  assert.ok(length > 0 && length <= 4096, `program length ${length}`);
  let a = 0;
  for (let pc = 0; pc < length; pc++) {
    const code = view.getUint16(pc * 8, true);
    const jt = view.getUint8(pc * 8 + 2);
    const jf = view.getUint8(pc * 8 + 3);
    const k = view.getUint32(pc * 8 + 4, true);
    switch (code) {
      case 0x20: // ld [k]
        assert.ok(k % 4 === 0 && k < 64, `load offset ${k}`);
        a = data.getUint32(k, true);
        break;
      case 0x54: // and #k
        a = (a & k) >>> 0;
        break;
      case 0x06: // ret #k
        return k;
      case 0x15: // jeq #k
        pc += a === k ? jt : jf;
        break;
      case 0x35: // jge #k
        pc += a >= k ? jt : jf;
        break;
      case 0x45: // jset #k
        pc += (a & k) !== 0 ? jt : jf;
        break;
      default:
        throw new Error(`unexpected opcode 0x${code.toString(16)} at ${pc}`);
    }
    assert.ok(pc + 1 < length, `jump past the end at ${pc}`);
  }
  throw new Error("fell off the end of the program");
}

const ARCHES: Record<SeccompArch, { audit: number; other: number }> = {
  x86_64: { audit: 0xc000003e, other: 0x40000003 /* i386 */ },
  aarch64: { audit: 0xc00000b7, other: 0x40000028 /* arm */ },
};

/** The reference: each call the issue names, [x86_64, aarch64], from the kernel's syscall tables. */
const REFUSED: Record<string, [number | undefined, number]> = {
  setns: [308, 268],
  io_uring_setup: [425, 425],
  io_uring_enter: [426, 426],
  io_uring_register: [427, 427],
  bpf: [321, 280],
  userfaultfd: [323, 282],
  perf_event_open: [298, 241],
  keyctl: [250, 219],
  add_key: [248, 217],
  request_key: [249, 218],
  ptrace: [101, 117],
  process_vm_readv: [310, 270],
  process_vm_writev: [311, 271],
  pidfd_getfd: [438, 438],
  kexec_load: [246, 104],
  kexec_file_load: [320, 294],
  init_module: [175, 105],
  finit_module: [313, 273],
  delete_module: [176, 106],
  mount: [165, 40],
  umount2: [166, 39],
  pivot_root: [155, 41],
  move_mount: [429, 429],
  open_tree: [428, 428],
  open_tree_attr: [467, 467],
  fsopen: [430, 430],
  fsconfig: [431, 431],
  fsmount: [432, 432],
  fspick: [433, 433],
  mount_setattr: [442, 442],
  swapon: [167, 224],
  swapoff: [168, 225],
  reboot: [169, 142],
  acct: [163, 89],
  open_by_handle_at: [304, 265],
  lookup_dcookie: [212, 18],
  quotactl: [179, 60],
  quotactl_fd: [443, 443],
  syslog: [103, 116],
  vhangup: [153, 58],
};
const X86_ONLY = { iopl: 172, ioperm: 173, uselib: 134, _sysctl: 156 };
const ARGS: Record<string, [number, number]> = {
  clone: [56, 220],
  clone3: [435, 435],
  unshare: [272, 97],
  personality: [135, 92],
  socket: [41, 198],
  socketpair: [53, 199],
  ioctl: [16, 29],
};
const column = (arch: SeccompArch) => arch === "x86_64" ? 0 : 1;
const num = (arch: SeccompArch, name: keyof typeof ARGS) => ARGS[name][column(arch)];

const NAMESPACES = {
  CLONE_NEWTIME: 0x80,
  CLONE_NEWNS: 0x20000,
  CLONE_NEWCGROUP: 0x02000000,
  CLONE_NEWUTS: 0x04000000,
  CLONE_NEWIPC: 0x08000000,
  CLONE_NEWUSER: 0x10000000,
  CLONE_NEWPID: 0x20000000,
  CLONE_NEWNET: 0x40000000,
};
// What glibc's pthread_create passes to clone (CLONE_VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|SETTLS|PARENT_SETTID|
// CHILD_CLEARTID), and fork's SIGCHLD|CHILD_SETTID|CHILD_CLEARTID.
const THREAD_FLAGS = 0x3d0f00;
const FORK_FLAGS = 0x01200011;

for (const arch of ["x86_64", "aarch64"] as const) {
  const { audit, other } = ARCHES[arch];
  const closed = seccompFilter(arch, { network: false });
  const open = seccompFilter(arch, { network: true });
  const both = [["no network", closed], ["network", open]] as const;
  const refused = Object.entries(REFUSED).map(([name, numbers]) => [name, numbers[column(arch)]] as const)
    .concat(arch === "x86_64" ? Object.entries(X86_ONLY) : []);

  Deno.test(`seccomp ${arch}: a syscall made under another architecture's ABI kills the process`, () => {
    for (const [, program] of both) {
      assert.equal(run(program, { nr: 0, arch: other }), KILL);
      assert.equal(
        run(program, { nr: 0, arch: ARCHES[arch === "x86_64" ? "aarch64" : "x86_64"].audit }),
        KILL,
      );
      assert.equal(run(program, { nr: 0, arch: audit }), ALLOW);
    }
  });

  if (arch === "x86_64") {
    Deno.test("seccomp x86_64: an x32 syscall (__X32_SYSCALL_BIT) kills the process", () => {
      for (const [, program] of both) {
        assert.equal(run(program, { nr: 0x40000000 | 39, arch: audit }), KILL);
        assert.equal(run(program, { nr: 0x40000000 | 101, arch: audit }), KILL);
        assert.equal(run(program, { nr: -1, arch: audit }), KILL);
      }
    });
  }

  Deno.test(`seccomp ${arch}: every listed call is refused with EPERM`, () => {
    for (const [, program] of both) {
      for (const [name, nr] of refused) {
        assert.equal(run(program, { nr: nr!, arch: audit }), EPERM, name);
      }
    }
  });

  Deno.test(`seccomp ${arch}: clone3 is answered ENOSYS (libc falls back to clone)`, () => {
    for (const [, program] of both) {
      assert.equal(run(program, { nr: num(arch, "clone3"), arch: audit }), ENOSYS);
    }
  });

  Deno.test(`seccomp ${arch}: clone and unshare with a namespace flag are refused, threads and forks are not`, () => {
    for (const [, program] of both) {
      for (const call of ["clone", "unshare"] as const) {
        const nr = num(arch, call);
        for (const [flag, value] of Object.entries(NAMESPACES)) {
          assert.equal(
            run(program, { nr, arch: audit, args: [BigInt(value | 17)] }),
            EPERM,
            `${call} ${flag}`,
          );
          // Garbage in the upper half changes nothing: the kernel reads the low 32 bits.
          assert.equal(run(program, { nr, arch: audit, args: [(1n << 40n) | BigInt(value)] }), EPERM, flag);
        }
        assert.equal(
          run(program, { nr, arch: audit, args: [BigInt(THREAD_FLAGS)] }),
          ALLOW,
          `${call} thread`,
        );
        assert.equal(run(program, { nr, arch: audit, args: [BigInt(FORK_FLAGS)] }), ALLOW, `${call} fork`);
        assert.equal(
          run(program, { nr, arch: audit, args: [0xffffffff00000000n] }),
          ALLOW,
          `${call} high bits`,
        );
      }
      // unshare(CLONE_FILES | CLONE_FS) makes no namespace.
      assert.equal(run(program, { nr: num(arch, "unshare"), arch: audit, args: [0x600n] }), ALLOW);
    }
  });

  Deno.test(`seccomp ${arch}: personality may be queried or set to PER_LINUX, never lose ASLR`, () => {
    const nr = num(arch, "personality");
    for (const [, program] of both) {
      for (const persona of [0xffffffffn, 0n, 8n, 0x20000n]) {
        assert.equal(run(program, { nr, arch: audit, args: [persona] }), ALLOW, String(persona));
      }
      for (const persona of [0x0040000n, 0x0040008n, 0x0440000n, 0x0400000n, 0x0200000n]) {
        assert.equal(run(program, { nr, arch: audit, args: [persona] }), EPERM, persona.toString(16));
      }
    }
  });

  Deno.test(`seccomp ${arch}: ioctl TIOCSTI and TIOCLINUX are refused, other ioctls are not`, () => {
    const nr = num(arch, "ioctl");
    for (const [, program] of both) {
      assert.equal(run(program, { nr, arch: audit, args: [0n, 0x5412n] }), EPERM);
      assert.equal(run(program, { nr, arch: audit, args: [0n, 0x541cn] }), EPERM);
      // CVE-2019-10063: TIOCSTI with the upper half set still reaches the kernel as TIOCSTI.
      assert.equal(run(program, { nr, arch: audit, args: [0n, 0x1_00005412n] }), EPERM);
      assert.equal(run(program, { nr, arch: audit, args: [0n, 0x5401n] }), ALLOW); // TCGETS
      assert.equal(run(program, { nr, arch: audit, args: [0n, 0x541bn] }), ALLOW); // FIONREAD
    }
  });

  const AF = {
    UNIX: 1,
    INET: 2,
    INET6: 10,
    NETLINK: 16,
    PACKET: 17,
    BLUETOOTH: 31,
    ALG: 38,
    VSOCK: 40,
    CAN: 29,
  };
  const SOCK = {
    STREAM: 1,
    DGRAM: 2,
    RAW: 3,
    SEQPACKET: 5,
    PACKET: 10,
    NONBLOCK: 0o4000,
    CLOEXEC: 0o2000000,
  };
  for (const call of ["socket", "socketpair"] as const) {
    const nr = num(arch, call);
    const verdict = (program: Uint8Array, family: number, type: number, protocol = 0) =>
      run(program, { nr, arch: audit, args: [BigInt(family), BigInt(type), BigInt(protocol)] });

    Deno.test(`seccomp ${arch}: without network, ${call} is AF_UNIX only`, () => {
      for (const type of [SOCK.STREAM, SOCK.DGRAM, SOCK.SEQPACKET, SOCK.STREAM | SOCK.CLOEXEC]) {
        assert.equal(verdict(closed, AF.UNIX, type), ALLOW);
      }
      for (const [name, family] of Object.entries(AF)) {
        if (family === AF.UNIX) continue;
        for (const type of [SOCK.STREAM, SOCK.DGRAM, SOCK.RAW]) {
          assert.equal(verdict(closed, family, type), EPERM, `${name} ${type}`);
        }
      }
      assert.equal(verdict(closed, AF.NETLINK, SOCK.RAW, 0), EPERM, "NETLINK_ROUTE without network");
    });

    Deno.test(`seccomp ${arch}: with network, ${call} refuses raw, packet, netlink but route, vsock`, () => {
      for (const family of [AF.INET, AF.INET6]) {
        for (const type of [SOCK.STREAM, SOCK.DGRAM, SOCK.SEQPACKET]) {
          assert.equal(verdict(open, family, type), ALLOW);
          assert.equal(verdict(open, family, type | SOCK.NONBLOCK | SOCK.CLOEXEC), ALLOW);
        }
        assert.equal(verdict(open, family, SOCK.RAW, 1), EPERM);
        assert.equal(verdict(open, family, SOCK.RAW | SOCK.CLOEXEC, 255), EPERM);
        assert.equal(verdict(open, family, SOCK.PACKET), EPERM);
      }
      assert.equal(verdict(open, AF.NETLINK, SOCK.RAW, 0), ALLOW, "NETLINK_ROUTE");
      assert.equal(verdict(open, AF.NETLINK, SOCK.DGRAM | SOCK.CLOEXEC, 0), ALLOW, "NETLINK_ROUTE dgram");
      for (
        const protocol of [4, /* SOCK_DIAG */ 9, /* AUDIT */ 15, /* KOBJECT_UEVENT */ 12 /* NETFILTER */]
      ) {
        assert.equal(verdict(open, AF.NETLINK, SOCK.RAW, protocol), EPERM, `netlink ${protocol}`);
      }
      for (const family of [AF.PACKET, AF.VSOCK, AF.ALG, AF.BLUETOOTH, AF.CAN, 0, 46, 255]) {
        assert.equal(verdict(open, family, SOCK.DGRAM), EPERM, `family ${family}`);
      }
      assert.equal(verdict(open, AF.UNIX, SOCK.STREAM), ALLOW);
    });
  }

  Deno.test(`seccomp ${arch}: every other syscall is allowed`, () => {
    const special = new Set([
      ...refused.map(([, nr]) => nr),
      ...Object.values(ARGS).map((n) => n[column(arch)]),
    ]);
    for (const [, program] of both) {
      for (let nr = 0; nr < 600; nr++) {
        if (special.has(nr)) continue;
        assert.equal(run(program, { nr, arch: audit, args: [0x10000000n, 3n, 0n] }), ALLOW, String(nr));
      }
    }
  });
}

Deno.test("seccomp: the tables agree with this machine's kernel headers (where they are installed)", () => {
  const headers: [SeccompArch, string][] = [
    ["x86_64", "/usr/include/x86_64-linux-gnu/asm/unistd_64.h"],
    ["aarch64", "/usr/include/asm-generic/unistd.h"],
  ];
  let read = 0;
  for (const [arch, file] of headers) {
    let text: string;
    try {
      text = Deno.readTextFileSync(file);
    } catch {
      console.log(`seccomp tables: ${file} not here, not compared`);
      continue;
    }
    read++;
    const defined = new Map(
      [...text.matchAll(/#define __NR_(\w+)\s+(\d+)/g)].map((m) => [m[1], Number(m[2])]),
    );
    for (const [name, nr] of Object.entries(SYSCALL_TABLES[arch].numbers)) {
      // Headers older than the call know nothing of it.
      if (defined.has(name)) assert.equal(nr, defined.get(name), `${arch} ${name}`);
    }
  }
  if (read === 0) console.log("seccomp tables: no kernel headers here; the reference above holds them");
});

Deno.test("seccomp: the reference names every call the tables refuse", () => {
  for (const arch of ["x86_64", "aarch64"] as const) {
    for (const [name, nr] of Object.entries(SYSCALL_TABLES[arch].numbers)) {
      const expected = REFUSED[name]?.[column(arch)] ?? ARGS[name]?.[column(arch)] ??
        (arch === "x86_64" ? X86_ONLY[name as keyof typeof X86_ONLY] : undefined);
      assert.equal(nr, expected, `${arch} ${name}`);
    }
  }
});
