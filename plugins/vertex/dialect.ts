/**
 * Vertex AI as its clients hear it: the gateway key where a Google client puts its access token
 * (`Authorization: Bearer`; `@google/genai`'s express mode sends `x-goog-api-key`), errors in
 * Google's envelope as Vertex sends them, and a cut stream ended as the wire's SDKs read it.
 */
import type { Dialect } from "../../src/kit/format.ts";
import { googleDialect } from "../generate-content/dialect.ts";
import { anthropicDialect } from "../messages/dialect.ts";
import { bearer } from "../shared.ts";

/** Gemini on Vertex: Google's dialect, with the access token as the key. */
export const vertexDialect: Dialect = {
  ...googleDialect,
  id: "vertex",
  // Google's reading first: a key in `?key=` is refused, not read.
  presentedKey: (req, url) => googleDialect.presentedKey(req, url) ?? bearer(req.headers),
  keyLocations: ["Authorization: Bearer <key>", "x-goog-api-key: <key>"],
  // Vertex relays its models' own errors (Claude's in Anthropic's envelope); its own are Google's.
  passesWireErrors: true,
};

/** Claude on Vertex: its streams are Anthropic's, so a cut one ends as Anthropic's SDKs read it. */
export const vertexClaudeDialect: Dialect = {
  ...vertexDialect,
  interruption: anthropicDialect.interruption,
};
