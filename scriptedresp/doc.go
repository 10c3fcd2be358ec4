// Package scriptedresp owns a scripted OpenAI Responses API for tests: an
// HTTP server on 127.0.0.1 that answers the real Codex CLI (pointed at it
// with WriteCodexHome) from a Go Script, records every request, and so
// drives what Codex believes about turns, tool calls, errors and context
// size (the Usage of each reply). It is scriptedapi's sibling for the
// second harness; the HTTP plumbing they share is package scriptedhttp.
//
// # Endpoints
//
// POST /v1/responses answers Server-Sent Events: response.created, one
// response.output_item.done per item (a message with output_text, then one
// function_call named exec_command per Call), and response.completed with
// the Reply's usage. A Reply with Failed set ends the stream with
// response.failed instead; one with a Status other than 200 answers a JSON
// error body. GET /v1/models answers an empty list (ModelListings counts
// them; Codex 0.171.0 asked none on a custom provider). Anything else is
// answered 404 and listed by Unexpected.
//
// # Errors, as Codex reads them
//
// Codex (codex-rs, the Responses client) classifies a provider error by
// its code: "context_length_exceeded" is ContextWindowExceeded, which the
// app-server reports as codexErrorInfo "contextWindowExceeded". The real
// API sends it in the stream, as response.failed with
// response.error.code; Overflow does the same. Unauthorized (401) and
// RateLimited (429) are HTTP errors.
//
// # Compaction
//
// Codex's own compaction is a request to the same endpoint whose input
// carries CompactionPrompt; Request.Compaction marks it, so a test can
// assert that none reached the model.
package scriptedresp
