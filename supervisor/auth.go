package supervisor

import (
	"fmt"
	"net/http"

	"github.com/flowerhq/flower/event"
	"github.com/flowerhq/flower/front"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/transcript"
)

// authRetriesAllowed is how many of the harness's retries of a request the
// API refused as unauthenticated (401) or forbidden (403) flower lets run:
// one, for a login token the harness refreshes before it asks again
// (DESIGN.md «Rejected credentials»). The next such retry ends the step.
const authRetriesAllowed = 1

// outcomeAuth: the API refuses the credentials; the step stops at once,
// and no new attempt follows (it would be refused the same).
const outcomeAuth outcomeKind = 101

// outcomeUnreachable: the API endpoint cannot be reached and nothing of
// the run ever reached it; the step stops at once.
const outcomeUnreachable outcomeKind = 102

// onRetrying says the harness's wait to ask the API again, one line a
// retry (the run's page marks it too, DESIGN.md «Run page»); it ends the
// attempt when the API keeps refusing the credentials, or when a request
// that got no answer at all goes to an endpoint that cannot be reached
// and never was in this run (DESIGN.md «Unreachable endpoint»).
func (a *attemptRun) onRetrying(f front.Retrying) (outcome, bool) {
	a.log.Info("api retry", "attempt", f.Attempt, "max_retries", f.MaxRetries,
		"retry_delay_ms", f.Delay.Milliseconds(), "error_status", f.Status, "error", f.Error)
	e := Event{Kind: KindAPI, Phase: event.PhaseRetrying, Step: a.st.Name, Generation: a.gen.N, Text: retryLine(f)}
	if f.Status == http.StatusTooManyRequests {
		e.Limit = string(transcript.LimitRate) // a rate limit's wait, to flower ps
	}
	a.rt.emit(e)
	if f.Status == 0 && !a.rt.through && !a.reachAsked && a.rt.opts.Reach != nil {
		a.reachAsked = true
		if err := a.rt.opts.Reach(f.Endpoint); err != nil {
			a.order(effect{kind: doCancel}) // out of its wait before the next retry
			a.log.Warn("endpoint unreachable: stopping the step", "err", err)
			return outcome{kind: outcomeUnreachable, why: err.Error(), sessionID: a.meter.SessionID}, true
		}
	}
	if f.Status != http.StatusUnauthorized && f.Status != http.StatusForbidden {
		return outcome{}, false
	}
	if a.authRetries++; a.authRetries <= authRetriesAllowed {
		return outcome{}, false
	}
	a.order(effect{kind: doCancel}) // out of its wait before the next retry, so that it exits at once
	return a.authRefused(f.Status, f.Error+", after a retry"), true
}

// retryLine is the progress line of one of the harness's retries.
func retryLine(f front.Retrying) string {
	if f.Blind {
		return fmt.Sprintf("the harness asks the API again (retry %d; its screen says why)", f.Attempt)
	}
	said := f.Error != ""
	what := "no answer from the API (a connection error)"
	switch {
	case f.Status != 0 && said:
		what = fmt.Sprintf("HTTP %d %s", f.Status, f.Error)
	case f.Status != 0:
		what = fmt.Sprintf("HTTP %d", f.Status)
	case said:
		what = "no answer from the API (" + f.Error + ")" // the harness's own words
	}
	line := "the harness asks the API again"
	if f.Delay > 0 {
		line += fmt.Sprintf(" in %.1f s", f.Delay.Seconds())
	}
	switch {
	case f.Attempt > 0 && f.MaxRetries > 0:
		line += fmt.Sprintf(" (retry %d of %d)", f.Attempt, f.MaxRetries)
	case f.Attempt > 0:
		line += fmt.Sprintf(" (retry %d)", f.Attempt)
	}
	return line + ": " + what
}

// authRefused is the outcome of an attempt whose credentials the API
// refused with status, as detail says; a turn the harness ended on a 401
// or 403 without retrying (it does not retry a 403) comes here at once,
// and so does one it ended with no credentials to send (status 0).
func (a *attemptRun) authRefused(status int, detail string) outcome {
	why := fmt.Sprintf("the API refused the credentials (HTTP %d: %s): %s", status, detail, a.rt.credentialFix())
	if status == 0 {
		why = fmt.Sprintf("the harness has no credentials the API takes (%s): %s", detail, a.rt.credentialFix())
	}
	a.log.Warn("credentials refused: stopping the step", "error_status", status, "retries", a.authRetries)
	return outcome{kind: outcomeAuth, why: why, sessionID: a.meter.SessionID}
}

// refusedShown notes credentials the API refused in a turn a person
// started at the harness's own screen: they read it there, and may log in
// there and go on, so nothing stops; flower's status line says it, and a
// screen closed before any turn was answered ends the step auth_failed
// (unanswered).
func (a *attemptRun) refusedShown(f front.TurnEnded) {
	out := a.authRefused(f.APIErrorStatus, firstNonEmpty(f.Text, f.Detail))
	a.refused = &out
	a.rt.emit(Event{Kind: KindAPI, Phase: event.PhaseRefused, Step: a.st.Name, Generation: a.gen.N, Text: out.why, IsError: true})
}

// unanswered is the outcome of a harness's screen the person closed
// before the API answered any turn of the step: never a success. (An
// application that ends its relayed session is the judge of its own.)
func (a *attemptRun) unanswered() outcome {
	if a.refused != nil {
		return *a.refused
	}
	return outcome{kind: outcomeUnanswered, why: "the harness's screen was closed before the API answered any turn", sessionID: a.meter.SessionID}
}

// outcomeUnanswered: the step ended with no turn answered, and no reason
// known; it stops, for continue.
const outcomeUnanswered outcomeKind = 103

// answeredAny reports whether the API answered any turn of st.
func answeredAny(st *manifest.StepResult) bool {
	for _, g := range st.Generations {
		if g.Answered || g.NumTurns > 0 {
			return true
		}
	}
	return false
}

// credentialFix names what to fix, in the front's words.
func (rt *Runtime) credentialFix() string {
	if rt.caps.CredentialFix == nil {
		return "check the harness's credentials"
	}
	return rt.caps.CredentialFix(rt.env)
}

// authStop ends the step the API refused: recorded as auth_failed with
// the reason, the session kept for flower continue once the credentials
// are fixed.
func (s *stepRun) authStop(out outcome) error {
	return s.stop(manifest.StatusAuthFailed, out.why)
}

// admit asks Options.Admit whether a harness may start now; "" when it
// may, else why not.
func (s *stepRun) admit() string {
	if s.rt.opts.Admit == nil {
		return ""
	}
	if err := s.rt.opts.Admit(); err != nil {
		return err.Error()
	}
	return ""
}

// untrustedStop ends the step whose next harness Admit refused (why), before
// its generation begins: recorded as workspace_changed, the latest session
// kept for flower continue once the person has looked.
func (s *stepRun) untrustedStop(why string) error {
	s.rt.emit(Event{Kind: KindNotice, Step: s.st.Name, Text: why})
	return s.stop(manifest.StatusUntrusted, why)
}
