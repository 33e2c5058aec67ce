// Moved to src/contract/ (issue 31): the core and the tools share it from there.
/**
 * Re-exports `src/contract/args.ts`, which the executor and the job manager share with the tools.
 *
 * @module
 */
export * from "../../src/contract/args.ts";
