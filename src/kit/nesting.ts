/**
 * A bound on how deeply a converted request's JSON nests. The codecs and zod walk a body
 * recursively, so a body nested thousands of levels deep (cheap to send) would overflow the
 * stack; no real request comes near the bound (deep JSON schemas are tens of levels).
 */
import { badRequest } from "./errors.ts";
import { clip } from "./model_name.ts";
import { formatPath } from "./validate.ts";

export const MAX_NESTING = 128;

interface Node {
  value: object;
  depth: number;
  parent?: Node;
  key?: string | number;
}

/** A 400 naming the first object or array nested more than `max` levels into `json`. */
export function checkNesting(json: unknown, max = MAX_NESTING): void {
  if (typeof json !== "object" || json === null) return;
  // Iterative, for the same reason as the bound: no recursion on the client's depth.
  const stack: Node[] = [{ value: json, depth: 0 }];
  const push = (parent: Node, key: string | number, value: unknown) => {
    if (typeof value === "object" && value !== null) {
      stack.push({ value, depth: parent.depth + 1, parent, key });
    }
  };
  for (let node = stack.pop(); node; node = stack.pop()) {
    if (node.depth > max) {
      // Clipped: 128 keys of any length would make an unbounded message.
      const field = clip(formatPath(pathOf(node)), 512);
      throw badRequest(`${field}: nested more than ${max} levels deep`, field);
    }
    const v = node.value;
    if (Array.isArray(v)) { for (let i = 0; i < v.length; i++) push(node, i, v[i]); }
    else for (const k in v) push(node, k, (v as Record<string, unknown>)[k]);
  }
}

function pathOf(node: Node): (string | number)[] {
  const path: (string | number)[] = [];
  for (let n: Node | undefined = node; n?.parent; n = n.parent) path.push(n.key!);
  return path.reverse();
}
