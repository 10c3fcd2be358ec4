package demo

import "strings"

// HarnessEnv is the environment of the demo's harness: parent (os.Environ(),
// usually) without anything that could carry a credential, point the
// harness at another endpoint or reach the person's own configuration, then
// HOME=home, the scripted server's variables and ANTHROPIC_MODEL=ModelName.
// A real key in parent is therefore never used or sent.
func HarnessEnv(parent []string, home string, server []string) []string {
	env := make([]string, 0, len(parent)+len(server)+1)
	for _, kv := range parent {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || dropped(k) {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home)
	env = append(env, server...)
	return append(env, "ANTHROPIC_MODEL="+ModelName)
}

// dropped reports whether a parent variable stays out of the demo's harness.
func dropped(key string) bool {
	up := strings.ToUpper(key)
	switch {
	case strings.HasPrefix(up, "ANTHROPIC_"), strings.HasPrefix(up, "CLAUDE"):
		return true // keys, tokens, endpoints, model and config dir
	case strings.HasSuffix(up, "_PROXY"):
		return true // the server is on 127.0.0.1; nothing goes through a proxy
	case up == "HOME", strings.HasPrefix(up, "XDG_"):
		return true // the person's own ~/.claude and config stay untouched
	case up == "DISABLE_AUTO_COMPACT":
		return true // flower sets it for the harness itself
	}
	return false
}
