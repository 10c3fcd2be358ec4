package harness

import (
	"strings"

	"github.com/flowerhq/flower/envinject"
)

// CredentialFix names what to fix when the API refuses Claude Code's
// credentials or it has none: the credential variables env gives it,
// masked, or its login.
func CredentialFix(env []string) string {
	creds := envinject.AuthFrom(env).Credentials
	if len(creds) == 0 {
		return "log in with `claude /login`, or set ANTHROPIC_API_KEY"
	}
	names := make([]string, len(creds))
	for i, c := range creds {
		names[i] = c.Name + " (" + c.Masked + ")"
	}
	return "check " + strings.Join(names, " and ") + ", or unset it to use `claude /login`"
}
