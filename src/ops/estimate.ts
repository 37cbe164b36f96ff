/**
 * Token counts estimated before or without a provider's (docs/limits.md: a cut answer, a
 * reservation): about four characters a token, the providers' own rule of thumb for English
 * text and code.
 */
export const CHARS_PER_TOKEN = 4;

export const tokensFor = (chars: number): number => Math.ceil(chars / CHARS_PER_TOKEN);

/** The output a request that names no bound of its own reserves (docs/limits.md). */
export const DEFAULT_OUTPUT_TOKENS = 4096;
