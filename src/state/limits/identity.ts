/**
 * Who a request is: a Kong consumer (Kong authenticated it) when `identities.kong_consumers`
 * is on and a trusted proxy sent the consumer headers, else the owner of the gateway key.
 */
import type { Consumer } from "./policy.ts";
import type { TrustedProxies } from "../../config/trusted_proxies.ts";

/** Names and ids are bounded and printable: they become log fields, metric labels, Redis keys. */
const CONSUMER_VALUE = /^[\x21-\x7e][\x20-\x7e]{0,199}$/;

/**
 * The Kong consumer `headers` name, if `peer` is a trusted proxy and the consumer is not Kong's
 * anonymous one. From any other peer the same headers mean nothing.
 */
export function kongConsumer(
  proxies: TrustedProxies,
  peer: string | undefined,
  headers: Headers,
): Consumer | undefined {
  if (peer === undefined || !proxies.trusts(peer)) return undefined;
  if (headers.get("x-anonymous-consumer")?.toLowerCase() === "true") return undefined;
  const username = valid(headers.get("x-consumer-username"));
  const id = valid(headers.get("x-consumer-id"));
  return username !== undefined || id !== undefined ? { username, id } : undefined;
}

const valid = (v: string | null | undefined) =>
  v !== null && v !== undefined && CONSUMER_VALUE.test(v) ? v : undefined;

/** A request header's value by its lowercase name (`Headers.get`, or the front's one-pass read). */
export type HeaderValue = (name: string) => string | null | undefined;

/** The headers that name an agent session, in order of preference. */
export const SESSION_HEADERS = ["x-claude-code-session-id", "session_id", "session-id"] as const;
/** The header that names the agent within a session. */
export const AGENT_HEADER = "x-claude-code-agent-id";

/**
 * An agent session's id as a client sent it (Claude Code's, else Codex's: `session_id` over
 * HTTP, `session-id` on its WebSocket upgrade), if usable.
 */
export function sessionOf(header: HeaderValue): string | undefined {
  const [claude, codex, socket] = SESSION_HEADERS;
  return valid(header(claude) ?? header(codex) ?? header(socket));
}

export const agentOf = (header: HeaderValue) => valid(header(AGENT_HEADER));
