// A tool that may write the workspace plants code that runs outside any sandbox on the person's next git
// command: a hook in .git/hooks, core.fsmonitor or core.hooksPath in .git/config, or a whole new .git put in
// place of the real one (issue 41's corpus: control-plane files).
import assert from "node:assert/strict";
import { join } from "node:path";
import { confinedTest, realTempDir, runScript, scriptExecutor } from "./helpers.ts";

confinedTest(
  "a confined tool cannot plant a git hook or git config in the workspace's repository, nor swap its .git",
  async () => {
    const workspace = await realTempDir("toolgate_git_");
    const init = await new Deno.Command("git", { args: ["init", "-q", workspace] }).output();
    assert.ok(init.success);
    const executor = await scriptExecutor(workspace);
    const result = await runScript(
      executor,
      "script_workspace",
      "echo evil > .git/hooks/pre-commit 2>/dev/null && echo hook=planted; " +
        "git config core.fsmonitor evil 2>/dev/null && echo config=planted; " +
        "mv .git .git-old 2>/dev/null && echo moved=yes; " +
        "echo hi > f && git add f && git -c user.name=t -c user.email=t@t commit -qm one && echo commit=ok",
    );
    assert.doesNotMatch(result.out, /planted|moved=yes/, result.out);
    // What a tool may do with the repository still works: a commit.
    assert.match(result.out, /commit=ok/, result.out);
    assert.throws(() => Deno.statSync(join(workspace, ".git", "hooks", "pre-commit")), Deno.errors.NotFound);
    assert.doesNotMatch(await Deno.readTextFile(join(workspace, ".git", "config")), /fsmonitor/);
    assert.ok(Deno.statSync(join(workspace, ".git")).isDirectory);
  },
);

confinedTest(
  "in a git worktree (its .git a file) a confined tool runs, and cannot point the .git file elsewhere",
  async () => {
    const root = await realTempDir("toolgate_git_wt_");
    const main = join(root, "main");
    const git = (args: string[], cwd = root) =>
      new Deno.Command("git", {
        args: ["-c", "user.name=t", "-c", "user.email=t@t", ...args],
        cwd,
        stdout: "null",
        stderr: "null",
      }).output();
    assert.ok((await git(["init", "-q", main])).success);
    Deno.writeTextFileSync(join(main, "f"), "hi\n");
    assert.ok((await git(["add", "f"], main)).success);
    assert.ok((await git(["commit", "-qm", "one"], main)).success);
    const workspace = join(root, "wt");
    assert.ok((await git(["worktree", "add", "-q", workspace], main)).success);
    const pointer = Deno.readTextFileSync(join(workspace, ".git"));
    const executor = await scriptExecutor(workspace);
    const result = await runScript(
      executor,
      "script_workspace",
      "echo ran; echo 'gitdir: /tmp/planted' > .git 2>/dev/null && echo pointer=moved; echo hi > g && echo wrote",
    );
    assert.match(result.out, /ran/, result.out);
    assert.match(result.out, /wrote/, result.out);
    assert.doesNotMatch(result.out, /pointer=moved/, result.out);
    assert.equal(Deno.readTextFileSync(join(workspace, ".git")), pointer);
  },
);
