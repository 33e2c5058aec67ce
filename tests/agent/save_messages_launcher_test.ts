// Transcripts anywhere the user can write (issue 24, item 8): `--save-messages FILE` outside the workspace failed
// under the launcher's least set (`Requires read access to FILE.tmp`: a rename needs read and write of both names)
// and the transcript was lost. Through the real launcher, with the file in a folder outside the workspace.
import assert from "node:assert/strict";
import { join } from "node:path";
import { runToolgate } from "../support.ts";
import { AGENT_TOOLS } from "./run_cli.ts";
import { answer, startChatServer } from "./chat_server.ts";

/** A run of `toolgate --prompt hi` through the launcher against a scripted endpoint, in a workspace of its own. */
async function launchedRun(save: string) {
  await using server = startChatServer([answer("hello there")]);
  const workspace = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_ws_" }));
  const state = await Deno.makeTempDir({ prefix: "toolgate_state_" });
  const result = await runToolgate(
    [
      "--prompt",
      "hi",
      "--base-url",
      server.baseUrl,
      "--model",
      "test-model",
      "--tools",
      AGENT_TOOLS,
      "--sandbox",
      "off",
      "--save-messages",
      save,
    ],
    workspace,
    {
      XDG_STATE_HOME: state,
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      HOME: Deno.env.get("HOME") ?? "/root",
    },
  );
  return { ...result, workspace, state };
}

Deno.test("launcher: --save-messages to a folder outside the workspace writes the transcript", async () => {
  const outside = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_outside_" }));
  const save = join(outside, "run.json");
  const run = await launchedRun(save);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout, "hello there\n");
  const saved = JSON.parse(await Deno.readTextFile(save));
  assert.equal(saved.at(-1).content, "hello there");
  assert.deepEqual(
    [...Deno.readDirSync(outside)].map((entry) => entry.name),
    ["run.json"],
    "no temp file left",
  );
});

Deno.test("launcher: a transcript that cannot be written where asked is kept in the state folder, and the run says where", async () => {
  // A folder that does not exist (and the least set may not make): the save fails, the transcript must not be lost.
  const outside = await Deno.realPath(await Deno.makeTempDir({ prefix: "toolgate_outside_" }));
  const save = join(outside, "missing", "run.json");
  const run = await launchedRun(save);
  assert.equal(run.code, 1, run.stderr);
  const where = /kept at (\S+\.json)/.exec(run.stderr)?.[1];
  assert.ok(where !== undefined, run.stderr);
  assert.ok(where.startsWith(run.state), `${where} is in the state folder ${run.state}`);
  const kept = JSON.parse(await Deno.readTextFile(where));
  assert.equal(kept.at(-1).content, "hello there");
  assert.equal((await Deno.stat(where)).mode! & 0o777, 0o600);
});
