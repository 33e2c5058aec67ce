/**
 * Re-exports `src/contract/host_list.ts`: `http_fetch` reads a URL's host and port, and its allow list, as the
 * policy reads them for `--approve-hosts`, so the host approved is the host dialled.
 *
 * @module
 */
export * from "../../src/contract/host_list.ts";
