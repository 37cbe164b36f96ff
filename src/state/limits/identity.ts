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

const valid = (v: string | null) => (v !== null && CONSUMER_VALUE.test(v) ? v : undefined);

/** An agent session's id as a client sent it (Claude Code's, else Codex's), if usable. */
export function sessionOf(headers: Headers): string | undefined {
  return valid(headers.get("x-claude-code-session-id") ?? headers.get("session_id"));
}

export const agentOf = (headers: Headers) => valid(headers.get("x-claude-code-agent-id"));
