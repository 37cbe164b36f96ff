/** The contract each vendor module fulfils, so that one request path serves all four formats. */
import { planReply, type Reply, type Scenario, type Turn } from "./scenario.ts";
import type { WireEvent } from "./wire.ts";
import type { LongDecodeSide } from "./long_decode.ts";

// deno-lint-ignore no-explicit-any
export type Json = any;

export interface ErrorDetail {
  message: string;
  code?: string | null;
  param?: string | null;
}

export interface ErrorReply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export interface Vendor {
  /**
   * The format id of the wire format it speaks: a plugin's (`chat`, `generate-content`, …) or an
   * upstream-only one's (`converse`). Its replies name it.
   */
  name: string;
  /** Content type of JSON (non-streaming and error) responses. */
  jsonContentType: string;
  /** The last user text, or the tool result the last turn carries. */
  turn(body: Json): Turn;
  /** Names of the function tools the request declares, in order. */
  toolNames(body: Json): string[];
  /** Whether the request declares the vendor's hosted web search, and whether alone. */
  hostedSearch(body: Json): "declared" | "only" | undefined;
  /** A 400 message when the vendor would reject the body, else undefined. */
  validate(body: Json): string | undefined;
  /** The non-streaming response body. */
  json(reply: Reply, body: Json): unknown;
  /** The streaming events, in order (terminal event last). */
  events(reply: Reply, body: Json): WireEvent[];
  /** The vendor's error envelope and status for a scenario status (400/404/429/500/529). */
  error(status: number, detail?: ErrorDetail): ErrorReply;
  /** The vendor's in-stream error event. */
  streamError(status: number, detail?: ErrorDetail): WireEvent;
  /** Headers every response carries (request ids and the like); `reply`: a JSON answer's. */
  headers(reply?: Reply): Record<string, string>;
  /** The vendor's 400 message for a body that is not a JSON object. */
  badJson: string;
  /** The vendor's 404 message for an unknown path. */
  notFound(method: string, path: string): string;
  /** Where its requests carry long decode's budget and token (Gemini's formats only). */
  longDecode?: LongDecodeSide;
}

/** Items of `list` when it is an array, else none. */
export function arrayOf(list: unknown): Json[] {
  return Array.isArray(list) ? list : [];
}

/** A token count derived from the request body's length (about 4 characters a token). */
export function countTokens(bodyText: string): number {
  return Math.max(1, Math.ceil(bodyText.length / 4));
}

/** The reply `vendor` gives to `body` under `scenario`. */
export function replyFor(vendor: Vendor, body: Json, model: string, scenario: Scenario): Reply {
  const names = vendor.toolNames(body);
  return planReply(
    vendor.name,
    model,
    scenario,
    vendor.turn(body),
    names,
    vendor.hostedSearch(body),
  );
}

/** "only" when every tool is a search tool, "declared" when some are, else undefined. */
export function searchTools(tools: Json[], isSearch: (t: Json) => boolean) {
  const n = tools.filter(isSearch).length;
  return n === 0 ? undefined : n === tools.length ? "only" as const : "declared" as const;
}

const CREDENTIAL_HEADERS = ["authorization", "x-api-key", "x-goog-api-key"];

export function credentialOf(headers: Headers): string {
  return CREDENTIAL_HEADERS.map((h) => headers.get(h)).find((v) => v !== null) ?? "";
}

/** The message of an `echo` error: what a provider (or a proxy) says of a rejected key. */
export const echoMessage = (credential: string) =>
  `Incorrect API key provided: ${credential}. You can find your API key in your account.`;
