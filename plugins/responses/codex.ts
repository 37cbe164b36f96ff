/**
 * Codex settings for a model behind the gateway (`main.ts --codex-config MODEL`). Codex 0.169
 * does not fetch model metadata from an API-key provider (`openai_base_url`): it warns "Model
 * metadata for `…` not found" and uses fallback metadata, whose context window is not the
 * model's. Its config carries the window instead; this prints those lines from the `catalog`.
 */
import type { Route } from "../../src/kit/handler.ts";
import { chatPlugin } from "../chat/plugin.ts";

/** The model's route and its `catalog` window, as the caller (`main.ts`) resolved them. */
interface CodexModel {
  route: Route;
  contextWindow?: number;
}

export function codexConfig({ route: r, contextWindow }: CodexModel, baseUrl: string): string {
  const model = r.requested;
  const lines = [
    `# Codex (~/.codex/config.toml) for ${model} → ${r.label}`,
    `model = "${model}"`,
    `openai_base_url = "${baseUrl.replace(/\/+$/, "")}/v1"`,
  ];
  if (contextWindow) {
    lines.push(
      `model_context_window = ${contextWindow}`,
      // Codex's own rule: compact at 90 % of the window.
      `model_auto_compact_token_limit = ${Math.floor(contextWindow * 0.9)}`,
    );
  } else {
    lines.push(`# no catalog context_window for ${model}: Codex uses its fallback window`);
  }
  // Codex declares hosted web search on every turn: converted routes map it (docs/hosted-tools.md)
  // unless the route or its provider cannot, and then it is better off.
  const without = noWebSearch(r.route.hosted_tools ?? "map", r.provider.api);
  if (without) lines.push(`web_search = "disabled" # ${without}`);
  return lines.join("\n") + "\n";
}

/** Why a route cannot run Codex's hosted web search, if it cannot. */
function noWebSearch(hostedTools: "map" | "drop" | "reject", api: string): string | undefined {
  if (hostedTools !== "map") return `the route ${hostedTools}s hosted tools (hosted_tools)`;
  if (api === chatPlugin.id) return "chat providers have no hosted web search";
  return undefined;
}
