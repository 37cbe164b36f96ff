/**
 * Request validation shared by every format: a zod schema per format, one way to report the
 * first bad field (`messages[2].content: expected string or array`) as a 400 in any dialect.
 */
import { z } from "zod";
import { badRequest } from "./errors.ts";

/** `["messages", 2, "content"]` → `messages[2].content`. */
export function formatPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (out, key) =>
      typeof key === "number" ? `${out}[${key}]` : out ? `${out}.${String(key)}` : String(key),
    "",
  );
}

type Issue = z.core.$ZodIssue;

/** What an issue expected, in words ("expected string, received number", "required"). */
function expectation(issue: Issue): string {
  const message = issue.message.replace(/^Invalid (input|option): /, "");
  if (issue.code === "invalid_type" && message.endsWith("received undefined")) return "required";
  if (issue.code === "invalid_value") {
    return `expected ${issue.values.map((v) => JSON.stringify(v)).join(" or ")}`;
  }
  return message;
}

/**
 * The issue to report: inside a union, the branch that got deepest into the value (so a bad
 * part names its own field); when no branch got past the top, what each branch expected.
 * `say` words one issue ("expected …"): a request's, or the config's (src/config/issues.ts).
 */
export function explain(
  issue: Issue,
  say: (issue: Issue) => string = expectation,
): { path: PropertyKey[]; message: string } {
  if (issue.code !== "invalid_union" || issue.errors.length === 0) {
    return { path: issue.path, message: say(issue) };
  }
  const branches = issue.errors.map((errors) => explain(errors[0], say));
  const deepest = branches.reduce((a, b) => (b.path.length > a.path.length ? b : a));
  if (deepest.path.length > 0) {
    return { path: [...issue.path, ...deepest.path], message: deepest.message };
  }
  const expected = new Set(
    branches.map((b) => b.message.replace(/^expected /, "").replace(/, received \w+$/, "")),
  );
  return { path: issue.path, message: `expected ${[...expected].join(" or ")}` };
}

/** The first issue as `<path>: <problem>`, and the path alone (OpenAI's `param`). */
export function describeIssues(error: z.ZodError): { path: string; message: string } {
  const { path, message } = explain(error.issues[0]);
  const field = formatPath(path) || "body";
  return { path: field, message: `${field}: ${message}` };
}

/**
 * Where a body keeps what it parsed to, by schema: an endpoint validates before routing and the
 * codec's decoder parses again, so a converted request would pay for zod twice (a large body,
 * twice its longest pause of the event loop). A non-enumerable property of the body itself,
 * not a WeakMap: an entry per request in a weak table made every scavenge dearer (measured in
 * docs/performance.md), and spreads and `JSON.stringify` do not copy it.
 */
const PARSED = Symbol("parsed");
type Parsed = { [PARSED]?: { schema: z.ZodType; data: unknown } };

/** Parses a client body; throws a 400 naming the first bad field. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const isObject = typeof body === "object" && body !== null;
  const hit = isObject ? (body as Parsed)[PARSED] : undefined;
  if (hit?.schema === schema) return hit.data as z.infer<S>;
  const result = schema.safeParse(body);
  if (result.success) {
    if (isObject) {
      Object.defineProperty(body, PARSED, {
        value: { schema, data: result.data },
        configurable: true,
      });
    }
    return result.data;
  }
  const { path, message } = describeIssues(result.error);
  throw badRequest(message, path);
}

/**
 * An object tagged by `type`: known variants are validated by their own schema (issue paths
 * relative to the object, issue kinds kept, so a missing field reads "required"); unknown types
 * pass untouched, which keeps passthrough routes open to new part and tool types. `variants` is
 * a thunk so schemas can be recursive; `defaultType` applies when `type` is absent.
 */
export function tagged(
  variants: () => Record<string, z.ZodType>,
): z.ZodType<{ type: string } & Record<string, unknown>>;
export function tagged(
  variants: () => Record<string, z.ZodType>,
  defaultType: string,
): z.ZodType<{ type?: string } & Record<string, unknown>>;
export function tagged(
  variants: () => Record<string, z.ZodType>,
  defaultType?: string,
): z.ZodType<{ type?: string } & Record<string, unknown>> {
  const type = defaultType === undefined ? z.string() : z.string().optional();
  return z.looseObject({ type }).check((ctx) => {
    const schema = variants()[ctx.value.type ?? defaultType ?? ""];
    for (const issue of schema?.safeParse(ctx.value).error?.issues ?? []) {
      ctx.issues.push({ ...issue, input: undefined });
    }
  });
}

/**
 * A loose object whose optional fields are checked only when present. zod's object parse runs
 * every field's schema on every body, present or not, and a request carries a handful of the
 * twenty-odd optional fields a format allows (docs/performance.md).
 * Issues keep zod's shape (paths from the object, kinds kept); a present field's parsed value
 * replaces the raw one, as in zod's own object. Bad optional fields are reported in the body's
 * key order, after any required field's.
 */
export function sparseObject<R extends z.core.$ZodLooseShape, O extends z.core.$ZodLooseShape>(
  required: R,
  optional: O,
): z.ZodType<z.infer<z.ZodObject<R, z.core.$loose>> & z.infer<z.ZodObject<O>>> {
  const schemas = new Map<string, z.ZodType>(Object.entries(optional));
  return z.looseObject(required).check((ctx) => {
    const value = ctx.value as Record<string, unknown>;
    for (const key in value) {
      const schema = schemas.get(key);
      if (!schema) continue;
      const result = schema.safeParse(value[key]);
      if (result.success) {
        value[key] = result.data;
        continue;
      }
      for (const issue of result.error.issues) {
        ctx.issues.push({ ...issue, path: [key, ...issue.path], input: undefined });
      }
    }
  }) as never;
}
