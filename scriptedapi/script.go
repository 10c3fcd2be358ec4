package scriptedapi

import "sync"

// Harmless is the reply for requests a test does not care about: a short
// text and a small usage, so it neither drives the context meter nor calls
// a tool.
func Harmless(*Request) Reply {
	return Reply{Text: "ok", Usage: Usage{InputTokens: 10, OutputTokens: 1}}
}

// Sequence answers the n-th main-thread request with replies[n-1] and every
// later one with the last reply; subagent and side requests get Harmless.
// With no replies every request gets Harmless. Tool-result follow-ups are
// main-thread requests too, so a turn with one tool call takes two replies.
func Sequence(replies ...Reply) Script {
	var mu sync.Mutex
	n := 0
	return func(r *Request) Reply {
		if r.Kind != KindMain || len(replies) == 0 {
			return Harmless(r)
		}
		mu.Lock()
		i := n
		n++
		mu.Unlock()
		return replies[min(i, len(replies)-1)]
	}
}

// Route sends each request to the script for its kind; a nil script means
// Harmless.
func Route(main, subagent, side Script) Script {
	pick := func(s Script) Script {
		if s == nil {
			return Harmless
		}
		return s
	}
	main, subagent, side = pick(main), pick(subagent), pick(side)
	return func(r *Request) Reply {
		switch r.Kind {
		case KindSubagent:
			return subagent(r)
		case KindSide:
			return side(r)
		default:
			return main(r)
		}
	}
}
