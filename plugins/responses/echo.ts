/**
 * The request settings a Responses `response` object repeats, as OpenAI echoes them: every
 * field the Open Responses `ResponseResource` requires, the request's value where it sent one,
 * OpenAI's default where it did not (numbers for `temperature` and `top_p`, tools in full with
 * `strict`). Built once per request from the validated body; the encoders spread it into every
 * response object (the JSON answer and each stream event that carries the response).
 */
import type { ResponsesRequest } from "./schema.ts";

type ResponseSettings = Record<string, unknown>;

/** A declared tool as echoed: function tools with every field the spec requires. */
function echoTool(tool: Record<string, unknown>): unknown {
  if (tool.type !== "function") return tool; // custom and namespace tools as sent
  return {
    ...tool,
    type: "function",
    name: tool.name,
    description: tool.description ?? null,
    parameters: tool.parameters ?? null,
    strict: tool.strict ?? true,
  };
}

/** `text.format` as echoed: a JSON schema format with `description` and `strict` filled in. */
function echoFormat(format: Record<string, unknown> | null | undefined): unknown {
  if (!format) return { type: "text" };
  if (format.type !== "json_schema") return format;
  return { ...format, description: format.description ?? null, strict: format.strict ?? false };
}

/** `store`: whether the gateway keeps this response (default: as the request says). */
export function responseSettings(
  req: ResponsesRequest,
  store = req.store ?? true,
): ResponseSettings {
  const text = req.text ?? {};
  return {
    previous_response_id: req.previous_response_id ?? null,
    instructions: req.instructions ?? null,
    tools: (req.tools ?? []).map((t) => echoTool(t as Record<string, unknown>)),
    tool_choice: req.tool_choice ?? "auto",
    truncation: req.truncation ?? "disabled",
    parallel_tool_calls: req.parallel_tool_calls ?? true,
    text: {
      ...text,
      format: echoFormat(text.format as Record<string, unknown> | null | undefined),
      verbosity: text.verbosity ?? "medium",
    },
    temperature: req.temperature ?? 1,
    top_p: req.top_p ?? 1,
    presence_penalty: req.presence_penalty ?? 0,
    frequency_penalty: req.frequency_penalty ?? 0,
    top_logprobs: req.top_logprobs ?? 0,
    reasoning: { effort: req.reasoning?.effort ?? null, summary: req.reasoning?.summary ?? null },
    max_output_tokens: req.max_output_tokens ?? null,
    max_tool_calls: req.max_tool_calls ?? null,
    store,
    background: false,
    service_tier: "default",
    metadata: req.metadata ?? {},
    safety_identifier: req.safety_identifier ?? null,
    prompt_cache_key: req.prompt_cache_key ?? null,
    ...(req.user != null && { user: req.user }),
  };
}
