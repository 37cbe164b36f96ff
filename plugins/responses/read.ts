/** Tolerant readers for upstream JSON: providers' bodies are trusted in shape, not in types. */
export type Json = Record<string, unknown>;

export const obj = (v: unknown): Json => (v && typeof v === "object" ? v as Json : {});
export const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
export const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
export const num = (v: unknown): number | undefined => (typeof v === "number" ? v : undefined);
