/** The maintained libraries the cloud platforms build on (pinned in deno.json's import map). */
export { AwsV4Signer } from "aws4fetch";
// @smithy/eventstream-codec now re-exports this (deprecated there); this is its home.
export { EventStreamCodec } from "@smithy/core/event-streams";
