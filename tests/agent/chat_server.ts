/**
 * A scripted chat-completions endpoint on 127.0.0.1 for the agent loop's tests and benchmark: it plays one reply
 * per request, in order, and records every request it receives.
 *
 * @module
 */

/** One request as the server saw it. */
export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  /** Lower-cased names. */
  readonly headers: Readonly<Record<string, string>>;
  /** The JSON body (`undefined` when it was not JSON). */
  // deno-lint-ignore no-explicit-any
  readonly body: any;
  /** `Date.now()` on arrival. */
  readonly at: number;
}

/** One scripted reply. */
export type Reply =
  | {
    readonly status?: number;
    readonly headers?: Record<string, string>;
    /** Sent as JSON. */
    readonly json?: unknown;
    /** Sent as is. */
    readonly text?: string;
    /** Wait before answering. */
    readonly delayMs?: number;
  }
  | {
    /** Pieces of an event stream, each written on its own. */
    readonly sse: readonly string[];
    readonly chunkDelayMs?: number;
    readonly headers?: Record<string, string>;
  };

/** A list of replies played in order, or a function of the request. */
export type Script = readonly Reply[] | ((request: RecordedRequest, index: number) => Reply);

/** A running scripted server. */
export interface ChatServer extends AsyncDisposable {
  /** The API base, `http://127.0.0.1:PORT/v1`. */
  readonly baseUrl: string;
  readonly requests: RecordedRequest[];
  close(): Promise<void>;
}

const encoder = new TextEncoder();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts a server on 127.0.0.1, port 0, playing `script`. */
export function startChatServer(script: Script): ChatServer {
  const requests: RecordedRequest[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    const text = await request.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const recorded: RecordedRequest = {
      method: request.method,
      path: new URL(request.url).pathname,
      headers: Object.fromEntries(request.headers),
      body,
      at: Date.now(),
    };
    const index = requests.length;
    requests.push(recorded);
    const reply = typeof script === "function"
      ? script(recorded, index)
      : script[index] ?? { status: 500, json: { error: { message: "the script has no more replies" } } };
    if ("sse" in reply) return streamReply(reply.sse, reply.chunkDelayMs ?? 5, reply.headers);
    if (reply.delayMs) await sleep(reply.delayMs);
    const headers = new Headers(reply.headers);
    if (reply.json !== undefined && !headers.has("content-type")) {
      headers.set("content-type", "application/json");
    }
    const payload = reply.json !== undefined ? JSON.stringify(reply.json) : reply.text ?? "";
    return new Response(payload, { status: reply.status ?? 200, headers });
  });
  return {
    baseUrl: `http://127.0.0.1:${server.addr.port}/v1`,
    requests,
    close: () => server.shutdown(),
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

function streamReply(pieces: readonly string[], delayMs: number, extra?: Record<string, string>): Response {
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      for (const piece of pieces) {
        controller.enqueue(encoder.encode(piece));
        if (delayMs > 0) await sleep(delayMs);
      }
      controller.close();
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream", ...extra } });
}

/** A final answer. */
export function answer(content: string, finishReason = "stop"): Reply {
  return {
    json: {
      id: "chatcmpl-test",
      object: "chat.completion",
      choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: finishReason }],
    },
  };
}

/** One call the model makes; `args` as text is sent verbatim, anything else as JSON. */
export interface ScriptedCall {
  readonly id: string;
  readonly name: string;
  readonly args?: unknown;
}

/** The wire form of scripted calls. */
export function wireCalls(calls: readonly ScriptedCall[]): unknown[] {
  return calls.map((call) => ({
    id: call.id,
    type: "function",
    function: {
      name: call.name,
      arguments: typeof call.args === "string" ? call.args : JSON.stringify(call.args ?? {}),
    },
  }));
}

/** An answer that calls tools. */
export function callTools(calls: readonly ScriptedCall[], content: string | null = null): Reply {
  return {
    json: {
      id: "chatcmpl-test",
      object: "chat.completion",
      choices: [{
        index: 0,
        message: { role: "assistant", content, tool_calls: wireCalls(calls) },
        finish_reason: "tool_calls",
      }],
    },
  };
}

/** One `data:` event of a stream. */
export function sseData(value: unknown): string {
  return `data: ${typeof value === "string" ? value : JSON.stringify(value)}\n\n`;
}

/** A stream chunk with a delta. */
export function deltaChunk(delta: Record<string, unknown>, finishReason: string | null = null): unknown {
  return {
    id: "chatcmpl-test",
    object: "chat.completion.chunk",
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  };
}

/** The tool messages of a request body, in order. */
// deno-lint-ignore no-explicit-any
export function toolMessages(body: any): { tool_call_id: string; content: string }[] {
  // deno-lint-ignore no-explicit-any
  return (body?.messages ?? []).filter((m: any) => m.role === "tool");
}
