/**
 * The platforms providers may be reached through (`platform:` in a provider's config), handed
 * to the core by `main.ts` beside the formats. A provider without `platform:` is the vendor's
 * own API, as its format plugin describes it.
 */
import type { AnyPlatform } from "../../src/kit/platform.ts";
import { awsAnthropicPlatform } from "./aws_anthropic.ts";
import { azurePlatform } from "./azure.ts";
import { bedrockPlatform } from "./bedrock.ts";
import { gcpVertexPlatform } from "./gcp_vertex.ts";

export const PLATFORMS: readonly AnyPlatform[] = [
  azurePlatform,
  bedrockPlatform,
  awsAnthropicPlatform,
  gcpVertexPlatform,
];
