/**
 * What ties a request to the rest of its session, for prompt caching: one session's requests
 * carry one cache key to providers that route by it (src/request/prompt_cache.ts) and keep to one pool
 * key or target while it is healthy (src/state/health.ts), because each provider account has its own
 * cache.
 */
import type * as ir from "../kit/ir.ts";
import type { GenerationSpec } from "../kit/generation.ts";
import type { RequestContext } from "./context.ts";
import { sessionOf } from "../state/limits/identity.ts";
import { sha256 } from "./sha256.ts";

const hex = (bytes: Uint8Array) =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/** JSON without cache hints (a client moves its breakpoints from turn to turn). */
const withoutCache = (key: string, value: unknown) =>
  key === "cache" || key === "cacheKey" ? undefined : value;

/** A request's session, worked out once, when first asked. */
export class Session {
  #signal?: string | null;

  /**
   * `prompt`: the request as IR, if it can be had. A relayed request (`decoded` false) is
   * decoded only when no header names its session (whose clients send one every time).
   */
  constructor(
    private readonly ctx: Pick<RequestContext, "req" | "identity">,
    private readonly prompt: () => ir.Request | undefined,
    private readonly decoded = true,
  ) {}

  /**
   * The session's signal: the client's own cache key (`prompt_cache_key`); else Claude Code's
   * `X-Claude-Code-Session-Id`; else Codex's `session_id`; else a digest of the identity with
   * the tools, system prompt and first user turn (two sessions of one identity differ there).
   * Undefined when none can be read.
   */
  signal(): string | undefined {
    if (this.#signal === undefined) this.#signal = this.#read() ?? null;
    return this.#signal ?? undefined;
  }

  #read(): string | undefined {
    const { headers } = this.ctx.req;
    const header = sessionOf((name) => headers.get(name));
    const req = header === undefined || this.decoded ? this.prompt() : undefined;
    if (req?.cacheKey !== undefined) return `key:${req.cacheKey}`;
    if (header !== undefined) return `session:${header}`;
    if (!req) return undefined;
    const first = req.messages.find((m) => m.role === "user");
    const basis = JSON.stringify([req.tools, req.system, first], withoutCache);
    return `prompt:${hex(sha256(`${this.ctx.identity?.name}\u0000${basis}`))}`;
  }

  /**
   * The prompt-cache key a converted request carries when the client sent none: the same for
   * every request of the session, and the identity's own (`gw-` and 32 hex digits).
   */
  key(): string | undefined {
    const signal = this.signal();
    if (signal === undefined) return undefined;
    const digest = hex(sha256(`${this.ctx.identity?.name}\u0000${signal}`));
    return `gw-${digest.slice(0, 32)}`;
  }
}

/**
 * A relayed request's session: its body is read as IR only when asked and no header names the
 * session; a body its codec cannot read is relayed as is all the same, balanced as before.
 */
export function relayedSession(
  ctx: Pick<RequestContext, "req" | "identity">,
  spec: Pick<GenerationSpec, "ingress" | "body">,
): Session {
  const prompt = () => {
    try {
      return spec.ingress.decodeRequest(spec.body.json, String(spec.body.json.model ?? ""));
    } catch {
      return undefined;
    }
  };
  return new Session(ctx, prompt, false);
}
