/** One question to the terminal and the console at once: the first answer wins, the other is withdrawn. */
import assert from "node:assert/strict";
import { firstAnswer } from "../../src/policy/first_answer.ts";
import { Policy } from "../../src/policy/policy.ts";
import type { Answer, ApprovalQuestion, Ask } from "../../src/policy/policy.ts";

const QUESTION: ApprovalQuestion = { tool: "exec", reason: "it runs programs", lines: ["run ls"] };

/** An asker answered by the test (`answer`), that records whether its question was withdrawn. */
function held(): { ask: Ask; answer: (a: Answer) => void; withdrawn: () => boolean } {
  let give: ((a: Answer) => void) | undefined;
  let withdrawn = false;
  let answered = false;
  const ask: Ask = (_question, signal) =>
    new Promise<Answer>((resolve, reject) => {
      give = (a) => {
        answered = true;
        resolve(a);
      };
      signal?.addEventListener("abort", () => {
        // Withdrawn while still waiting (the winner's signal aborts too, once it answered: that is no withdrawal).
        if (answered) return;
        withdrawn = true;
        reject(new Error("withdrawn"));
      }, { once: true });
    });
  return { ask, answer: (a) => give!(a), withdrawn: () => withdrawn };
}

Deno.test("firstAnswer: the first side to answer wins, the other's question is withdrawn, and who answered is kept", async () => {
  const terminal = held();
  const console = held();
  const race = firstAnswer([{ name: "terminal", ask: terminal.ask }, { name: "console", ask: console.ask }]);
  const asked = race.ask(QUESTION);
  await new Promise((resolve) => setTimeout(resolve, 0));
  console.answer("always");
  assert.equal(await asked, "always");
  assert.equal(race.answeredBy(QUESTION), "console");
  assert.equal(terminal.withdrawn(), true);
  assert.equal(console.withdrawn(), false);
  assert.equal(race.answeredBy({ ...QUESTION }), undefined, "kept per question");
});

Deno.test("firstAnswer: a side that fails leaves the question to the other; all failing is the last failure", async () => {
  const failing: Ask = () => Promise.reject(new Error("nobody at the terminal"));
  const race = firstAnswer([{ name: "terminal", ask: failing }, {
    name: "console",
    ask: () => Promise.resolve("no"),
  }]);
  assert.equal(await race.ask(QUESTION), "no");
  const none = firstAnswer([
    { name: "terminal", ask: failing },
    { name: "console", ask: () => Promise.reject(new Error("nobody answered in the console")) },
  ]);
  await assert.rejects(none.ask(QUESTION), /nobody answered in the console/);
});

Deno.test("Policy: a person's answer given in the console approves the call `by: console`", async () => {
  const race = firstAnswer([{ name: "console", ask: () => Promise.resolve("yes") }]);
  const policy = new Policy({
    ask: race.ask,
    answeredBy: (question) => race.answeredBy(question) === "console" ? "console" : undefined,
  });
  // A call that needs a person: not read-only.
  const { manifestOf } = await import("../executor_helpers.ts");
  const manifest = manifestOf([{ name: "write", command: ["/bin/true"] }]);
  const { Executor } = await import("../../src/run/executor.ts");
  const executor = new Executor({ manifest, env: {}, cwd: Deno.cwd(), auditDir: null });
  const prepared = await executor.prepare("write", "{}");
  assert.ok(prepared.ok);
  assert.deepEqual(await policy.decide(prepared.call), { approved: true, by: "console" });
  assert.deepEqual(await new Policy({ ask: () => Promise.resolve("yes") }).decide(prepared.call), {
    approved: true,
    by: "person",
  });
  await executor.close();
});
