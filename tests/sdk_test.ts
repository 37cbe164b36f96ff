/**
 * The "real SDK" proof: unmodified published clients (openai, @anthropic-ai/sdk 1.x and 0.x,
 * @google/genai, the Vercel AI SDK) aimed at the gateway, each against every provider API of
 * the mock upstream, streaming and not, with tool round trips, thinking and provider errors.
 * The cases live in tests/sdk/; see tests/sdk/common.ts for what the mock answers.
 */
import "./sdk/openai.ts";
import "./sdk/anthropic.ts";
import "./sdk/genai.ts";
import "./sdk/vercel.ts";
import "./sdk/stored.ts";
