// Package scriptedgen owns a scripted Gemini API for tests and demos: an
// HTTP server on 127.0.0.1 that answers the real Gemini CLI (pointed at it
// with Env) from a Go Script, records every request, and so drives what
// the CLI believes about turns, tool calls, errors and context size (the
// usageMetadata of each reply). It is scriptedapi's and scriptedresp's
// sibling for the third harness; the HTTP plumbing they share is package
// scriptedhttp.
//
// # Pointing the CLI at it, as measured on 0.61.0
//
// The CLI's Gemini API client (the @google/genai SDK) takes its base URL
// from GOOGLE_GEMINI_BASE_URL, for the auth type "gemini-api-key" with
// the key in GEMINI_API_KEY. The variable alone makes the CLI choose the
// "gateway" auth type, which it then refuses ("Invalid auth method
// selected."), so the auth type is set in a settings layer
// (security.auth.selectedType; Settings). Nothing then leaves 127.0.0.1
// but what usage statistics send, which Settings turns off.
//
// # Endpoints
//
// POST /v1beta/models/MODEL:streamGenerateContent?alt=sse answers
// Server-Sent Events: one chunk with the Reply's text, then one per
// function call, the last with the finish reason and the usageMetadata
// (promptTokenCount is the prompt's size: the main thread's context).
// POST …:generateContent answers the same as one JSON body, and
// …:countTokens a rough estimate. A Reply with a Status other than 200
// answers a Google API error body ({"error":{"code","message","status"}}).
// Anything else is answered 404 and listed by Unexpected.
//
// # Side requests and compression
//
// The CLI asks the model things of its own on the side (a router's
// classification when the model is "auto", a check of who speaks next, a
// loop check): requests that offer no tools. Request.Side marks them, and
// Sequence answers them with SideReply, so a job's script sees only the
// main thread. The CLI's own compression ("chat compression") is a request
// whose system instruction asks for a <state_snapshot> (CompressionPrompt);
// Request.Compression marks it, so a test can assert that none reached the
// model.
package scriptedgen
