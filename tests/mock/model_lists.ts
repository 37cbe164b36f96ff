/**
 * The vendors' model list endpoints, in their real shapes: OpenAI `GET /v1/models` (one page,
 * `{object: "list", data}`), Anthropic `GET /v1/models` (`limit`, `after_id`/`before_id`;
 * `has_more`, `first_id`, `last_id`), Gemini `GET /v1beta/models` (`pageSize`, `pageToken`;
 * `nextPageToken`). Anthropic and OpenAI share the path: an `x-api-key` request is Anthropic's.
 * Pages hold at most PAGE models (the vendors allow 1000) so that paging is exercised.
 */
import { chat } from "./chat.ts";
import { generateContent } from "./generate-content.ts";
import { messages } from "./messages.ts";
import type { ErrorDetail, Vendor } from "./vendor.ts";

export const PAGE = 2;

/** What each vendor reports; tests change it to see a refresh. */
export interface ListedModels {
  openai: string[];
  anthropic: string[];
  /** Gemini ids; those ending `-embedding` only embed, `-imagen` only predict images. */
  gemini: string[];
}

/** `renamed-reported` matches the harness's `renamed-*` route, which renames: never listed. */
export const listedModels = (): ListedModels => ({
  openai: ["pt-text", "resp-text", "chat-text", "chat-think", "gpt-unrouted", "renamed-reported"],
  anthropic: ["msg-text", "msg-think", "msg-tool", "claude-unrouted", "msg-sonnet"],
  gemini: ["gem-text", "gem-embedding", "gem-imagen", "gem-flash"],
});

const CREATED = 1_700_000_000;

/** A list's answer: a body, or an error in the vendor's envelope. */
export type ListAnswer =
  & { vendor: Vendor }
  & (
    | { body: unknown }
    | { error: number; detail?: ErrorDetail }
  );

/** The answer of a list endpoint, or undefined when `url` is none. `failing`: a 503 instead. */
export function modelList(
  req: Request,
  url: URL,
  models: ListedModels,
  failing: boolean,
): ListAnswer | undefined {
  if (req.method !== "GET") return undefined;
  const which = url.pathname === "/v1beta/models"
    ? "gemini"
    : url.pathname === "/v1/models"
    ? req.headers.has("x-api-key") ? "anthropic" : "openai"
    : undefined;
  if (!which) return undefined;
  const vendor = { openai: chat, anthropic: messages, gemini: generateContent }[which];
  const reply = (body: unknown) => ({ vendor, body });
  const keyed = ["x-api-key", "authorization", "x-goog-api-key"].some((h) => req.headers.has(h));
  if (!keyed) return { vendor, error: 401, detail: { message: "missing API key" } };
  if (failing) return { vendor, error: 503 };
  const q = url.searchParams;
  if (which === "openai") {
    const data = models.openai.map((id) => ({
      id,
      object: "model",
      created: CREATED,
      owned_by: "mock",
    }));
    return reply({ object: "list", data });
  }
  if (which === "anthropic") {
    const limit = Math.min(Number(q.get("limit") ?? 20), PAGE);
    const after = q.get("after_id");
    const from = after ? models.anthropic.indexOf(after) + 1 : 0;
    const ids = models.anthropic.slice(from, from + limit);
    const data = ids.map((id) => ({
      type: "model",
      id,
      display_name: id,
      created_at: new Date(CREATED * 1000).toISOString(),
    }));
    return reply({
      data,
      has_more: from + limit < models.anthropic.length,
      first_id: ids[0] ?? null,
      last_id: ids.at(-1) ?? null,
    });
  }
  const size = Math.min(Number(q.get("pageSize") ?? 50), PAGE);
  const from = Number(q.get("pageToken") ? atob(q.get("pageToken")!) : 0);
  const ids = models.gemini.slice(from, from + size);
  const more = from + size < models.gemini.length;
  return reply({
    models: ids.map((id) => ({
      name: `models/${id}`,
      version: "001",
      displayName: id,
      supportedGenerationMethods: id.endsWith("-embedding")
        ? ["embedContent", "countTextTokens", "countTokens", "asyncBatchEmbedContent"]
        : id.endsWith("-imagen")
        ? ["predict"]
        : ["generateContent", "countTokens"],
    })),
    ...(more && { nextPageToken: btoa(String(from + size)) }),
  });
}
