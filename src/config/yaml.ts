/**
 * Reading YAML without ever printing what it holds: the parser's own messages (and the warnings
 * it would write to stderr) quote the source line or a value, and a config's values are keys.
 */
import { type Document, LineCounter, parseDocument, visit, type YAMLError } from "yaml";

/** A problem named by its kind and place only. */
export class YamlProblem extends Error {}

/**
 * A YAML document's value. Its errors, and its warnings too (an unresolved tag: the tagged text
 * would be taken as a plain string), throw a YamlProblem.
 */
export function readYaml(text: string): unknown {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  const where = (at: number) => {
    const { line, col } = lines.linePos(at);
    return ` at line ${line}, column ${col}`;
  };
  const problem: YAMLError | undefined = doc.errors[0] ?? doc.warnings[0];
  if (problem) throw new YamlProblem(`${problem.code}${where(problem.pos[0])}`);
  try {
    return doc.toJS();
  } catch (e) {
    const alias = e instanceof ReferenceError ? unresolvedAlias(doc) : undefined;
    throw new YamlProblem(
      alias === undefined
        ? `it could not be read (${(e as Error).name})`
        : `an alias names no anchor before it${where(alias)}`,
    );
  }
}

/** Where the first alias with no anchor before it is (the parser's error quotes its name). */
function unresolvedAlias(doc: Document): number | undefined {
  let at: number | undefined;
  visit(doc, {
    Alias(_, node) {
      if (node.resolve(doc)) return;
      at = node.range?.[0] ?? 0;
      return visit.BREAK;
    },
  });
  return at;
}
