/**
 * The contract between the core and a platform plugin. A provider is a wire format (`api:`, a
 * format plugin: the shapes of bodies and stream events) reached through a platform
 * (`platform:`: how a call is addressed, credentialed, framed and how its errors read). A
 * provider without `platform:` is the vendor's own API, exactly as its format plugin describes
 * it. `main.ts` hands the platforms to the core beside the formats; nothing in `src/kit/`
 * imports the rest of `src/`.
 */
import type { z } from "zod";
import type { EmbeddingWire } from "./embeddings.ts";
import type { ErrorKind } from "./errors.ts";
import type { Usage } from "./ir.ts";
import type { OutgoingRequest } from "./format.ts";
import type { UpstreamFraming } from "./framing.ts";
import type { UsageSource } from "./usage.ts";

/** What an upstream call does: generate (one answer, or a stream), count tokens, or embed. */
export type Operation = "generate" | "count_tokens" | "embeddings";

/** A provider as its platform sees it. */
export interface PlatformProvider<S> {
  name: string;
  /** The wire format (`messages`). */
  api: string;
  /** The provider's `base_url`, else the platform's default; no trailing slash. */
  base_url: string;
  /** The provider's block (`aws:`), as the platform's schema parsed it. */
  settings: S;
}

/** One upstream call. */
export interface PlatformCall {
  /** The upstream model name, route renames applied. */
  model: string;
  operation: Operation;
  stream: boolean;
  /**
   * The call's path and query on the vendor's own API (`/v1beta/models/m:streamGenerateContent`
   * without `?alt=sse` is Gemini's JSON-array stream), for a platform that keeps part of it.
   */
  path: string;
}

/** What a scrubbed secret reads as: the core's key scrubbing and a credential's `scrub` alike. */
export const REDACTED = "[redacted]";

/** What a credential source may ask of the core. */
export interface CredentialContext {
  /**
   * Registers a secret the source holds or mints (a secret key, a token): from then on it is
   * scrubbed from every upstream text like a configured key. Call it before the secret is used.
   */
  secret(value: string): void;
  /**
   * Registers a secret the credential minted in place of its last one (an access token): scrubbed
   * like `secret`, but only the current one and the one before it are kept, so that a credential
   * refreshing for months does not grow what every upstream text is scrubbed against.
   */
  minted(token: string): void;
}

/**
 * A provider's credential, made once per provider and config snapshot (a reload makes a new
 * one, re-reading what its block names). What it mints it caches, and refreshes ahead of expiry.
 */
export interface Credential {
  /**
   * Puts the credential on a request: a header, or a signature over method, URL, headers and
   * body. `key` is the provider's pool key (`api_key`/`api_keys`), if it has one; `signal`
   * aborts a wait for a token (the client left).
   */
  authorize(
    req: OutgoingRequest,
    key: string | undefined,
    signal: AbortSignal,
  ): void | Promise<void>;
  /**
   * The platform answered 401 to `req`, which this credential authorized: what it carried is
   * forgotten (not a newer credential other calls already got), and the core authorizes and
   * sends the call once more.
   */
  refused?(req: OutgoingRequest): void;
  /**
   * What this credential put on a call that no registered secret covers and the platform's
   * errors may quote back (SigV4's signature, new with every call), scrubbed from that call's
   * text, given the headers it was sent with (`sent`). Runs, after the registered secrets were
   * scrubbed, on what may quote it only: an error answer, a stream's exception, stream text
   * that held a registered secret (an echoed header names the access key id) — never on every
   * stream event.
   */
  scrub?(text: string, sent: Headers): string;
}

/** What a platform's error says, where the format's reading does not: each field overrides. */
export interface PlatformError {
  kind?: ErrorKind;
  /** The status the error counts as (failover and the client see it). */
  status?: number;
  message?: string;
  /**
   * Whether another attempt may succeed, overriding the route's `retry.on` (which decides when
   * this is absent): `false` for what no retry can cure.
   */
  retry?: boolean;
}

/**
 * A platform plugin: who it is (`id`, `system`, `apis`, `settings`), then what it does, one
 * capability each — address, authenticate (`credential`), adjust the body, frame a stream, read
 * errors, report usage, and what a model name is on it. A new platform fills in the capabilities
 * it needs; a need none covers extends a capability, not the list.
 */
export interface Platform<S = unknown> {
  /** The `platform:` that providers name (`aws-bedrock`); distinct from every format id. */
  id: string;
  /** OpenTelemetry `gen_ai.provider.name` of its providers (`aws.bedrock`). */
  system: string;
  /** The wire formats (`api:`) it carries. */
  apis: readonly string[];
  /**
   * The provider's config block (`aws:`) and its schema; errors are reported at the block's
   * path. Absent: the platform takes no block.
   */
  settings?: { key: string; schema: z.ZodType<S> };
  /** Address: where a call goes. */
  address: Address<S>;
  /** Authenticate: a provider's credential, made once per provider and config snapshot. */
  credential(provider: PlatformProvider<S>, ctx: CredentialContext): Credential;
  /** Adjust the body: a call's on its way out, a JSON answer's on its way back. */
  body?: BodyAdjustment<S>;
  /**
   * Frame: a stream's framing on this platform, given the format's own (`inner`), whose endings
   * it keeps: bytes of another framing (AWS event stream) are re-framed as `inner` frames them.
   * Absent, or `inner` returned: the format's framing.
   */
  framing?(
    inner: UpstreamFraming,
    call: PlatformCall,
    provider: PlatformProvider<S>,
  ): UpstreamFraming;
  /**
   * Read errors: what an error answer means (status, all response headers, the body as text,
   * scrubbed). Absent, or undefined: the format's reading stands.
   */
  readError?(status: number, headers: Headers, body: string): PlatformError | undefined;
  /**
   * Report usage: an answer's usage where the platform bills by counts of its own (Bedrock's
   * token-count headers on a JSON answer, its metrics in a stream's terminal event), given the
   * format's reading of the same answer; undefined: the format's stands. Called for relayed and
   * converted answers, JSON and streams (src/kit/usage.ts).
   */
  usage?(from: UsageSource, format: Usage | undefined): Usage | undefined;
  /** What a model name is on this platform. */
  models?: ModelNames;
}

/** The operations a platform serves unless its `address` lists others. */
export const DEFAULT_OPERATIONS: readonly Operation[] = ["generate", "count_tokens"];

/** Whether `platform` serves `operation` (its `address.operations`, else the default ones). */
export const servesOperation = (
  platform: { readonly address: Pick<Address<never>, "operations"> },
  operation: Operation,
): boolean => (platform.address.operations ?? DEFAULT_OPERATIONS).includes(operation);

/** Where a platform's calls go. */
export interface Address<S> {
  /**
   * The full URL of one call. It may throw a GatewayError (a 400) for a call the platform cannot
   * address (Bedrock counts no tokens of Converse); the client then hears it in its dialect.
   */
  url(provider: PlatformProvider<S>, call: PlatformCall): string;
  /** The base URL when the provider gives none; undefined: `base_url` is required. */
  defaultBaseUrl?(settings: S): string | undefined;
  /**
   * The operations it serves (default `DEFAULT_OPERATIONS`): a call of another is refused before
   * anything is sent, so an operation added to `Operation` reaches only the platforms that list
   * it.
   */
  operations?: readonly Operation[];
}

/** How a platform's bodies differ from the format's own. */
export interface BodyAdjustment<S> {
  /**
   * The body as the platform takes it, relayed or converted alike (fields removed or set);
   * `headers` are the outgoing ones, before the credential (a header may move into the body).
   * `provider.api` says which of its formats the body is. `body` is not to be changed: a platform
   * that changes nothing returns it as is, and the body's bytes then go as they were (a relayed
   * client's as sent); any change is a new object.
   */
  request?(
    body: Record<string, unknown>,
    headers: Headers,
    call: PlatformCall,
    provider: PlatformProvider<S>,
  ): Record<string, unknown>;
  /**
   * A successful JSON answer (read whole by the core: bounded, scrubbed, parsed) as the format
   * reads it, where the platform's own operation answers in another shape (Bedrock's CountTokens
   * `{"inputTokens"}` for Anthropic's `{"input_tokens"}`); undefined: the answer stands. Throws
   * a GatewayError for an answer it cannot read. Never called for streams.
   */
  answer?(
    json: Record<string, unknown>,
    call: PlatformCall,
    provider: PlatformProvider<S>,
  ): Record<string, unknown> | undefined;
  /**
   * The embeddings wire of `model` on this platform, whatever the provider's `api` (Bedrock's
   * Titan and Cohere bodies at InvokeModel, Vertex's `:predict`): each call's path and body and
   * how its answer reads; throws a 400 for a model that has none. Absent: the format's wire.
   * Asked only where `address.operations` lists `embeddings`.
   */
  embeddings?(model: string): EmbeddingWire;
}

/** What a model name is on a platform that serves several families or restricts names. */
export interface ModelNames {
  /**
   * Who can read the signatures of `model` on this platform where it serves several families
   * (Bedrock serves Claude, Nova, Llama…); undefined: the format's family.
   */
  family?(model: string, api: string): string | undefined;
  /** Why a model name cannot be sent through this platform (e.g. it is not one path segment). */
  unsafe?(model: string): string | undefined;
}

/** A platform of any settings type, as lists of platforms hold them. */
// deno-lint-ignore no-explicit-any -- each platform has its own settings type
export type AnyPlatform = Platform<any>;
