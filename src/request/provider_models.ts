/**
 * The models each provider reports on its own list endpoint, for the gateway's model lists (what
 * a pattern route can call). Read in the background — at start, then every REFRESH_S and after a
 * reload — so a model list request never waits on a provider; a failed read (an error, a list
 * over MAX_LIST_MB) keeps the last good list. See docs/endpoints-and-errors.md#model-lists.
 */
import type { ProviderConfig } from "../config/config.ts";
import type { Gateway, ReportedModels } from "./context.ts";
import { DEMO_MODELS } from "./demo.ts";
import { DEMO_API } from "../config/config.ts";
import { logEvent } from "../ops/log.ts";
import { clip } from "../kit/model_name.ts";
import { upstreamUrl } from "./relay.ts";

/** Seconds between two reads of every provider's list. */
const REFRESH_S = 600;

/** The longest paging cursor followed (it goes into a URL, and a failure's log line). */
const MAX_CURSOR_CHARS = 1024;

/** Pages read at most from one provider (a broken `next` must not loop). */
const MAX_PAGES = 50;

/** Bytes one provider's list may take, all pages together: a provider is untrusted. */
const MAX_LIST_MB = 8;
const MIB = 1024 * 1024;

export class ProviderModels implements ReportedModels {
  /** By provider name: the ids of its last good read. */
  private readonly lists = new Map<string, readonly string[]>();
  private timer?: ReturnType<typeof setInterval>;
  private readonly stopping = new AbortController();
  private running?: Promise<void>;
  /** A reload came since the running read took its snapshot: read again when it ends. */
  private reloadedSince = false;

  /** `live`: the snapshot in force, whose providers are read (a reload changes them). */
  constructor(private readonly live: { current: Gateway }) {}

  ids(provider: ProviderConfig): readonly string[] | undefined {
    return provider.api === DEMO_API ? DEMO_MODELS : this.lists.get(provider.name);
  }

  start(): void {
    this.refresh();
    const timer = setInterval(() => this.refresh(), REFRESH_S * 1000);
    // The listener keeps the process alive, not this.
    Deno.unrefTimer(timer);
    this.timer = timer;
  }

  reloaded(): void {
    if (this.timer === undefined) return;
    this.reloadedSince = true;
    this.refresh();
  }

  /** A read already under way is not doubled (it reads again if a reload came meanwhile). */
  refresh(): Promise<void> {
    return this.running ??= this.readUntilCurrent().finally(() => this.running = undefined);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    this.stopping.abort();
    await this.running;
  }

  private async readUntilCurrent(): Promise<void> {
    do {
      this.reloadedSince = false;
      const { config } = this.live.current;
      await Promise.all(config.providers.map((p) => this.read(p)));
    } while (this.reloadedSince && !this.stopping.signal.aborted);
  }

  private async read(provider: ProviderConfig): Promise<void> {
    const { formats, router, secrets } = this.live.current;
    const spec = formats.upstream(provider.api);
    // A platform's model list is not its format's (Bedrock and Azure list theirs elsewhere).
    if (!spec?.models || provider.platform !== undefined) return;
    try {
      const url = new URL(upstreamUrl(provider, spec.models.path));
      const ids: string[] = [];
      let budget = MAX_LIST_MB * MIB;
      for (let page = 0; page < MAX_PAGES; page++) {
        const out = { method: "GET", url, headers: new Headers(), body: "" };
        await spec.authorize(out, router.health.key(provider)?.value);
        const signal = AbortSignal.any([
          this.stopping.signal,
          AbortSignal.timeout(provider.timeouts.first_byte_ms),
        ]);
        const res = await fetch(out.url, { headers: out.headers, signal });
        if (!res.ok) {
          await res.body?.cancel();
          throw new Error(`HTTP ${res.status}`);
        }
        const bytes = await readAtMost(res, budget);
        budget -= bytes.byteLength;
        const body = JSON.parse(new TextDecoder().decode(bytes));
        if (!body || typeof body !== "object") throw new Error("not a JSON object");
        const { ids: more, next } = spec.models.page(body);
        ids.push(...more);
        if (!next) break;
        for (const [k, v] of Object.entries(next)) {
          // A cursor is an id or a token; a longer one is not a page to ask for.
          if (v.length > MAX_CURSOR_CHARS) {
            throw new Error(`a page cursor over ${MAX_CURSOR_CHARS} characters`);
          }
          url.searchParams.set(k, v);
        }
      }
      this.lists.set(provider.name, ids);
    } catch (e) {
      if (this.stopping.signal.aborted) return;
      // The last good list stays; the operator learns why this read failed.
      const error = clip((e as Error).message);
      logEvent({ msg: "provider_models_failed", provider: provider.name, error }, secrets);
    }
  }
}

/** A body's bytes, or an error as soon as they pass `limit` (the rest is not read). */
async function readAtMost(res: Response, limit: number): Promise<Uint8Array> {
  const chunks: Uint8Array<ArrayBuffer>[] = [];
  let size = 0;
  // Leaving the loop early cancels the body.
  for await (const chunk of res.body ?? []) {
    size += chunk.byteLength;
    if (size > limit) throw new Error(`a list over ${MAX_LIST_MB} MiB`);
    chunks.push(chunk);
  }
  return await new Blob(chunks).bytes();
}
