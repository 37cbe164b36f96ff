/**
 * Schemas in both directions. Gemini clients may describe arguments and structured output in
 * Gemini's OpenAPI subset (`parameters`, `responseSchema`: upper-case types, `nullable`);
 * the hub carries standard JSON Schema. Toward Gemini the gateway always sends the
 * `*JsonSchema` fields, which take JSON Schema as is.
 */

type Schema = Record<string, unknown>;

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

const mapValues = (v: unknown, f: (s: Schema) => Schema) =>
  isObject(v)
    ? Object.fromEntries(Object.entries(v).map(([k, s]) => [k, isObject(s) ? f(s) : s]))
    : v;

const mapItems = (v: unknown, f: (s: Schema) => Schema) =>
  Array.isArray(v) ? v.map((s) => (isObject(s) ? f(s) : s)) : v;

/** JSON Schema's way of saying `nullable: true`. */
function withNull(schema: Schema): Schema {
  if (typeof schema.type === "string") schema.type = [schema.type, "null"];
  else if (Array.isArray(schema.anyOf)) schema.anyOf = [...schema.anyOf, { type: "null" }];
  if (Array.isArray(schema.enum)) schema.enum = [...schema.enum, null];
  return schema;
}

/** Gemini's OpenAPI-subset Schema to standard JSON Schema. */
export function fromOpenApi(schema: Schema): Schema {
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    switch (key) {
      case "type":
        if (typeof value === "string" && value !== "TYPE_UNSPECIFIED") {
          out.type = value.toLowerCase();
        }
        break;
      case "properties":
        out.properties = mapValues(value, fromOpenApi);
        break;
      case "items":
        out.items = isObject(value) ? fromOpenApi(value) : value;
        break;
      case "anyOf":
        out.anyOf = mapItems(value, fromOpenApi);
        break;
      case "example":
        out.examples = [value];
        break;
      case "nullable":
      case "propertyOrdering": // Gemini-only ordering hint; other vendors reject unknown keywords
        break;
      default:
        out[key] = value;
    }
  }
  return schema.nullable === true ? withNull(out) : out;
}

/** JSON Schema as Gemini's `parametersJsonSchema`/`responseJsonSchema` accept it. */
export function forGemini(schema: Schema): Schema {
  // Gemini rejects the `$schema` dialect marker that schema generators put at the root.
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}
