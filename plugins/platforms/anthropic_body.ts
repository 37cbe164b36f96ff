/**
 * Anthropic's Messages body as the clouds carry it, both ways: toward a cloud provider (the
 * platform's `adjust`) and from a client that speaks the cloud's API (its endpoints). A cloud
 * names the model in the URL instead of the body, takes the API version in the body
 * (`anthropic_version`: its own, or a later dated one the client sent), and may take the betas
 * in the body (`anthropic_beta`, Bedrock) and the stream flag from the operation (Bedrock)
 * instead of the body (Vertex).
 */
import { badRequest } from "../../src/contract/errors.ts";

/** How one cloud carries the body. */
export interface AnthropicEnvelope {
  /** The cloud's own `anthropic_version` (`bedrock-2023-05-31`). */
  version: string;
  /** Betas travel in the body as `anthropic_beta` (else as the `anthropic-beta` header). */
  betasInBody: boolean;
  /** The stream flag stays in the body (else the operation says whether it streams). */
  streamInBody: boolean;
}

/** The API version a cloud's own replaces; a later dated version is passed on as is. */
const FIRST_DATED_VERSION = "2023-06-01";
const DATED = /^\d{4}-\d{2}-\d{2}$/;

/** A dated version newer than the first one (what the 1.x SDKs send): the cloud takes it. */
const laterDated = (version: unknown): version is string =>
  typeof version === "string" && DATED.test(version) && version > FIRST_DATED_VERSION;

/** The betas of an `anthropic-beta` header (a comma list; repeated headers join with ", "). */
const betasOf = (header: string | null) =>
  (header ?? "").split(",").map((b) => b.trim()).filter(Boolean);

/**
 * A Messages body as `cloud` takes it: no `model` (unless `keepModel`: a token count whose URL
 * names none), the version and betas moved from `headers` (which lose them) into the body as
 * the cloud wants them.
 */
export function toCloudBody(
  cloud: AnthropicEnvelope,
  body: Record<string, unknown>,
  headers: Headers,
  keepModel = false,
): Record<string, unknown> {
  const { model, stream, ...rest } = body;
  const version = headers.get("anthropic-version");
  headers.delete("anthropic-version");
  const betas = cloud.betasInBody ? betasOf(headers.get("anthropic-beta")) : [];
  if (cloud.betasInBody) headers.delete("anthropic-beta");
  return {
    ...(keepModel && { model }),
    anthropic_version: laterDated(version) ? version : cloud.version,
    ...rest,
    ...(cloud.streamInBody && stream !== undefined && { stream }),
    ...(betas.length > 0 && { anthropic_beta: betas }),
  };
}

/** A client's cloud body as the Messages request it stands for. */
export interface FromCloud {
  /** The Messages body: `model` (and `stream`, when the operation says it) set. */
  body: Record<string, unknown>;
  /** The Messages headers its version and betas stand for, for a relayed call. */
  headers: [string, string][];
}

/**
 * A body a client of `cloud` sent (its `anthropic_version` required, as the cloud requires it)
 * as a Messages body for `model`: `stream` set from the operation where the cloud says it so,
 * the version and the betas (the body's and the `anthropic-beta` header's) as Messages headers.
 * A later dated version is sent on; the cloud's own stands for the default.
 */
export function fromCloudBody(
  cloud: AnthropicEnvelope,
  json: Record<string, unknown>,
  model: string,
  stream: boolean,
  betaHeader: string | null,
): FromCloud {
  const { anthropic_version: version, anthropic_beta: bodyBetas, ...rest } = json;
  if (version !== cloud.version && !laterDated(version)) {
    throw badRequest(
      `anthropic_version: required, "${cloud.version}" (or a dated version such as 2023-06-01)`,
      "anthropic_version",
    );
  }
  if (
    bodyBetas !== undefined &&
    (!Array.isArray(bodyBetas) || !bodyBetas.every((b) => typeof b === "string"))
  ) {
    throw badRequest("anthropic_beta: expected an array of strings", "anthropic_beta");
  }
  for (const field of ["model", ...cloud.streamInBody ? [] : ["stream"]]) {
    if (field in rest) {
      throw badRequest(
        `${field}: not allowed in the body (the URL ${
          field === "model" ? "names the model" : "says whether it streams"
        })`,
        field,
      );
    }
  }
  const betas = [
    ...new Set([...betasOf(betaHeader), ...(bodyBetas as string[] | undefined) ?? []]),
  ];
  const headers: [string, string][] = [];
  if (laterDated(version)) headers.push(["anthropic-version", version]);
  if (betas.length) headers.push(["anthropic-beta", betas.join(",")]);
  return { body: { model, ...rest, ...(!cloud.streamInBody && stream && { stream }) }, headers };
}
