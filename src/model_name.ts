/**
 * A client's model name is bounded: it becomes a metric label, an access-log field and part of
 * error messages, so an unbounded one would let a client grow the gateway's memory (and its
 * `/metrics` scrape) at will. No real model id comes near the bound.
 */
import { badRequest } from "./errors.ts";

/** The longest model name accepted, in characters. */
export const MAX_MODEL_CHARS = 256;

/** `text` cut to `max` characters, an ellipsis marking the cut: safe to echo or log. */
export function clip(text: string, max = MAX_MODEL_CHARS): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

/** A 400 naming `model` when the name is over the bound. */
export function checkModelName(model: string): string {
  if (model.length > MAX_MODEL_CHARS) {
    throw badRequest(
      `model: ${model.length} characters is longer than the limit of ${MAX_MODEL_CHARS}`,
      "model",
    );
  }
  return model;
}
