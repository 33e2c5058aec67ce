/**
 * The hostile second process of the race tests: in the folder given, it keeps swapping the entry `name` between
 * two things parked beside it (say a real directory and a symlink out of the workspace), as fast as renames go,
 * until it is killed. Usage: `race_swapper.ts DIR NAME PARKED_A PARKED_B`, with NAME holding A's thing at start.
 *
 * @module
 */
if (import.meta.main) {
  const [dir, name, parkedA, parkedB] = Deno.args;
  Deno.chdir(dir);
  const swap = (from: string, to: string) => {
    try {
      Deno.renameSync(from, to);
    } catch {
      // A tool's own work (a removal, a rename) can take the entry away for a moment: keep going.
    }
  };
  // Tell the test the race is on.
  await Deno.stdout.write(new TextEncoder().encode("ready\n"));
  while (true) {
    swap(name, parkedA);
    swap(parkedB, name);
    swap(name, parkedB);
    swap(parkedA, name);
  }
}
