/**
 * The platforms a gateway reaches providers through (src/kit/platform.ts): the check of a
 * provider's `platform`, api, block and base_url, and per provider one binding — its block as
 * parsed, its credential made once — which upstream calls are addressed, credentialed, framed
 * and read with. A provider without a platform never comes here.
 */
import {
  type Issue,
  type KnownPlatforms,
  namesNone,
  providerBlocks,
  type ProviderConfig,
} from "../config/config.ts";
import type { EmbeddingWire } from "../kit/embeddings.ts";
import { configIssues, unknownFields } from "../config/issues.ts";
import { GatewayError } from "../kit/errors.ts";
import {
  type AnyPlatform,
  type Credential,
  type Operation,
  type PlatformCall,
  type PlatformError,
  type PlatformProvider,
  servesOperation,
} from "../kit/platform.ts";
import type { OutgoingRequest } from "../kit/format.ts";
import type { UpstreamFraming } from "../kit/framing.ts";
import type { Secrets } from "../ops/secrets.ts";

/** A provider bound to its platform. */
interface Binding {
  platform: AnyPlatform;
  provider: PlatformProvider<unknown>;
  credential: Credential;
}

/** A provider's call through its platform. */
export interface PlatformRequest {
  binding: Binding;
  call: PlatformCall;
  /** The body as JSON, for a platform that adjusts bodies (else the text goes as is). */
  json?: Record<string, unknown>;
}

export class Platforms implements KnownPlatforms {
  private readonly byId = new Map<string, AnyPlatform>();
  private readonly settings = new WeakMap<ProviderConfig, unknown>();
  private readonly bindings = new WeakMap<ProviderConfig, Binding>();

  constructor(platforms: readonly AnyPlatform[], taken: readonly string[]) {
    for (const p of platforms) {
      if (taken.includes(p.id) || this.byId.has(p.id)) {
        throw new Error(`platform id "${p.id}" is taken`);
      }
      this.byId.set(p.id, p);
    }
  }

  /** `gen_ai.provider.name` by platform id. */
  get systems(): Record<string, string> {
    return Object.fromEntries([...this.byId.values()].map((p) => [p.id, p.system]));
  }

  check(p: ProviderConfig): Issue[] {
    const platform = this.byId.get(p.platform!);
    if (!platform) {
      return [{ path: ["platform"], message: namesNone("platform", this.byId.keys()) }];
    }
    const issues: Issue[] = [];
    if (!platform.apis.includes(p.api)) {
      const message = `platform ${platform.id} carries api ${platform.apis.join(", ")}`;
      issues.push({ path: ["api"], message });
    }
    const key = platform.settings?.key;
    const blocks = providerBlocks(p);
    const others = Object.keys(blocks).filter((k) => k !== key);
    const reads = key ? ` (platform ${platform.id} reads ${key})` : "";
    for (const unknown of unknownFields(others, [])) {
      issues.push({ ...unknown, message: unknown.message + reads });
    }
    let settings: unknown;
    if (platform.settings) {
      const parsed = platform.settings.schema.safeParse(blocks[platform.settings.key]);
      if (!parsed.success) {
        return [...issues, ...configIssues(parsed.error.issues, [key!])];
      }
      settings = parsed.data;
    }
    if (!p.base_url && !platform.address.defaultBaseUrl?.(settings)) {
      issues.push({ path: ["base_url"], message: `required for platform ${platform.id}` });
    }
    if (issues.length === 0) this.settings.set(p, settings);
    return issues;
  }

  unsafeModel(p: ProviderConfig, model: string): string | undefined {
    return this.byId.get(p.platform!)?.models?.unsafe?.(model);
  }

  /**
   * The binding of a provider that names a platform (its config was checked): made on first
   * use, then kept as long as the config snapshot is. What its credential holds or mints is
   * scrubbed like a configured key.
   */
  bind(p: ProviderConfig, secrets: Secrets): Binding {
    let binding = this.bindings.get(p);
    if (binding) return binding;
    const platform = this.byId.get(p.platform!);
    if (!platform || !this.settings.has(p)) {
      throw new GatewayError(500, "upstream", `provider ${p.name} was not checked for a platform`);
    }
    const settings = this.settings.get(p);
    const base = p.base_url ?? platform.address.defaultBaseUrl!(settings)!;
    const provider = { name: p.name, api: p.api, base_url: base.replace(/\/+$/, ""), settings };
    let minted: ((token: string) => void) | undefined;
    const credential = platform.credential(provider, {
      secret: (v) => secrets.add([v]),
      minted: (token) => (minted ??= secrets.minted())(token),
    });
    binding = { platform, provider, credential };
    this.bindings.set(p, binding);
    return binding;
  }

  /**
   * Whether `p` serves `operation`: a provider without a platform (the vendor's own API) serves
   * every one its format has; a platform those its `address.operations` lists.
   */
  serves(p: ProviderConfig, operation: Operation): boolean {
    const platform = p.platform === undefined ? undefined : this.byId.get(p.platform);
    return !platform || servesOperation(platform, operation);
  }

  /** The embeddings wire of `model` on `p`'s platform, where the platform has its own. */
  embeddings(p: ProviderConfig, model: string): EmbeddingWire | undefined {
    return p.platform === undefined
      ? undefined
      : this.byId.get(p.platform)?.body?.embeddings?.(model);
  }

  /** Who reads the signatures of `model` on `p`'s platform, where the platform says. */
  family(p: ProviderConfig, model: string): string | undefined {
    return p.platform === undefined
      ? undefined
      : this.byId.get(p.platform)?.models?.family?.(model, p.api);
  }
}

/** `err` as the platform reads the error answer, where it says more than the format did. */
export function readPlatformError(
  platform: AnyPlatform,
  err: GatewayError,
  status: number,
  headers: Headers,
  text: string,
): GatewayError {
  const own: PlatformError | undefined = platform.readError?.(status, headers, text);
  if (!own) return err;
  const out = new GatewayError(
    own.status ?? err.status,
    own.kind ?? err.kind,
    own.message ?? err.message,
    undefined,
    err.headers,
  );
  out.retry = own.retry;
  return out;
}

/**
 * Sends a call through its platform: addressed and shaped by it (`out.url` is replaced, the
 * body adjusted), credentialed, and sent once more with a fresh credential when the platform
 * refused the first with a 401 and the credential can mint another.
 */
export async function sendThrough(
  p: PlatformRequest,
  out: OutgoingRequest,
  key: string | undefined,
  signal: AbortSignal,
  send: (out: OutgoingRequest) => Promise<Response>,
): Promise<Response> {
  const { platform, provider, credential } = p.binding;
  out.url = new URL(platform.address.url(provider, p.call));
  const adjust = platform.body?.request;
  if (adjust && p.json) {
    const adjusted = adjust(p.json, out.headers, p.call, provider);
    // Unchanged (a Gemini body on Vertex): the bytes as they were, not a re-serialisation.
    if (adjusted !== p.json) out.body = JSON.stringify(adjusted);
  }
  await authorize(p, out, key, signal);
  const res = await send(out);
  if (res.status !== 401 || !credential.refused) return res;
  await res.body?.cancel();
  credential.refused(out);
  await authorize(p, out, key, signal);
  return await send(out);
}

/**
 * What the credential that authorized a call scrubs from the call's texts that may quote it
 * (`Credential.scrub`; `sent`: the call as it went, its last authorization), if it scrubs any.
 */
export function credentialScrub(
  p: PlatformRequest | undefined,
  sent: OutgoingRequest,
): ((text: string) => string) | undefined {
  const credential = p?.binding.credential;
  if (!credential?.scrub) return undefined;
  const { headers } = sent;
  return (text) => credential.scrub!(text, headers);
}

/** A successful JSON answer's reshaping by the platform of `p`, if its operation needs one. */
export function platformAnswer(
  p: PlatformRequest | undefined,
): ((json: Record<string, unknown>) => Record<string, unknown> | undefined) | undefined {
  const answer = p?.binding.platform.body?.answer;
  if (!answer || p.call.stream) return undefined;
  return (json) => answer(json, p.call, p.binding.provider);
}

/** A credential that cannot be had (a token endpoint refusing, say) is a 502 that says so. */
async function authorize(
  p: PlatformRequest,
  out: OutgoingRequest,
  key: string | undefined,
  signal: AbortSignal,
): Promise<void> {
  try {
    await p.binding.credential.authorize(out, key, signal);
  } catch (e) {
    if (e instanceof GatewayError || signal.aborted) throw e;
    const why = e instanceof Error ? e.message : String(e);
    throw new GatewayError(
      502,
      "upstream",
      `upstream ${p.binding.provider.name}: no credential to call it with: ${why}`,
    );
  }
}

/** A stream's framing through the platform of `p` (if any), given the format's own. */
export function platformFraming(
  p: PlatformRequest | undefined,
  inner: UpstreamFraming,
): UpstreamFraming {
  return p?.binding.platform.framing?.(inner, p.call, p.binding.provider) ?? inner;
}
