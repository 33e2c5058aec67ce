/**
 * The spawn thread with real processes: bytes past its credit arrive whole and in order, a start it may not make
 * is refused as a start here would be (the thread holds this process's permissions, no more), a missing program
 * is the same error, and closing it kills what still runs. The runner's own behaviour through it (caps,
 * timeouts, aborts, trees) is `runner_test.ts`'s second run of every test.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { SPAWN_HERE, SpawnThread } from "../../src/process/spawn_thread.ts";
import { waitGone } from "../executor_helpers.ts";

const SPAWN_THREAD = fileURLToPath(new URL("../../src/process/spawn_thread.ts", import.meta.url));

Deno.test("spawn thread: 24 MiB on stdout, past every credit, arrive whole and in order", async () => {
  const thread = new SpawnThread();
  try {
    // Each 8-byte line names its own index: a lost, doubled or reordered chunk shows.
    const lines = 3 * 1024 * 1024;
    const child = await thread.spawn({
      program: "/bin/sh",
      args: ["-c", `seq -w 0 ${lines - 1} | sed 's/^0//'`],
      cwd: "/",
      env: { PATH: "/usr/bin:/bin" },
      detached: false,
    });
    await child.stdin.close();
    const [bytes, status] = await Promise.all([
      new Response(child.stdout).arrayBuffer(),
      child.status,
      child.stderr.cancel(),
    ]);
    assert.equal(status.code, 0);
    const text = new TextDecoder().decode(bytes);
    const got = text.split("\n");
    assert.equal(got.pop(), "");
    assert.equal(got.length, lines);
    for (let i = 0; i < lines; i += 4099) assert.equal(Number(got[i]), i, `line ${i}`);
    assert.equal(Number(got[lines - 1]), lines - 1);
  } finally {
    await thread.close();
  }
});

Deno.test("spawn thread: a program this process may not run is refused with NotCapable, as here", async () => {
  // A process granted /bin/echo alone starts it through its thread, and is refused /usr/bin/id there.
  const script = `
    import { SpawnThread } from ${JSON.stringify(SPAWN_THREAD)};
    const thread = new SpawnThread();
    const start = (program) => thread.spawn({ program, args: [], cwd: "/", env: {}, detached: false });
    const echo = await start("/bin/echo");
    await echo.stdin.close();
    await Promise.all([echo.stdout.cancel(), echo.stderr.cancel(), echo.status]);
    const refused = await start("/usr/bin/id").then(() => "started", (error) => error.constructor.name);
    await thread.close();
    console.log(JSON.stringify({ echo: echo.pid > 0, refused }));
  `;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", `--allow-read=${SPAWN_THREAD}`, "--allow-run=/bin/echo", "-"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    clearEnv: true,
    env: { NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" },
  }).spawn();
  const writer = out.stdin.getWriter();
  await writer.write(new TextEncoder().encode(script));
  await writer.close();
  const result = await out.output();
  const stderr = new TextDecoder().decode(result.stderr);
  assert.equal(result.code, 0, stderr);
  assert.deepEqual(JSON.parse(new TextDecoder().decode(result.stdout)), {
    echo: true,
    refused: "NotCapable",
  });
});

Deno.test("spawn thread: a missing program is NotFound, as a start here is", async () => {
  const thread = new SpawnThread();
  try {
    const error = await thread.spawn({
      program: "/no/such/program",
      args: [],
      cwd: "/",
      env: {},
      detached: false,
    })
      .then(() => undefined, (error) => error);
    assert.ok(error instanceof Deno.errors.NotFound, String(error));
  } finally {
    await thread.close();
  }
});

Deno.test("spawn thread: closing it kills the processes still running, and nothing starts after", async () => {
  const thread = new SpawnThread();
  const child = await thread.spawn({
    program: "/bin/sleep",
    args: ["60"],
    cwd: "/",
    env: {},
    detached: false,
  });
  await thread.close();
  const status = await child.status;
  assert.equal(status.success, false);
  assert.deepEqual(await waitGone([child.pid]), []);
  await assert.rejects(thread.spawn({ program: "/bin/true", args: [], cwd: "/", env: {}, detached: false }));
});

Deno.test("spawn thread: stdin closed after the child ended and was forgotten closes; a write is a broken pipe", async () => {
  // A tool that may ask keeps its stdin open until it exits: the runner closes it only after the exit.
  const thread = new SpawnThread();
  try {
    const child = await thread.spawn({ program: "/bin/true", args: [], cwd: "/", env: {}, detached: false });
    await Promise.all([
      child.status,
      new Response(child.stdout).arrayBuffer(),
      new Response(child.stderr).text(),
    ]);
    const writer = child.stdin.getWriter();
    await assert.rejects(writer.write(new Uint8Array([1])), Deno.errors.BrokenPipe);
    const again = await thread.spawn({ program: "/bin/true", args: [], cwd: "/", env: {}, detached: false });
    await Promise.all([
      again.status,
      new Response(again.stdout).arrayBuffer(),
      new Response(again.stderr).text(),
    ]);
    await again.stdin.close();
  } finally {
    await thread.close();
  }
});

Deno.test("spawn thread and here: the input that goes with a start reaches stdin whole and closes it; a child that never reads it is no error", async () => {
  const thread = new SpawnThread();
  try {
    // 8 MiB, more than a pipe holds: written while the output is read, as the runner reads it.
    const input = new Uint8Array(8 << 20).map((_, i) => i % 251);
    for (const spawner of [thread, SPAWN_HERE]) {
      const child = await spawner.spawn({
        program: "/bin/sh",
        args: ["-c", "cat; echo done >&2"],
        cwd: "/",
        env: { PATH: "/usr/bin:/bin" },
        detached: false,
        input,
      });
      const [bytes, err, status] = await Promise.all([
        new Response(child.stdout).arrayBuffer(),
        new Response(child.stderr).text(),
        child.status,
      ]);
      assert.equal(status.code, 0);
      assert.equal(err, "done\n", "cat saw the end of its stdin");
      assert.deepEqual(new Uint8Array(bytes), input);
      // Its stdin went with the start: a write there is a broken pipe, a close nothing.
      await assert.rejects(child.stdin.getWriter().write(new Uint8Array(1)), Deno.errors.BrokenPipe);
      // A child that exits without reading its input.
      const quick = await spawner.spawn({
        program: "/bin/true",
        args: [],
        cwd: "/",
        env: {},
        detached: false,
        input,
      });
      const [, , done] = await Promise.all([quick.stdout.cancel(), quick.stderr.cancel(), quick.status]);
      assert.equal(done.code, 0);
    }
  } finally {
    await thread.close();
  }
});
