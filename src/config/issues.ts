/**
 * Config problems in words: each names the full path of the field and what the field takes
 * (`keys[0].limits.requests_per_minute: expected a number`), never the value found there — a key
 * pasted into the wrong field must not end up in a log.
 */
import type { z } from "zod";
import { explain, formatPath } from "../kit/validate.ts";

export interface Issue {
  path: PropertyKey[];
  message: string;
}

type ZodIssue = z.core.$ZodIssue;

const TYPES: Record<string, string> = {
  number: "a number",
  int: "a whole number",
  string: "a string",
  boolean: "true or false",
  array: "a list",
  object: "a mapping",
  record: "a mapping",
};

/** A field name safe to print: a secret pasted as a mapping key (`{sk-…}`) does not look like one. */
const FIELD_NAME = /^[a-z_][a-z0-9_]{0,39}$/i;

function bound(issue: ZodIssue & { code: "too_small" | "too_big" }): string {
  const [limit, over] = issue.code === "too_small"
    ? [issue.minimum, issue.inclusive ? "at least" : "above"]
    : [issue.maximum, issue.inclusive ? "at most" : "below"];
  if (issue.origin === "string") {
    return limit === 1 && issue.code === "too_small"
      ? "expected a non-empty string"
      : `expected ${over} ${limit} characters`;
  }
  if (issue.origin === "array") return `expected ${over} ${limit} item${limit === 1 ? "" : "s"}`;
  return `expected a number ${over} ${limit}`;
}

/** What a field takes, in words; never what it holds. */
function words(issue: ZodIssue): string {
  switch (issue.code) {
    case "invalid_type":
      if (issue.message.endsWith("received undefined")) return "required";
      return `expected ${TYPES[issue.expected] ?? issue.expected}`;
    case "invalid_value":
      return `expected ${issue.values.length > 1 ? "one of " : ""}${
        issue.values.map((v) => JSON.stringify(v)).join(", ")
      }`;
    case "too_small":
    case "too_big":
      return bound(issue);
    case "invalid_format":
      if (issue.format === "url") return "expected an http or https URL";
      return issue.message.replace(/^Invalid string: /, "");
    case "unrecognized_keys":
      return "unknown field";
    default:
      return issue.message.replace(/^Invalid input$/, "invalid");
  }
}

/** Fields a mapping at `at` does not take, each at its own path where its name may be shown. */
export function unknownFields(keys: readonly string[], at: PropertyKey[]): Issue[] {
  return keys.map((key) =>
    FIELD_NAME.test(key)
      ? { path: [...at, key], message: "unknown field" }
      : { path: at, message: "unknown field (its name is not shown)" }
  );
}

/**
 * A schema's issues as config problems, paths under `at`: a union names the field of the branch
 * that got deepest, and each unknown field is its own problem at its own path (its name shown
 * only when it looks like a field name).
 */
export function configIssues(issues: readonly ZodIssue[], at: PropertyKey[] = []): Issue[] {
  return issues.flatMap((issue): Issue[] => {
    if (issue.code === "unrecognized_keys") {
      return unknownFields(issue.keys, [...at, ...issue.path]);
    }
    // A union the schema words itself (`retry.on`'s "an HTTP status or one of …") keeps its words.
    const { path, message } = issue.code === "invalid_union" && issue.message !== "Invalid input"
      ? issue
      : explain(issue, words);
    return [{ path: [...at, ...path], message }];
  });
}

/** One line per problem, `<path>: <problem>`, under a heading. */
export function issueReport(heading: string, issues: readonly Issue[]): string {
  const lines = issues.map((i) => `${formatPath(i.path) || "config"}: ${i.message}`);
  return `${heading}:\n  ${lines.join("\n  ")}`;
}
