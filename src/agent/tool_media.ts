/**
 * A tool's images and audio for the model. A chat-completions endpoint takes them in a user message, never in a
 * `tool` message, so (as established clients do) each tool message names what its call answered, and one user
 * message after the turn's tool messages carries them as content parts (`image_url` with a `data:` URL,
 * `input_audio`). They are sent only where the run says its endpoint takes them (`--images`, `--audio`); when the
 * endpoint refuses a request that carries them (a 400, 413, 415 or 422), the same conversation goes again with
 * notes in their place, and the rest of the run sends notes only.
 *
 * @module
 */
import type { ContentBlock, Envelope } from "../contract.ts";
import { AgentError } from "./errors.ts";
import type { ChatRequest } from "./chat_client.ts";
import type { ChatMessage, ContentPart, ToolCall, ToolMessage, UserMessage } from "./messages.ts";
import { forModel, toolMessageContent } from "./tool_message.ts";

/** What the run's endpoint is said to take besides text. */
export interface MediaSettings {
  /** Images (`image_url` parts): `--images` / `OAI_IMAGES=1`. */
  readonly images: boolean;
  /** Audio (`input_audio` parts, WAV and MP3 only): `--audio` / `OAI_AUDIO=1`. */
  readonly audio: boolean;
}

/** The formats chat completions' `input_audio` takes, by MIME type. */
const AUDIO_FORMATS: Readonly<Record<string, string>> = {
  "audio/wav": "wav",
  "audio/x-wav": "wav",
  "audio/wave": "wav",
  "audio/mpeg": "mp3",
  "audio/mp3": "mp3",
};

/** The statuses with which an endpoint refuses what a request carries (rather than failing for another reason). */
const REFUSALS = new Set([400, 413, 415, 422]);

/** One turn that sent media: its messages as sent, and what is needed to write them again without. */
interface SentTurn {
  readonly user: UserMessage;
  readonly tools: readonly { readonly message: ToolMessage; readonly envelope: Envelope }[];
  readonly maxChars?: number;
}

/** One turn's answers: a tool message per call, in the model's order, and the user message of their media. */
export interface TurnAnswers {
  readonly tools: ToolMessage[];
  /** Present when a call answered an image or audio the endpoint takes. */
  readonly media?: UserMessage;
}

/**
 * The run's handling of tools' media: what it sends, and its fallback when the endpoint refuses it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { success, withContent } from "../contract.ts";
 * import { ModelMedia } from "./tool_media.ts";
 * const media = new ModelMedia({ images: true, audio: false });
 * const envelope = withContent(success(null, { tool: "draw" }), [{ type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" }]);
 * const turn = media.answers([{ id: "c1", type: "function", function: { name: "draw", arguments: "{}" } }], [envelope]);
 * assert.deepEqual(turn.media?.content[1], { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } });
 * ```
 */
export class ModelMedia {
  #images: boolean;
  #audio: boolean;
  readonly #sent: SentTurn[] = [];

  constructor(settings: MediaSettings) {
    this.#images = settings.images;
    this.#audio = settings.audio;
  }

  /** The content part a block goes to the model as, when the endpoint takes it now. */
  #part(block: ContentBlock): Exclude<ContentPart, { type: "text" }> | undefined {
    if (typeof block.data !== "string" || typeof block.mimeType !== "string") return undefined;
    if (block.type === "image" && this.#images && /^image\/[\w.+-]+$/.test(block.mimeType)) {
      return { type: "image_url", image_url: { url: `data:${block.mimeType};base64,${block.data}` } };
    }
    const format = AUDIO_FORMATS[block.mimeType.toLowerCase()];
    if (block.type === "audio" && this.#audio && format !== undefined) {
      return { type: "input_audio", input_audio: { data: block.data, format } };
    }
    return undefined;
  }

  /**
   * The turn's answers: each call's envelope cut to fit its tool message (`maxChars`), its images and audio
   * named there and carried, where the endpoint takes them, by one user message that follows.
   */
  answers(calls: readonly ToolCall[], envelopes: readonly Envelope[], maxChars?: number): TurnAnswers {
    const parts: ContentPart[] = [];
    const counts = { image: 0, audio: 0 };
    const sent: { message: ToolMessage; envelope: Envelope }[] = [];
    const tools = calls.map((call, index): ToolMessage => {
      const envelope = envelopes[index];
      let carries = false;
      const shown = forModel(envelope, (block) => {
        const part = this.#part(block);
        if (part === undefined) return undefined;
        carries = true;
        const kind = part.type === "image_url" ? "image" : "audio";
        const number = ++counts[kind];
        parts.push({
          type: "text",
          text: `The tool call ${call.id} (${call.function.name}) answered ${kind} ${number}:`,
        }, part);
        return `sent as ${kind} ${number} in the user message after the tool results`;
      });
      const message: ToolMessage = {
        role: "tool",
        tool_call_id: call.id,
        content: toolMessageContent(shown, maxChars),
      };
      if (carries) sent.push({ message, envelope });
      return message;
    });
    if (parts.length === 0) return { tools };
    const media: UserMessage = { role: "user", content: parts };
    this.#sent.push({ user: media, tools: sent, maxChars });
    return { tools, media };
  }

  /**
   * Sends `body` with `ask`; when the endpoint refuses the media it carries, falls back (see
   * {@linkcode ModelMedia.fallBack}), says so with `notice`, and sends the request `again` builds, once.
   */
  async send<T>(
    body: ChatRequest,
    messages: ChatMessage[],
    how: {
      readonly ask: (body: ChatRequest) => Promise<T>;
      readonly again: () => ChatRequest;
      readonly notice?: (text: string) => Promise<void>;
    },
  ): Promise<T> {
    try {
      return await how.ask(body);
    } catch (error) {
      if (!this.fallBack(error, messages)) throw error;
      await how.notice?.(
        `toolgate: the endpoint refused the tools' images or audio (${
          (error as Error).message.slice(0, 200)
        }): sending notes in their place for the rest of the run\n`,
      );
      return await how.ask(how.again());
    }
  }

  /**
   * After a request failed: when the endpoint refused it (4xx) and it carried media this run sent, rewrites
   * `messages` as if none had been sent (the media messages gone, the tool messages with notes in their place),
   * sends none for the rest of the run, and says to send the request again.
   */
  fallBack(error: unknown, messages: ChatMessage[]): boolean {
    if (!(error instanceof AgentError) || error.status === undefined || !REFUSALS.has(error.status)) {
      return false;
    }
    const carried = this.#sent.filter((turn) => messages.includes(turn.user));
    if (carried.length === 0) return false;
    this.#images = false;
    this.#audio = false;
    for (const turn of carried) {
      messages.splice(messages.indexOf(turn.user), 1);
      for (const { message, envelope } of turn.tools) {
        const at = messages.indexOf(message);
        if (at >= 0) {
          messages[at] = { ...message, content: toolMessageContent(forModel(envelope), turn.maxChars) };
        }
      }
    }
    this.#sent.length = 0;
    return true;
  }
}
