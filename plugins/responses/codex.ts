/**
 * Codex settings for a model behind the gateway (`main.ts --codex-config MODEL`). Codex 0.169
 * does not fetch model metadata from an API-key provider (`openai_base_url`): it warns "Model
 * metadata for `…` not found" and uses fallback metadata, whose context window is not the
 * model's. Its config carries the window instead; this prints those lines from the `catalog`.
 */
import type { Config } from "../../src/config.ts";
import { Router } from "../../src/router.ts";

export function codexConfig(config: Config, model: string, baseUrl: string): string {
  const r = new Router(config).resolve(model);
  const entry = config.catalog.find((c) => c.id === model);
  const lines = [
    `# Codex (~/.codex/config.toml) for ${model} → ${r.label}`,
    `model = "${model}"`,
    `openai_base_url = "${baseUrl.replace(/\/+$/, "")}/v1"`,
  ];
  if (entry?.context_window) {
    lines.push(
      `model_context_window = ${entry.context_window}`,
      // Codex's own rule: compact at 90 % of the window.
      `model_auto_compact_token_limit = ${Math.floor(entry.context_window * 0.9)}`,
    );
  } else {
    lines.push(`# no catalog context_window for ${model}: Codex uses its fallback window`);
  }
  if (r.provider.api !== "responses" || !r.route.passthrough) {
    lines.push(`web_search = "disabled" # hosted web search needs a passthrough route`);
  }
  return lines.join("\n") + "\n";
}
