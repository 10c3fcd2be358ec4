package supervisor

import (
	"context"
	"fmt"

	"github.com/flowerhq/flower/handoff"
	"github.com/flowerhq/flower/harness"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/policy"
)

// genEnd is how one generation ended: with the step (done, failed,
// interrupted, futile; err says why it did not succeed), or with a handoff
// frozen to disk (err is the generation limit, if this was the last one).
type genEnd struct {
	out    outcome
	gen    *manifest.Generation
	frozen handoff.Frozen
	err    error
}

// generation runs one generation of the step: the attempts of its harness,
// a crashed harness resumed up to the attempt limit (DESIGN.md «Retries»),
// until the step ends or the session hands off, its handoff frozen. It does
// not start the successor: RunStep launches it from the file (DESIGN.md
// «Launch from disk»), a remote front in a generation of its own.
// failedBefore is the step's attempt count when the call began.
func (s *stepRun) generation(ctx context.Context, l *launch, failedBefore int) genEnd {
	rt, st := s.rt, s.st
	for {
		if l.newGeneration {
			st.BeginGeneration("", rt.opts.Now())
			l.newGeneration = false
			rt.save(st)
		}
		gen := st.Current()
		var out outcome
		if ctx.Err() != nil {
			// Stopped between attempts (during a handoff, say): start
			// nothing more.
			s.abandon(*l)
			out = outcome{kind: outcomeInterrupted, why: context.Cause(ctx).Error()}
		} else {
			out = s.attempt(ctx, gen, *l)
		}
		// A successor started early serves one attempt: a retry starts
		// its own harness.
		l.early, l.predecessor, l.begun = nil, nil, false
		if out.kind == outcomeFailed && ctx.Err() != nil {
			// The harness went because flower is stopping (a second
			// signal kills it at once): that is no failure of the step.
			out = outcome{kind: outcomeInterrupted, why: context.Cause(ctx).Error() + " (" + out.why + ")", sessionID: out.sessionID}
		}
		end := genEnd{out: out, gen: gen}
		switch out.kind {
		case outcomeDone:
			st.Finish(manifest.StatusSucceeded, rt.opts.Now())
			rt.save(st)
			return end

		case outcomeInterrupted:
			// The session stays the step's latest (DESIGN.md «Continuation»): continue resumes it.
			st.AddError("interrupted: " + out.why)
			st.Finish(manifest.StatusInterrupted, rt.opts.Now())
			rt.save(st)
			end.err = fmt.Errorf("step %s interrupted: %w", st.Name, context.Cause(ctx))
			return end

		case outcomeFailed:
			if l.resume != "" && harness.ResumeRefused(out.why) {
				next, err := s.resumeRefused(gen, *l, out.why)
				if err != nil {
					st.AddError(err.Error())
					st.Finish(manifest.StatusFailed, rt.opts.Now())
					rt.save(st)
					end.err = err
					return end
				}
				*l = next
				continue
			}
			st.Attempts++
			st.AddError(fmt.Sprintf("attempt %d: %s", st.Attempts, out.why))
			s.log.Warn("attempt failed", "attempts", st.Attempts, "why", out.why)
			if st.Attempts-failedBefore >= rt.opts.MaxAttempts {
				st.Finish(manifest.StatusFailed, rt.opts.Now())
				rt.save(st)
				end.err = fmt.Errorf("%w: %s after %d attempts: %s", ErrStepFailed, st.Name, st.Attempts-failedBefore, out.why)
				return end
			}
			rt.save(st)
			rt.emit(Event{Kind: KindRetry, Step: st.Name, Generation: gen.N, Text: out.why})
			// Resume the same session when there is one: its context is
			// what this generation has built up.
			if out.sessionID != "" {
				l.resume = out.sessionID
				l.prompt = "The harness process running this session stopped unexpectedly (" + out.why + "). Continue the task from where you were."
			}

		case outcomeFutile:
			// A fresh session at or above the threshold would
			// hand off forever; stop now with the measured floor (DESIGN.md «Runaway guard»).
			err := &policy.GenerationLimitError{Futile: true, Max: rt.policy.MaxGenerations, Window: rt.policy.Window, At: rt.policy.At(), Floor: out.floor}
			st.AddError(err.Error())
			st.Finish(manifest.StatusGenerationLimit, rt.opts.Now())
			rt.save(st)
			end.err = err
			return end

		case outcomeHandoff:
			end.frozen, end.err = s.books().Freeze(gen, handoff.Cut{Handoff: out.handoff, Why: out.why, Reason: out.reason,
				Context: out.context, WritingSeconds: out.writingSeconds, WritingCostUSD: out.writingCost, Outcome: out.writeOutcome})
			return end
		}
	}
}
