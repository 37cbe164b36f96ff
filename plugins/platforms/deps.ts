/**
 * The maintained libraries the cloud platforms build on, pinned here until the platforms are
 * wired into the gateway (then they move to deno.json's import map and the root deno.lock).
 */
export { AwsV4Signer } from "npm:aws4fetch@1.0.20";
// @smithy/eventstream-codec now re-exports this (deprecated there); this is its home.
export { EventStreamCodec } from "npm:@smithy/core@3.41.1/event-streams";
