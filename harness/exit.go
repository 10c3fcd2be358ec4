package harness

import (
	"strings"
	"time"
)

// exitedError is ErrExited with how the harness exited and the last line it
// wrote to stderr, once it has exited: that is the reason a person needs
// ("No conversation found with session ID: …").
func (p *Process) exitedError() error {
	select {
	case <-p.exited:
	case <-time.After(time.Second):
		// A broken pipe comes a moment before Wait returns.
		return ErrExited
	}
	var b strings.Builder
	if p.err != nil {
		b.WriteString(" (" + p.err.Error() + ")")
	}
	if l := lastLine(p.Stderr()); l != "" {
		b.WriteString(": " + l)
	}
	if b.Len() == 0 {
		return ErrExited
	}
	return &exitedError{detail: b.String()}
}

type exitedError struct{ detail string }

func (e *exitedError) Error() string { return ErrExited.Error() + e.detail }
func (e *exitedError) Unwrap() error { return ErrExited }

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSpace(s)
}

// resumeRefusals are how the harness says that --resume named no session it
// has (measured on 2.1.328: stderr, then a result line with subtype
// error_during_execution and exit status 1, before any init line).
var resumeRefusals = []string{
	"No conversation found with session ID",
	"--resume requires a valid session ID",
}

// ResumeRefused reports whether text (an error message carrying the
// harness's stderr) says the harness refused to resume a session: the
// session is unknown to it, so resuming again cannot help.
func ResumeRefused(text string) bool {
	for _, r := range resumeRefusals {
		if strings.Contains(text, r) {
			return true
		}
	}
	return false
}
