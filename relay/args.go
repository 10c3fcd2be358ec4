package relay

import (
	"strconv"
	"strings"
)

// Wanted reports whether flower was started the way a client of the
// harness's streaming protocol starts the harness (the Agent SDK always
// passes --input-format stream-json): flower then acts as the harness
// (DESIGN.md «Agent SDK relay»).
func Wanted(args []string) bool {
	for i, a := range args {
		if a == "--input-format=stream-json" || (a == "--input-format" && i+1 < len(args) && args[i+1] == "stream-json") {
			return true
		}
	}
	return false
}

// sessionFlags pick the session a harness starts with. A successor starts
// fresh, so none of them reaches it; a retry gets --resume of its own.
var sessionFlags = map[string]bool{
	"--resume": true, "-r": true, "--session-id": true, "--continue": true, "-c": true,
	"--fork-session": true, "--resume-session-at": true,
}

// valued are the flags among sessionFlags that take a value; --continue and
// --fork-session do not.
var valued = map[string]bool{"--resume": true, "-r": true, "--session-id": true, "--resume-session-at": true}

// flagName splits "--name=value" into its name; a bare "--name" is its own
// name.
func flagName(a string) (name string, inline bool) {
	if i := strings.IndexByte(a, '='); i > 0 && strings.HasPrefix(a, "-") {
		return a[:i], true
	}
	return a, false
}

// withoutSession returns args without the flags that pick a session.
func withoutSession(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		name, inline := flagName(args[i])
		if !sessionFlags[name] {
			out = append(out, args[i])
			continue
		}
		if valued[name] && !inline && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			i++ // its value
		}
	}
	return out
}

// Value returns the value of a flag given as --name=value or --name value,
// and whether it was given; the last one wins, as in the harness.
func Value(args []string, name string) (string, bool) {
	val, found := "", false
	for i := 0; i < len(args); i++ {
		n, inline := flagName(args[i])
		if n != name {
			continue
		}
		found = true
		switch {
		case inline:
			val = args[i][len(name)+1:]
		case i+1 < len(args):
			val = args[i+1]
			i++
		}
	}
	return val, found
}

// Replace returns args with every value of the flag name set to value (as
// --name=value); a flag that is absent stays absent.
func Replace(args []string, name, value string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		n, inline := flagName(args[i])
		if n != name {
			out = append(out, args[i])
			continue
		}
		if !inline && i+1 < len(args) {
			i++
		}
		out = append(out, name+"="+value)
	}
	return out
}

// left is what remains of a budget given on the command line, never less
// than the smallest useful amount.
func leftTurns(arg string, used int) string {
	n, err := strconv.Atoi(arg)
	if err != nil {
		return arg
	}
	return strconv.Itoa(max(1, n-used))
}

func leftBudget(arg string, used float64) string {
	f, err := strconv.ParseFloat(arg, 64)
	if err != nil {
		return arg
	}
	return strconv.FormatFloat(max(0.01, f-used), 'f', -1, 64)
}
