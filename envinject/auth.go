package envinject

import (
	"net/url"
	"regexp"
	"strings"
)

// DefaultEndpoint is where the harness sends requests when ANTHROPIC_BASE_URL
// is not set.
const DefaultEndpoint = "https://api.anthropic.com"

// credentialVars are the variables the harness authenticates with, in the
// order they are shown.
var credentialVars = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"}

const (
	// shownPrefix is how many leading characters of a secret stay visible.
	shownPrefix = 4
	// minShownLen is the shortest secret whose prefix is shown; a shorter
	// one would be given away in large part by its first four characters.
	minShownLen = 12
	// maskTail replaces the hidden part; fixed width so the mask does not
	// tell the secret's length.
	maskTail = "****"
)

// Mask hides a secret for display: its first 4 characters, then "…" and a
// fixed-width mask ("sk-a…****"). An empty secret is "(empty)"; a secret
// shorter than 12 characters is fully masked.
func Mask(secret string) string {
	if secret == "" {
		return "(empty)"
	}
	r := []rune(secret)
	if len(r) < minShownLen {
		return maskTail
	}
	return string(r[:shownPrefix]) + "…" + maskTail
}

// Auth is the effective auth configuration a harness child will use, safe to
// print: no field holds a secret in the clear.
type Auth struct {
	// Endpoint is the API base URL, with any credentials in it masked.
	Endpoint string
	// EndpointSource is "ANTHROPIC_BASE_URL" or "default".
	EndpointSource string
	// Model is ANTHROPIC_MODEL, or "(harness default)" when unset.
	Model string
	// OpusModel is ANTHROPIC_DEFAULT_OPUS_MODEL, "" when unset. Shown because
	// the default window is guessed from it as well as from Model.
	OpusModel string
	// Credentials are the credential variables present in the environment.
	Credentials []Credential
}

// Credential is one credential variable, masked.
type Credential struct {
	// Name is the variable's name.
	Name string
	// Masked is the value as Mask shows it.
	Masked string
}

// AuthFrom reads the auth configuration from env, a KEY=VALUE list (last
// entry wins). Secrets are masked here, so an Auth never holds one.
func AuthFrom(env []string) Auth {
	a := Auth{Endpoint: DefaultEndpoint, EndpointSource: "default", Model: "(harness default)"}
	if v, ok := Lookup(env, "ANTHROPIC_BASE_URL"); ok && v != "" {
		a.Endpoint = RedactURL(v)
		a.EndpointSource = "ANTHROPIC_BASE_URL"
	}
	if v, ok := Lookup(env, "ANTHROPIC_MODEL"); ok && v != "" {
		a.Model = v
	}
	if v, ok := Lookup(env, "ANTHROPIC_DEFAULT_OPUS_MODEL"); ok {
		a.OpusModel = v
	}
	for _, name := range credentialVars {
		if v, ok := Lookup(env, name); ok {
			a.Credentials = append(a.Credentials, Credential{Name: name, Masked: Mask(v)})
		}
	}
	return a
}

// String is the multi-line text `flower -v` shows before a run.
func (a Auth) String() string {
	var b strings.Builder
	b.WriteString("endpoint:    " + a.Endpoint + " (" + a.EndpointSource + ")\n")
	b.WriteString("model:       " + a.Model + "\n")
	if a.OpusModel != "" {
		b.WriteString("opus model:  " + a.OpusModel + "\n")
	}
	if len(a.Credentials) == 0 {
		b.WriteString("credentials: none in the environment (the harness may use its own stored login)\n")
		return b.String()
	}
	b.WriteString("credentials:\n")
	for _, c := range a.Credentials {
		b.WriteString("  " + c.Name + " " + c.Masked + "\n")
	}
	return b.String()
}

// RedactURL masks whatever in a URL-valued setting may be a secret, for
// display (DESIGN.md «Secrets on screen and in logs»): gateways carry
// tokens in the path as often as in the query. Kept
// are the scheme, the host and the port, and the shape of the rest; masked
// (each as Mask shows it) are the password in the userinfo (or the user
// name when there is no password, since a bare token is often passed that
// way), every path segment, every query value and the fragment. A value
// that is not a URL with a scheme and a host is masked whole.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "" {
		// Not a URL we can take apart: it may hold a secret anywhere.
		return "(not a URL: " + Mask(raw) + ")"
	}
	var b strings.Builder
	b.WriteString(u.Scheme + "://")
	if u.User != nil {
		name := u.User.Username()
		if pass, ok := u.User.Password(); ok {
			b.WriteString(name + ":" + Mask(pass) + "@")
		} else {
			b.WriteString(Mask(name) + "@")
		}
	}
	b.WriteString(u.Host)
	if u.Path != "" {
		segs := strings.Split(u.Path, "/")
		for i, seg := range segs {
			if seg != "" {
				segs[i] = Mask(seg)
			}
		}
		b.WriteString(strings.Join(segs, "/"))
	}
	if u.RawQuery != "" {
		var parts []string
		for _, kv := range strings.Split(u.RawQuery, "&") {
			k, v, ok := strings.Cut(kv, "=")
			if ok {
				parts = append(parts, k+"="+Mask(v))
			} else {
				parts = append(parts, Mask(k))
			}
		}
		b.WriteString("?" + strings.Join(parts, "&"))
	}
	if u.Fragment != "" {
		b.WriteString("#" + Mask(u.Fragment))
	}
	return b.String()
}

// urlInText is a URL inside free text: a scheme, "://", and everything up
// to a space, a quote or a bracket.
var urlInText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>()\[\]{}` + "`" + `]+`)

// RedactURLs masks every URL inside text as RedactURL does: a harness's
// error message may quote the endpoint, token and all.
func RedactURLs(text string) string {
	return urlInText.ReplaceAllStringFunc(text, func(u string) string {
		// A sentence's full stop or comma is not part of the URL.
		trimmed := strings.TrimRight(u, ".,;:!?")
		return RedactURL(trimmed) + u[len(trimmed):]
	})
}

// CredentialVars are the names of the variables the harness authenticates
// with; a program flower starts that is not the harness (a --notify hook)
// gets an environment without them.
func CredentialVars() []string { return append([]string(nil), credentialVars...) }
