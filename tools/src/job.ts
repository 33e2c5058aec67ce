// job: the background jobs of `exec` belong to the toolgate process that started them, and toolgate answers this
// tool itself (src/run/jobs.ts) without starting any process. Run on its own (by hand, under agentcli) there is no job
// to see: it says so.
import { runTool, ToolFailure } from "../lib/envelope.ts";

await runTool(() => {
  throw new ToolFailure(
    "unavailable",
    "background jobs live inside the toolgate process that started them, which answers the job tool itself; " +
      "this program runs outside toolgate and sees no job",
    { retryable: false },
  );
});
