/**
 * Anthropic's Messages body as the clouds' Claude endpoints take it (Bedrock InvokeModel, Vertex
 * rawPredict), both ways. On a cloud the API version is the body's `anthropic_version` — the
 * cloud's own (`vertex-2023-10-16`), or a dated version later than 2023-06-01, which the 1.x
 * Anthropic SDKs copy there from their header — instead of the `anthropic-version` header; the
 * URL names the model; Bedrock also wants the betas in `anthropic_beta` and no `stream`. A
 * platform writes it for its providers (`toCloudBody`); a cloud's client format reads it back
 * into the Messages body and the headers the Messages API takes (`fromCloudBody`,
 * `messagesHeaders`).
 */
import { badRequest } from "../../src/kit/errors.ts";

/** How one cloud carries the Messages body. */
export interface CloudClaude {
  /** The cloud's own `anthropic_version`. */
  version: string;
  /** Betas ride in the body's `anthropic_beta` (Bedrock), not in the `anthropic-beta` header. */
  betasInBody: boolean;
  /** The operation in the URL says whether it streams, and `stream` leaves the body (Bedrock). */
  streamInUrl: boolean;
}

/** The API version a cloud's own replaces; a later dated one is kept as the client sent it. */
const FIRST_DATED_VERSION = "2023-06-01";
const DATED = /^\d{4}-\d{2}-\d{2}$/;

/** A dated version a cloud takes in place of its own. */
function laterDated(version: unknown): version is string {
  return typeof version === "string" && DATED.test(version) && version > FIRST_DATED_VERSION;
}

const betaList = (header: string | null) =>
  (header ?? "").split(",").map((b) => b.trim()).filter(Boolean);

/**
 * The Messages body as `cloud` takes it: the `anthropic-version` header (and on Bedrock
 * `anthropic-beta`) moved from `headers` into it, `model` removed — or set to `model` where the
 * URL does not name one (Vertex's token counting) — and `stream` removed where the URL says it.
 */
export function toCloudBody(
  body: Record<string, unknown>,
  headers: Headers,
  cloud: CloudClaude,
  model?: string,
): Record<string, unknown> {
  const { model: _named, stream, ...rest } = body;
  const version = headers.get("anthropic-version");
  headers.delete("anthropic-version");
  let betas: string[] = [];
  if (cloud.betasInBody) {
    betas = betaList(headers.get("anthropic-beta"));
    headers.delete("anthropic-beta");
  }
  return {
    ...(model !== undefined && { model }),
    anthropic_version: laterDated(version) ? version : cloud.version,
    ...rest,
    ...(!cloud.streamInUrl && stream !== undefined && { stream }),
    ...(betas.length > 0 && { anthropic_beta: betas }),
  };
}

/**
 * What is wrong with a client's `anthropic_version` on `cloud` (required, its own or dated), as
 * the cloud says it: a 400 naming the field.
 */
export function checkCloudVersion(body: Record<string, unknown>, cloud: CloudClaude): void {
  const v = body.anthropic_version;
  if (v === undefined) {
    throw badRequest(
      `anthropic_version: required (${cloud.version}, or an API version date such as 2023-06-01)`,
      "anthropic_version",
    );
  }
  if (v !== cloud.version && !(typeof v === "string" && DATED.test(v))) {
    throw badRequest(
      `anthropic_version: ${
        JSON.stringify(v).slice(0, 60)
      } is neither ${cloud.version} nor an API version date such as 2023-06-01`,
      "anthropic_version",
    );
  }
}

/** A cloud's Claude body read back as the Messages API has it. */
export interface MessagesRequest {
  /** The Messages body: `model` set, the cloud's own fields gone. */
  body: Record<string, unknown>;
  /** The `anthropic-version` it stands for, where the body named a dated one. */
  version?: string;
  /** The `anthropic-beta` flags the body carried (Bedrock's `anthropic_beta`). */
  betas: string[];
}

/**
 * A cloud's Claude body (its version checked) as the Messages body: `model` from the URL (a
 * `model` the body names must be that one), `stream` from the URL where the cloud says it
 * there, `anthropic_version` and `anthropic_beta` out, to travel as headers
 * (`messagesHeaders`). Applied to a body it made, it changes nothing.
 */
export function fromCloudBody(
  body: Record<string, unknown>,
  at: { model: string; stream?: boolean },
  cloud: CloudClaude,
): MessagesRequest {
  const { anthropic_version: version, anthropic_beta: betas, model, ...rest } = body;
  if (model !== undefined && model !== at.model) {
    throw badRequest(
      `model: ${JSON.stringify(model).slice(0, 80)} differs from the model the path names ` +
        `(${at.model}); leave it out`,
      "model",
    );
  }
  if (betas !== undefined && !(Array.isArray(betas) && betas.every((b) => typeof b === "string"))) {
    throw badRequest("anthropic_beta: expected an array of strings", "anthropic_beta");
  }
  return {
    body: {
      model: at.model,
      ...rest,
      ...(cloud.streamInUrl && at.stream !== undefined && { stream: at.stream }),
    },
    ...(laterDated(version) && { version }),
    betas: betas ?? [],
  };
}

/**
 * The client's headers with what its body said instead (a dated version where it sent no
 * `anthropic-version`, betas added to `anthropic-beta`); undefined when they stand as they are.
 */
export function messagesHeaders(headers: Headers, read: MessagesRequest): Headers | undefined {
  const version = read.version !== undefined && !headers.has("anthropic-version");
  if (!version && read.betas.length === 0) return undefined;
  const out = new Headers(headers);
  if (version) out.set("anthropic-version", read.version!);
  const betas = [...new Set([...betaList(headers.get("anthropic-beta")), ...read.betas])];
  if (betas.length > 0) out.set("anthropic-beta", betas.join(","));
  return out;
}
