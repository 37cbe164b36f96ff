/**
 * One relayed attempt on one target: the client's bytes go to a provider of the same format
 * (only the model may be renamed) and its answer comes back as is, streams included.
 */
import type { StreamWatch } from "../kit/codec.ts";
import type { UpstreamSpec } from "../kit/format.ts";
import type { GenerationSpec, OtherEndpoint } from "../kit/generation.ts";
import type { RequestContext } from "./context.ts";
import { idFor } from "./answer.ts";
import { errorResponse } from "./error_response.ts";
import { type Attempt, ProviderFailure } from "./failover.ts";
import type { PoolKey } from "../state/health.ts";
import { holdRelayedOpening } from "./hold_opening.ts";
import { headersFrom, pickHeaders, respondRelayed, upstreamHeaders } from "./headers.ts";
import { callUpstream, type UpstreamResponse } from "./relay.ts";
import { readErrorText, readProviderError, readUpstreamJson } from "./upstream_body.ts";
import { throughPlatform } from "./platform_call.ts";
import type { Resolved } from "./router.ts";
import { framingOf, relayStream } from "./stream_stage.ts";
import { EventReader } from "./upstream_events.ts";
import { streamUsage, usageOf } from "./usage.ts";
import { relayedSession } from "./session.ts";

/** What a relayed request needs of its generation spec. */
type Relayed = Pick<
  GenerationSpec,
  "ingress" | "body" | "stream" | "relayPath" | "framing" | "headers"
>;

/** Relayed attempts, to providers of the client's format only. */
export function relaying(
  ctx: RequestContext,
  spec: Relayed,
  why?: string,
  other?: OtherEndpoint,
): Attempt<Response> {
  const api = spec.ingress.api;
  const attempt: Attempt<Response> = {
    run: (t, key, last) => relayAttempt(ctx, spec, t, key, last, other),
    eligible: (t) => t.provider.api === api,
    bound: why ?? `the request is relayed as is to ${api} providers`,
    session: () => relayedSession(ctx, spec).signal(),
  };
  // A continuation goes to the account that issued its token.
  const token = other ? undefined : spec.ingress.longDecode?.resumes(spec.body.json);
  if (token !== undefined) attempt.pin = ctx.gw.pins.get(owner(ctx), token);
  return attempt;
}

/** Whose pins a request may use: its identity's (another client's token pins nothing). */
const owner = (ctx: RequestContext) => ctx.identity?.name ?? "";

/** What tells the pins of the continuation tokens a relayed answer issues. */
interface Issuing {
  /** A whole answer, which may issue one. */
  answer(json: Record<string, unknown>): void;
  /** A stream's watch, also telling of every event that may issue one. */
  watch(watch: StreamWatch): StreamWatch;
}

/**
 * Where the route could send a continuation elsewhere (several targets, or a key pool), what
 * remembers the account a relayed answer's continuation tokens come from.
 */
function pinning(
  ctx: RequestContext,
  spec: Relayed,
  r: Resolved,
  key: PoolKey | undefined,
): Issuing | undefined {
  const longDecode = spec.ingress.longDecode;
  if (!longDecode || (r.targets.length < 2 && (r.provider.api_keys?.length ?? 0) < 2)) {
    return undefined;
  }
  const pin = { provider: r.provider.name, key: key?.index };
  const answer = (json: Record<string, unknown>) => {
    const token = longDecode.issued(json);
    if (token !== undefined) ctx.gw.pins.remember(owner(ctx), token, pin);
  };
  return {
    answer,
    watch: (watch) => ({
      inspect(e) {
        if (e.data.includes(longDecode.marker)) {
          try {
            answer(JSON.parse(e.data));
          } catch {
            // not an event that issues one
          }
        }
        return watch.inspect(e);
      },
      usageEvents: () => watch.usageEvents(),
      output: () => watch.output(),
    }),
  };
}

/** One relayed attempt on one target. */
async function relayAttempt(
  ctx: RequestContext,
  spec: Relayed,
  r: Resolved,
  key: PoolKey | undefined,
  last: boolean,
  other?: OtherEndpoint,
): Promise<Response> {
  const path = other?.path ?? spec.relayPath?.(r.upstreamModel) ??
    spec.ingress.path(r.upstreamModel, spec.stream);
  const { json, raw } = spec.body;
  const renamed = r.upstreamModel !== r.requested && typeof json.model === "string";
  const { formats } = ctx.gw;
  const api = r.provider.api;
  const upstream = formats.upstream(api)!;
  const sent = renamed ? { ...json, model: r.upstreamModel } : json;
  const text = renamed ? JSON.stringify(sent) : raw;
  const operation = other ? other.operation ?? { unserved: path } : "generate";
  const issuing = other ? undefined : pinning(ctx, spec, r, key);
  const relayed = spec.stream ? relayFraming(ctx, spec, upstream) : undefined;
  const platform = throughPlatform(ctx, r, sent, spec.stream, operation, path);
  ctx.trace.routed("relay");
  ctx.trace.attempt();
  ctx.trace.sentChars = text.length;
  const up = await callUpstream({
    provider: r.provider,
    spec: upstream,
    key: key?.value,
    path,
    body: text,
    forward: pickHeaders(spec.headers ?? ctx.headerPairs, formats.forwardHeaders(api)),
    signal: ctx.req.signal,
    stopping: ctx.gw.stopping,
    platform,
    framing: relayed,
  });
  const allow = formats.responseHeaders(api, ctx.identity?.limits !== undefined);
  if (!up.res.ok) {
    // The provider's own error envelope reaches clients of its format's dialect, and of those
    // that pass it through.
    const own = formats.get(api)?.dialect === ctx.dialect || ctx.dialect.passesWireErrors === true;
    return await relayError(ctx, up, allow, r.provider.timeouts.idle_ms, upstream, own);
  }
  const { framing } = up;
  let body: BodyInit;
  if (!framing) {
    // A whole JSON document either way: a fixed body takes Deno's faster response path.
    const read = await readUpstreamJson(up, r.provider, ctx.gw.secrets);
    const from = { json: [read.json], headers: up.res.headers };
    ctx.trace.reportUsage(usageOf(other?.usage ?? spec.ingress.usage, from, up.platform));
    issuing?.answer(read.json);
    body = read.bytes;
  } else {
    const watch = spec.ingress.watch();
    const usage = streamUsage(spec.ingress.usage, watch, up.platform);
    const reader = new EventReader(up, r.provider.timeouts, framing, ctx.gw.secrets);
    // Only a target that may yet fail over holds its opening (decoded to see where content starts).
    const events = last
      ? reader
      : await holdRelayedOpening(reader, spec.ingress.decodeStream({ now: 0, id: idFor(ctx) }));
    body = relayStream(events, framing, issuing?.watch(watch) ?? watch, ctx.trace, usage);
  }
  return respondRelayed(
    body,
    up.res.status,
    upstreamHeaders(up.res, allow, ctx.gw.secrets),
    framing,
  );
}

/** A relayed stream's framing: the client's around the provider format's own, if it has one. */
function relayFraming(ctx: RequestContext, spec: Relayed, upstream: UpstreamSpec) {
  const own = framingOf(upstream, (why) => ctx.dialect.interruption(why));
  return spec.framing?.open(own) ?? own;
}

/**
 * A provider's error on a relayed route: a JSON error body is relayed as the provider wrote it
 * (scrubbed of keys); anything else (an nginx HTML page, plain text) becomes the client's own
 * error envelope with the same status and a short excerpt. Thrown, so failover may try the
 * next target; the last one reaches the client.
 */
async function relayError(
  ctx: RequestContext,
  up: UpstreamResponse,
  allow: readonly string[],
  idleMs: number,
  spec: UpstreamSpec,
  /** The client hears the provider format's own envelope (`Dialect.passesWireErrors`). */
  own: boolean,
): Promise<never> {
  const { secrets } = ctx.gw;
  const headers = headersFrom(upstreamHeaders(up.res, allow, secrets));
  const text = await readErrorText(up, idleMs, secrets);
  const err = readProviderError(up, text, headers, spec);
  // A platform's error envelope is not the format's, nor is the format's that of a client of
  // another dialect (unless it passes the format's through): they hear it in theirs.
  const answer = own && isJsonObject(text) && !up.platform
    ? new Response(text, { status: up.res.status, headers })
    : errorResponse(ctx.dialect, err, ctx.requestId);
  throw new ProviderFailure(err, answer);
}

function isJsonObject(text: string): boolean {
  try {
    const v = JSON.parse(text);
    return typeof v === "object" && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}
