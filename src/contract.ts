/**
 * The tool envelope contract: the one shape every tool result takes, success or failure, and the only place
 * that builds, writes, reads or truncates envelopes.
 *
 * The contract is one face over small modules in `src/contract/`: the envelope's types, its constructors, its
 * text, the model's text limit and the object check. Import it from here; the tools import it too.
 *
 * @module
 */
export * from "./contract/envelope_types.ts";
export * from "./contract/envelope.ts";
export * from "./contract/envelope_text.ts";
export * from "./contract/truncate.ts";
export * from "./contract/is_record.ts";
