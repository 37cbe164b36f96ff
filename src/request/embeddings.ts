/**
 * The embeddings operation, beside generation: the model routed once, the route's targets tried
 * in turn (failover), each attempt relayed — the provider speaks the client's own wire and one
 * call takes every input: bytes in, bytes out — or converted: the inputs split into the calls
 * the target's wire takes (batches, or one input a call), sent a few at a time, their vectors
 * put back in input order and their usage summed, and answered in the client's format. One
 * failed call fails the attempt with the provider's error. Wires are the plugins'
 * (src/kit/embeddings.ts); nothing here knows a vendor.
 */
import { DEMO_API } from "../config/config.ts";
import type { RequestContext } from "./context.ts";
import type { BatchLimit, EmbeddingInput, EmbeddingWire, WireAnswer } from "../kit/embeddings.ts";
import type { EmbeddingSpec } from "../kit/generation.ts";
import { badRequest } from "../kit/errors.ts";
import { demoVector } from "./demo.ts";
import { ProviderFailure } from "./failover.ts";
import { attempt, route } from "./generation.ts";
import type { PoolKey } from "../state/health.ts";
import { tokensFor } from "../ops/estimate.ts";
import { throughPlatform } from "./platform_call.ts";
import { callUpstream } from "./relay.ts";
import { relaying } from "./relay_attempt.ts";
import type { Resolved } from "./router.ts";
import { readUpstreamJson, upstreamError } from "./upstream_body.ts";

/** Calls of one request in flight at once, at most (a one-input wire fans a batch out). */
export const CONCURRENT_CALLS = 8;

/**
 * Bytes of UTF-8 a token is taken to be against a wire's token budget per call: few, so a call
 * is split too early (a call more) rather than too late (the provider's 400). Usage a provider
 * does not report is the gateway's one estimate instead (src/ops/estimate.ts).
 */
const BUDGET_BYTES_PER_TOKEN = 3;

/** Runs an embeddings request on the route of its model. */
export function embed(ctx: RequestContext, spec: EmbeddingSpec): Promise<Response> {
  const r = route(ctx, spec.model);
  const tokenIds = spec.request.inputs.some((i) => typeof i !== "string");
  return attempt(ctx, r, { run: (t, key, last) => embedOn(ctx, spec, t, key, last, tokenIds) });
}

/**
 * One attempt on one target: answered here by the demo provider, relayed, or converted. What the
 * target cannot take (its api has no embeddings, token ids, a size it cannot make) is a 400
 * thrown before any call, so failover moves on to a target that can.
 */
function embedOn(
  ctx: RequestContext,
  spec: EmbeddingSpec,
  r: Resolved,
  key: PoolKey | undefined,
  last: boolean,
  tokenIds: boolean,
): Promise<Response> {
  if (r.provider.api === DEMO_API) return Promise.resolve(answerLocally(ctx, spec, r));
  const model = r.upstreamModel;
  const wire = ctx.gw.formats.embeddings(r.provider, model);
  if (tokenIds && !wire.tokenIds) {
    throw badRequest(
      `input: token ids cannot be sent to provider ${r.provider.name} (${wire.id} embeddings ` +
        `take text only); send the text`,
      "input",
    );
  }
  const calls = split(spec.request.inputs, wire.batch(model));
  if (wire === spec.wire && calls.length === 1) return relay(ctx, spec, r, key, last);
  return convert(ctx, spec, r, key, wire, calls);
}

/** The client's body as is to a provider of its own wire; its answer back as is. */
function relay(
  ctx: RequestContext,
  spec: EmbeddingSpec,
  r: Resolved,
  key: PoolKey | undefined,
  last: boolean,
): Promise<Response> {
  const ingress = ctx.gw.formats.codec(r.provider.api);
  const { body, usage } = spec;
  const path = spec.wire.path(r.upstreamModel, spec.request.inputs.length);
  const other = { ingress, body, path, operation: "embeddings" as const, usage };
  return relaying(ctx, { ingress, body, stream: false }, undefined, other).run(r, key, last);
}

/** The inputs in the calls `limit` allows, in order: at most so many, and so many tokens. */
function split(inputs: readonly EmbeddingInput[], limit: BatchLimit): EmbeddingInput[][] {
  const budget = limit.tokens ?? Infinity;
  if (inputs.length <= limit.inputs && budget === Infinity) return [[...inputs]];
  const calls: EmbeddingInput[][] = [];
  let call: EmbeddingInput[] = [];
  let tokens = 0;
  for (const input of inputs) {
    const n = budget === Infinity ? 0 : budgetTokens(input);
    if (call.length > 0 && (call.length >= limit.inputs || tokens + n > budget)) {
      calls.push(call);
      call = [];
      tokens = 0;
    }
    call.push(input);
    tokens += n;
  }
  calls.push(call);
  return calls;
}

/** Every call made (a 400 before any is sent), sent, and the answers joined in order. */
async function convert(
  ctx: RequestContext,
  spec: EmbeddingSpec,
  r: Resolved,
  key: PoolKey | undefined,
  wire: EmbeddingWire,
  calls: EmbeddingInput[][],
): Promise<Response> {
  const model = r.upstreamModel;
  const { dimensions, user } = spec.request;
  // Every call made first: what the wire refuses (a size, a model its URL cannot carry) is a 400.
  const requests = calls.map((inputs) => ({
    body: wire.encode({ inputs, dimensions, user }, model),
    path: wire.path(model, inputs.length),
    count: inputs.length,
  }));
  // An earlier attempt's report is not this one's.
  ctx.trace.dropped = user !== undefined && !wire.user ? ["user"] : undefined;
  ctx.trace.routed("convert");
  ctx.trace.attempt();
  const answers = await inOrder(
    requests,
    ctx.req.signal,
    (request, signal) => callWire(ctx, r, key, wire, request, signal),
  );
  let inputTokens = 0;
  for (const [i, a] of answers.entries()) inputTokens += a.inputTokens ?? estimate(ctx, calls[i]);
  const vectors = answers.flatMap((a) => a.vectors);
  ctx.trace.reportUsage({ inputTokens, outputTokens: 0 });
  // The model that made them, as a relayed answer names it.
  const res = Response.json(spec.answer({ vectors, inputTokens }, model));
  if (ctx.trace.dropped) res.headers.set("x-gateway-dropped-params", ctx.trace.dropped.join(","));
  return res;
}

/** One call of a converted attempt; a provider's error is thrown as its failure. */
async function callWire(
  ctx: RequestContext,
  r: Resolved,
  key: PoolKey | undefined,
  wire: EmbeddingWire,
  { body, path, count }: { body: Record<string, unknown>; path: string; count: number },
  signal: AbortSignal,
): Promise<WireAnswer> {
  const spec = ctx.gw.formats.upstream(r.provider.api)!;
  const up = await callUpstream({
    provider: r.provider,
    spec,
    key: key?.value,
    path,
    body: JSON.stringify(body),
    signal,
    stopping: ctx.gw.stopping,
    platform: throughPlatform(ctx, r, body, false, "embeddings", path),
  });
  const { idle_ms } = r.provider.timeouts;
  if (!up.res.ok) throw new ProviderFailure(await upstreamError(up, idle_ms, ctx.gw.secrets, spec));
  const { json } = await readUpstreamJson(up, r.provider, ctx.gw.secrets);
  return wire.decode(json, up.res.headers, count);
}

/**
 * `run` on every item, at most CONCURRENT_CALLS at once, results in the items' order. The first
 * failure aborts the calls still running (their own failures are not the request's) and is
 * thrown once every call has settled.
 */
async function inOrder<T, R>(
  items: readonly T[],
  client: AbortSignal,
  run: (item: T, signal: AbortSignal) => Promise<R>,
): Promise<R[]> {
  if (items.length === 1) return [await run(items[0], client)];
  const stop = new AbortController();
  const signal = AbortSignal.any([client, stop.signal]);
  const out = new Array<R>(items.length);
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    while (!failure && next < items.length) {
      const i = next++;
      try {
        out[i] = await run(items[i], signal);
      } catch (error) {
        if (failure) continue;
        failure = { error };
        stop.abort();
      }
    }
  };
  const workers = Math.min(CONCURRENT_CALLS, items.length);
  await Promise.all(Array.from({ length: workers }, worker));
  if (failure) throw failure.error;
  return out;
}

/** The demo provider's answer: vectors made here from each input. */
function answerLocally(ctx: RequestContext, spec: EmbeddingSpec, r: Resolved): Response {
  ctx.trace.routed("local");
  const { inputs, dimensions } = spec.request;
  const inputTokens = estimate(ctx, inputs);
  ctx.trace.reportUsage({ inputTokens, outputTokens: 0 });
  const vectors = inputs.map((input) => demoVector(input, dimensions));
  return Response.json(spec.answer({ vectors, inputTokens }, r.upstreamModel));
}

/**
 * The input tokens of a call whose provider reports none, estimated (token ids count as
 * themselves); the access log says the usage holds an estimate.
 */
function estimate(ctx: RequestContext, inputs: readonly EmbeddingInput[]): number {
  ctx.trace.estimated = true;
  let n = 0;
  for (const input of inputs) {
    n += typeof input === "string" ? tokensFor(input.length) : input.length;
  }
  return n;
}

/** A text's tokens against a budget (UTF-8 bytes / BUDGET_BYTES_PER_TOKEN); token ids their own. */
function budgetTokens(input: EmbeddingInput): number {
  return typeof input === "string"
    ? Math.ceil(utf8Length(input) / BUDGET_BYTES_PER_TOKEN)
    : input.length;
}

/** The UTF-8 length of a text, without encoding it. */
function utf8Length(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    // Two bytes below U+0800, three above; a surrogate pair's four are two per half.
    if (c >= 0x80) bytes += c < 0x800 || (c >= 0xd800 && c <= 0xdfff) ? 1 : 2;
  }
  return bytes;
}
