// Package codex is the front for the Codex CLI: each session is a `codex
// app-server` process (package codexrpc) running one thread. It reports
// the engine's facts from the app-server's notifications (translate.go)
// and carries out the engine's commands: a turn is turn/start in the
// thread, the cut, a stopped tool and a cancel are each turn/interrupt, a
// resumed session is thread/resume. It holds Codex's own compaction off
// with -c settings and flower's PreCompact hook when the engine asks
// (front.Spec.Hold). It decides nothing, and the engine does not know its
// name (DESIGN.md «Fronts», «Codex front»).
package codex
