// Package scriptedapi owns a scripted Anthropic Messages API for tests and
// demos: an HTTP server on 127.0.0.1 that answers the real Claude Code
// harness (pointed at it with Env) from a Go Script, records every request,
// and so drives exactly what the harness believes about turns, tool calls,
// overflow and context size (the Usage of each reply).
//
// # Endpoints
//
// POST /v1/messages (the harness adds ?beta=true) answers Server-Sent Events
// like the real API when the body says "stream": true, a plain JSON message
// otherwise, or a JSON error body when the Reply has a Status other than
// 200. POST /v1/messages/count_tokens answers a rough estimate. Anything
// else is answered 404 and listed by Unexpected.
//
// # Writing a script
//
// A Script sees the parsed Request and returns a Reply. Sequence and Route
// cover most tests; anything else is a plain function:
//
//	srv, err := scriptedapi.Start(func(r *scriptedapi.Request) scriptedapi.Reply {
//		if r.Kind != scriptedapi.KindMain {
//			return scriptedapi.Harmless(r)
//		}
//		// flower's handoff-writing turn (the tag is defined by package
//		// handoffwriter).
//		if strings.Contains(r.LastUserText, "<<flower:handoff-request>>") {
//			return scriptedapi.Reply{Text: "## doing\n…", Usage: scriptedapi.Usage{CacheReadInputTokens: 152000}}
//		}
//		return scriptedapi.Reply{Text: "working", Usage: scriptedapi.Usage{CacheReadInputTokens: 152000}}
//	})
//
// LastUserText is the last message with role "user", which is not always
// the last message: the harness may append one with role "system", and a
// prompt sent while a turn ran comes in one, beside the tool's result
// (MidTurn); LastUserText ends with the text of those. Its text
// also carries the harness's own <system-reminder> blocks, so match with
// strings.Contains, never equality. After an interrupt the harness merges
// "[Request interrupted by user for tool use]" and the next user line into
// one user message; after an interrupt during the API call the merged
// message even keeps the interrupted user text ("answer slowly\n\n[Request
// interrupted by user]\n\nand again"), so a script keyed on that text
// fires again unless it also looks for the marker.
//
// # Request kinds, as observed on Claude Code 2.1.328
//
// KindSubagent: the first system block of every request is a billing line
// ("x-anthropic-billing-header: cc_version=…; cc_entrypoint=sdk-cli;"); a
// subagent's carries "cc_is_subagent=true". That mark is the rule. (A
// subagent's system prompt is also shorter, ~3.3k characters against ~7.2k
// for the main thread on the default model, but the main prompt with
// ANTHROPIC_MODEL=claude-haiku-4-5 is ~28k, so length is no rule.)
//
// KindSide: a request that does not stream or offers no tools. In
// "-p --input-format stream-json --output-format stream-json --verbose"
// mode no such request was seen, with or without the variables Env sets,
// across plain turns, tool calls, interrupts, subagents and overflow: every
// request streamed, offered the tools and was a main or subagent turn (no
// title, topic or quota calls). The one exception is the retry after a
// stalled stream (see Faults): it does not stream but offers the tools,
// and is the main thread's. count_tokens is called only to answer a
// get_context_usage control request, 25 to 35 times in a burst. The kind
// exists so scripts stay harmless if a later harness adds side calls.
//
// A harness started with every tool disabled would have its main turns
// classed as side calls by this rule.
//
// KindMain: everything else.
//
// # Faults, as observed
//
// A Reply can fail like a server or a network does: a Status (ServerError
// is 500, Overloaded is 529, Overflow is the 400 "prompt is too long"), or
// a Fault that breaks a streamed answer after message_start and the first
// text delta (FaultReset resets the connection, FaultStall sends nothing
// more until the client gives up). Request.SessionID and RetryCount say
// which session asked, and whether the client counted it as a retry. What
// Claude Code 2.1.328 does with them:
//
//   - 500, 529 and a reset are retried by the harness itself (a "system"
//     line with subtype "api_retry" each time), up to 10 times by default
//     with a backoff starting near 0.5 s; CLAUDE_CODE_MAX_RETRIES bounds
//     that. A 529 is given up after the third in a row whatever the bound.
//     Once it gives up, the turn ends in a result with is_error true,
//     terminal_reason "api_error" and text "API Error: 500 …" or "API
//     Error: Repeated 529 Overloaded errors …". Its retries carry the same
//     session id and an X-Stainless-Retry-Count of 0.
//   - A stalled stream is given up by the byte watchdog after
//     CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS (10 s at the least); the harness
//     then asks again without streaming ("stream": false, tools offered),
//     a request the rule below classes as a side call. The stream idle
//     timeout (CLAUDE_STREAM_IDLE_TIMEOUT_MS) cannot go below 5 minutes.
//     API_TIMEOUT_MS bounds a request that gets no answer at all (5000
//     gave a retry after 5.5 s), not a stream that stops.
//   - Every request carries the session in the X-Claude-Code-Session-Id
//     header and in metadata.user_id (a JSON string with session_id).
//
// # Env, as observed
//
// Without CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 the harness resolves
// api.anthropic.com several times (strace showed DNS queries; with no
// network they fail quietly) and sends HEAD /api/hello to the base URL.
// With it, nothing goes anywhere but ANTHROPIC_BASE_URL, and the init line
// lists fewer feature-gated tools (no DesignSync). DISABLE_TELEMETRY=1
// alone cuts the lookups from five to one; the former implies it, and it is
// set only to be explicit. DISABLE_AUTOUPDATER, DISABLE_ERROR_REPORTING and
// DISABLE_NON_ESSENTIAL_MODEL_CALLS had no visible effect and are left out.
package scriptedapi
