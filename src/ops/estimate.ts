/**
 * Token counts estimated where a provider gave none (docs/limits.md, "A cut answer"): about
 * four characters a token, the providers' own rule of thumb for English text and code.
 */
export const CHARS_PER_TOKEN = 4;

export const tokensFor = (chars: number): number => Math.ceil(chars / CHARS_PER_TOKEN);
