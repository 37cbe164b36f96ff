/**
 * Azure OpenAI through its v1 API: `<base_url>/chat/completions`, `<base_url>/responses` and
 * `<base_url>/embeddings`, `base_url` being the resource's
 * `https://<resource>.openai.azure.com/openai/v1` and the model field naming the deployment.
 * The provider key goes in `api-key`; without one, an Entra ID access token read from
 * `azure.bearer_token_file` (at every load: a reload picks up a renewed token) goes as
 * `Authorization: Bearer`.
 */
import { z } from "zod";
import { type CredentialFileError, readCredentialFile } from "../../src/kit/credential_file.ts";
import { DEFAULT_OPERATIONS, type Platform } from "../../src/kit/platform.ts";

const PATHS: Record<string, string> = { chat: "/chat/completions", responses: "/responses" };

const settings = z.strictObject({
  /** A file holding an Entra ID access token, sent when the provider has no `api_key`. */
  bearer_token_file: z.string().min(1).optional(),
}).optional().transform((block, ctx) => {
  if (!block?.bearer_token_file) return {};
  try {
    const token = readCredentialFile(block.bearer_token_file).trim();
    if (token) return { bearer_token: token };
    ctx.addIssue({ code: "custom", path: ["bearer_token_file"], message: "holds no token" });
  } catch (e) {
    const { message } = e as CredentialFileError;
    ctx.addIssue({ code: "custom", path: ["bearer_token_file"], message });
  }
  return {};
});

export const azurePlatform: Platform<{ bearer_token?: string }> = {
  id: "azure-openai",
  system: "azure.ai.openai",
  apis: Object.keys(PATHS),
  settings: { key: "azure", schema: settings },
  address: {
    // Embeddings are OpenAI's `/embeddings` (the format's path), beside the others.
    url: ({ base_url, api }, { operation, path }) =>
      base_url + (operation === "embeddings" ? path : PATHS[api]),
    operations: [...DEFAULT_OPERATIONS, "embeddings"],
  },
  credential({ settings }, ctx) {
    const token = settings.bearer_token;
    if (token) ctx.secret(token);
    return {
      authorize(req, key) {
        if (key) req.headers.set("api-key", key);
        else if (token) req.headers.set("authorization", `Bearer ${token}`);
      },
    };
  },
};
