// Attacks on the sandbox by a hostile tool (issue 10, "What was seen" 1, 4, 6): a confined tool keeps no capability
// (root included), cannot outgrow its process, memory and tmpfs limits, and sees nothing of the host but the
// system folders, the workspace and its own files, with the host's secret files masked.
import assert from "node:assert/strict";
import { join, relative } from "node:path";
import { isWithin } from "../../src/contract/relative_path.ts";
import { FIXTURES } from "../support.ts";
import {
  confinedTest,
  hostTest,
  NO_BWRAP,
  realTempDir,
  runScript,
  scriptExecutor,
  SUPPORT,
} from "./helpers.ts";

confinedTest(
  "a confined tool keeps no capability, cannot remount / read-write, and cannot nest a user namespace",
  async () => {
    const workspace = await realTempDir();
    const executor = await scriptExecutor(workspace);
    const result = await runScript(
      executor,
      "script_workspace",
      "grep CapEff /proc/self/status; mount -o remount,rw / 2>/dev/null; echo remount=$?; " +
        "touch /usr/planted 2>/dev/null; echo usr=$?; unshare -U true 2>/dev/null; echo userns=$?",
    );
    assert.match(result.out, /CapEff: 0000000000000000/);
    assert.match(result.out, /remount=[1-9]/);
    assert.match(result.out, /usr=[1-9]/);
    assert.match(result.out, /userns=[1-9]/);
  },
);

const NO_PIDS_LIMIT = NO_BWRAP ??
  (SUPPORT.ok && SUPPORT.root && SUPPORT.cgroups?.pids === undefined
    ? "running as root without a pids cgroup toolgate may make: the process limit cannot hold here"
    : undefined);

hostTest(
  "the process limit holds for root too: a tool cannot start more processes than its profile allows",
  NO_PIDS_LIMIT,
  async () => {
    const executor = await scriptExecutor(await realTempDir());
    // The tight profile allows 16 processes; 40 sleepers are asked for.
    const result = await runScript(
      executor,
      "script_tight",
      // Each sleeper notes itself before it sleeps; the loop dies at the first fork the limit refuses, and the count
      // is read once the sleepers are gone and forks work again.
      `(for i in ${
        Array.from({ length: 40 }, (_, i) => i).join(" ")
      }; do (echo x >> /tmp/started; exec sleep 1) & ` +
        "done) 2>/dev/null; until sleep 1.2 2>/dev/null; do :; done; echo started=$(wc -l < /tmp/started)",
    );
    const started = Number(/started=(\d+)/.exec(result.out)?.[1]);
    // At least one sleeper (forks work at all); fewer than the limit (it holds). How many fit under the limit
    // depends on what else the call's cgroup held at that instant (its shells, bwrap, a zombie not yet reaped).
    assert.ok(
      started >= 1 && started < 16,
      `processes started in the sandbox: ${started} (${result.out.slice(0, 300)})`,
    );
  },
);

confinedTest(
  "memory: each private tmpfs has its size limit, /dev and the sandbox root take no writes",
  async () => {
    const executor = await scriptExecutor(await realTempDir());
    const result = await runScript(
      executor,
      "script_tight",
      "dd if=/dev/zero of=/tmp/big bs=1M count=32 2>/dev/null; echo tmp=$(du -k /tmp/big | cut -f1); " +
        "dd if=/dev/zero of=/dev/shm/big bs=1M count=32 2>/dev/null; echo shm=$(du -k /dev/shm/big | cut -f1); " +
        "touch /dev/planted 2>/dev/null; echo dev=$?; mkdir /planted 2>/dev/null; echo root=$?",
    );
    const tmp = Number(/tmp=(\d+)/.exec(result.out)?.[1]);
    const shm = Number(/shm=(\d+)/.exec(result.out)?.[1]);
    assert.ok(tmp > 0 && tmp <= 8 * 1024, `/tmp took ${tmp} KiB under an 8 MiB limit`);
    assert.ok(shm > 0 && shm <= 8 * 1024, `/dev/shm took ${shm} KiB under an 8 MiB limit`);
    assert.match(result.out, /dev=[1-9]/);
    assert.match(result.out, /root=[1-9]/);
  },
);

confinedTest("memory: a tool cannot allocate past its profile's memory limit", async () => {
  const executor = await scriptExecutor(await realTempDir());
  // dd holds one whole block in memory: 256 MiB against a 64 MiB limit.
  const result = await runScript(
    executor,
    "script_tight",
    "dd if=/dev/zero of=/dev/null bs=256M count=1 2>/dev/null; echo dd=$?",
  );
  assert.match(result.out, /dd=[1-9]/, result.out);
  const small = await runScript(
    executor,
    "script_tight",
    "dd if=/dev/zero of=/dev/null bs=8M count=1 2>/dev/null; echo dd=$?",
  );
  assert.match(small.out, /dd=0/, "a block within the limit is fine");
});

confinedTest("a confined tool sees no home folder, no /run, no host /tmp and no host socket", async () => {
  const workspace = await realTempDir();
  const home = await Deno.realPath(Deno.env.get("HOME") ?? "/root");
  const hostTmp = await realTempDir("toolgate_sec_host_");
  const marker = join(hostTmp, "marker.txt");
  await Deno.writeTextFile(marker, "host");
  const socketDir = await Deno.makeTempDir({ dir: home, prefix: ".toolgate_sec_" });
  const socketPath = join(socketDir, "host.sock");
  const secret = join(socketDir, "secret.txt");
  await Deno.writeTextFile(secret, "SECRET");
  const listener = Deno.listen({ transport: "unix", path: socketPath });
  const tmpSocketPath = join(hostTmp, "host.sock");
  const tmpListener = Deno.listen({ transport: "unix", path: tmpSocketPath });
  // What the sandbox shows of its own: the tools' files (bound at their path, wherever the clone lives) and the
  // workspace. A folder that holds one of them shows the path to it, and nothing else.
  const bound = [await Deno.realPath(join(FIXTURES, "security", "tools")), workspace];
  try {
    const executor = await scriptExecutor(workspace);
    const hidden = [
      "/run",
      "/var/run",
      marker,
      socketDir,
      socketPath,
      secret,
      tmpSocketPath,
      hostTmp,
      join(home, ".ssh"),
      join(home, ".config"),
      join(home, ".aws"),
      join(home, ".gnupg"),
      join(home, ".bash_history"),
      join(home, ".local", "state", "toolgate"),
      join(home, ".config", "toolgate"),
    ];
    const folders = [...new Set([home, "/root", "/home"])];
    const script = `for p in ${hidden.join(" ")}; do [ -e $p ] && echo present:$p; done; ` +
      // No double quotes or backslashes in a script: the listing comes as words on one line.
      `for d in ${folders.join(" ")}; do [ -e $d ] && echo list:$d: $(ls -A $d); done; echo done`;
    for (const tool of ["script_none", "script_workspace", "script_network"]) {
      const result = await runScript(executor, tool, script);
      // The fixture prints the output as words on one line: `present:P` and `list:D:` then D's entries.
      const words = result.out.trim().split(" ");
      assert.equal(words.at(-1), "done", `${tool}: ${result.out}`);
      assert.deepEqual(words.filter((word) => word.startsWith("present:")), [], `${tool} saw: ${result.out}`);
      for (const folder of folders) {
        const at = words.indexOf(`list:${folder}:`);
        const end = words.findIndex((word, i) => i > at && (word.startsWith("list:") || word === "done"));
        const leading = [
          ...new Set(
            bound.filter((path) => path !== folder && isWithin(path, folder)).map((path) =>
              relative(folder, path).split("/")[0]
            ),
          ),
        ].sort();
        if (leading.length === 0) assert.equal(at, -1, `${tool} sees ${folder}: ${result.out}`);
        else {
          const entries = at === -1 ? undefined : words.slice(at + 1, end).sort();
          assert.deepEqual(entries, leading, `${tool} sees more of ${folder} than the path to its files`);
        }
      }
    }
    assert.equal(await Deno.readTextFile(marker), "host");
  } finally {
    listener.close();
    tmpListener.close();
    await Deno.remove(socketDir, { recursive: true });
    await Deno.remove(hostTmp, { recursive: true });
  }
});

confinedTest("the host's secret files stay unreadable although /etc is shown", async () => {
  const executor = await scriptExecutor(await realTempDir());
  const result = await runScript(
    executor,
    "script_none",
    "cat /etc/passwd >/dev/null && echo passwd=ok; " +
      "for f in /etc/shadow /etc/gshadow /etc/ssh/ssh_host_*_key; do [ -e $f ] || continue; " +
      "[ -s $f ] && head -c 1 $f >/dev/null 2>&1 && echo readable:$f; done; echo done",
  );
  assert.match(result.out, /passwd=ok/, "programs still see the system's ordinary files");
  assert.doesNotMatch(result.out, /readable:/);
});

confinedTest("a network profile tool shares the network, a none profile tool has none", async () => {
  let hits = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, () => {
    hits++;
    return new Response("x");
  });
  try {
    const executor = await scriptExecutor(await realTempDir());
    const probe =
      `exec 3<>/dev/tcp/127.0.0.1/${server.addr.port} 2>/dev/null && echo connected || echo refused`;
    // sh has no /dev/tcp: bash does.
    const offline = await runScript(executor, "script_none", `bash -c '${probe}'`);
    assert.match(offline.out, /refused/);
    const online = await runScript(executor, "script_network", `bash -c '${probe}'`);
    assert.match(online.out, /connected/);
  } finally {
    await server.shutdown();
  }
  assert.ok(hits <= 1);
});
