/**
 * Long decode (a codec's `longDecode`): a provider that caps each request's output stops a longer
 * answer with a token (its decoders say so on `finish`, `continuation`), and the same request
 * sent again with the token continues it. The core runs those hops for converted clients
 * (src/request/long_decode.ts); a relayed client runs them itself, and the core sends its
 * continuations to the provider account that issued the token.
 */
export interface LongDecode {
  /** The request body this codec encoded, again, with `token` set (nothing else changes). */
  resume(body: Record<string, unknown>, token: string): Record<string, unknown>;
  /** The token a client's request body continues with, if any. */
  resumes(body: Record<string, unknown>): string | undefined;
  /** Text in every answer (or stream event) that issues a token: tested before `issued`. */
  readonly marker: string;
  /** The token a whole answer or one stream event issues (a mid-answer checkpoint included). */
  issued(answer: Record<string, unknown>): string | undefined;
  /**
   * The largest output budget a non-streaming request may ask for (the provider refuses more
   * without a token): a converted JSON request above it is streamed upstream and assembled.
   */
  readonly unaryLimit?: number;
}
