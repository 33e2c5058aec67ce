// The escape corpus beyond the syscall filter (issue 41): what a confined tool tries against processes and
// privileges outside its sandbox, each refused by its cause.
import assert from "node:assert/strict";
import { confinedTest, realTempDir, runScript, scriptExecutor } from "./helpers.ts";

confinedTest(
  "a confined tool cannot signal toolgate, read its environment or reach another process's root through /proc",
  async () => {
    const executor = await scriptExecutor(await realTempDir());
    // toolgate's own pid on the host, and a file only the host's root folder shows.
    const result = await runScript(
      executor,
      "script_workspace",
      `kill -0 ${Deno.pid} 2>/dev/null && echo signalled=yes; ` +
        `cat /proc/${Deno.pid}/environ 2>/dev/null && echo environ=read; ` +
        "for p in /proc/[0-9]*; do ls $p/root/root $p/root/home 2>/dev/null; done | grep -c . ; " +
        "echo pids=$(ls -d /proc/[0-9]* | wc -l)",
    );
    assert.doesNotMatch(result.out, /signalled=yes|environ=read/, result.out);
    // Only the sandbox's own few processes are there, and each one's root is the sandbox's (no home, no /root).
    const pids = Number(/pids=(\d+)/.exec(result.out)?.[1]);
    assert.ok(pids > 0 && pids < 10, result.out);
    assert.match(result.out, /^0 /, result.out);
  },
);

confinedTest(
  "a setuid program gains nothing inside: no new privileges, and no capability left to gain",
  async () => {
    const executor = await scriptExecutor(await realTempDir());
    const result = await runScript(
      executor,
      "script_workspace",
      "grep -E '^(NoNewPrivs|CapBnd|CapAmb|CapPrm)' /proc/self/status; " +
        "s=$(find /usr/bin /bin -maxdepth 1 -perm -4000 -type f 2>/dev/null | head -n 1); echo setuid=$s",
    );
    assert.match(result.out, /NoNewPrivs:\s+1/, result.out);
    assert.match(result.out, /CapBnd:\s+0000000000000000/, result.out);
    assert.match(result.out, /CapPrm:\s+0000000000000000/, result.out);
    assert.match(result.out, /CapAmb:\s+0000000000000000/, result.out);
  },
);
