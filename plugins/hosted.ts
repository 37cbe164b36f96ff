/**
 * Hosted (server-side) tools across formats: which of the client's hosted tools a target gets,
 * under the route's `hosted_tools` policy, and the offset arithmetic their citations need.
 * See docs/hosted-tools.md.
 */
import type { EncodeContext } from "../src/kit/codec.ts";
import { badRequest } from "../src/kit/errors.ts";
import type * as ir from "../src/kit/ir.ts";

/** What a target can run natively: a hosted tool, given whether function tools come along. */
type HostedSupport = (tool: ir.HostedTool, withFunctions: boolean) => boolean;

export interface HostedPlan {
  /** The hosted tools to send, in the target's own form. */
  tools: ir.HostedTool[];
  /** The forced hosted tool, when the client forced one and it is sent. */
  forced?: ir.HostedTool;
}

const KIND_NAMES: Record<ir.HostedKind, string> = {
  web_search: "hosted web search",
  web_fetch: "hosted web fetch",
};

const describe = (t: ir.HostedTool) =>
  `hosted tool "${t.name}"${t.kind ? ` (${KIND_NAMES[t.kind]})` : ""}`;

/**
 * Applies the route's policy to the request's hosted tools:
 * - `map` (default): tools the target runs natively are kept, the others dropped;
 * - `drop`: all are dropped; `reject`: any hosted tool is a 400.
 * Every drop is reported in `ctx.dropped` (`tools.<name>`). A request whose only tools are
 * hosted ones that all had to go is a 400 naming the tool and the route: without them the
 * answer would silently be something else.
 */
export function planHosted(
  req: ir.Request,
  ctx: EncodeContext,
  supports: HostedSupport,
): HostedPlan {
  const hosted = req.hostedTools ?? [];
  if (hosted.length === 0) return { tools: [] };
  const policy = ctx.hostedTools ?? "map";
  if (policy === "reject") {
    const t = hosted[0];
    throw badRequest(
      `${t.field}: ${
        describe(t)
      } is not converted on route ${ctx.route} (its hosted_tools setting is reject)`,
      t.field,
    );
  }
  const withFunctions = (req.tools?.length ?? 0) > 0;
  const tools = policy === "map"
    ? hosted.filter((t) => t.kind !== undefined && supports(t, withFunctions))
    : [];
  const dropped = hosted.filter((t) => !tools.includes(t));
  if (tools.length === 0 && !withFunctions) {
    const t = dropped[0];
    const why = policy === "drop"
      ? "hosted tools are dropped on this route (hosted_tools: drop)"
      : "the upstream has no equivalent";
    throw badRequest(
      `${t.field}: ${
        describe(t)
      } cannot be used on route ${ctx.route}: ${why}, and the request has no other tools`,
      t.field,
    );
  }
  for (const t of dropped) ctx.dropped?.push(`tools.${t.name}`);
  const forced = req.hostedChoice === undefined
    ? undefined
    : tools.find((t) => t.name === req.hostedChoice);
  if (req.hostedChoice !== undefined && !forced) ctx.dropped?.push("tool_choice");
  return forced ? { tools, forced } : { tools };
}

/** A vendor's approximate `user_location` object as IR (both vendors name the fields alike). */
export function userLocationOf(loc: unknown): ir.HostedTool["userLocation"] {
  if (!loc || typeof loc !== "object") return undefined;
  const where: NonNullable<ir.HostedTool["userLocation"]> = {};
  for (const k of ["city", "region", "country", "timezone"] as const) {
    const v = (loc as Record<string, unknown>)[k];
    if (typeof v === "string") where[k] = v;
  }
  return Object.keys(where).length ? where : undefined;
}

/** Reports the options of a mapped hosted tool that the target has no field for. */
export function dropOptions(
  t: ir.HostedTool,
  ctx: EncodeContext,
  options: (keyof ir.HostedTool)[],
) {
  const wire: Partial<Record<keyof ir.HostedTool, string>> = {
    maxUses: "max_uses",
    allowedDomains: "allowed_domains",
    blockedDomains: "blocked_domains",
    userLocation: "user_location",
    contextSize: "search_context_size",
  };
  for (const o of options) {
    if (t[o] !== undefined) ctx.dropped?.push(`tools.${t.name}.${wire[o] ?? o}`);
  }
}

// ---- offsets ----

const utf8 = new TextEncoder();

/** UTF-8 byte length of a string. */
export const byteLength = (text: string) => utf8.encode(text).length;

/** The character offset in `text` of a UTF-8 byte offset (Gemini segment indexes are bytes). */
export function charOffset(text: string, bytes: number): number {
  let seen = 0;
  let i = 0;
  while (i < text.length && seen < bytes) {
    const code = text.codePointAt(i)!;
    seen += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
    i += code >= 0x10000 ? 2 : 1;
  }
  return i;
}

/** A citation's span in its part's text (a whole-part citation covers all of it). */
export const citedSpan = (c: ir.Citation, text: string) => ({
  start: c.start ?? 0,
  end: c.end ?? text.length,
});
