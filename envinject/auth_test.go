package envinject

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Fake secrets, built at run time so no secret-looking literal sits in the
// source: the test only needs them to be long and recognisable.
var (
	apiKey    = "sk-ant-api03-" + strings.Repeat("SECRETSECRET", 8)
	authToken = "tok-" + strings.Repeat("AUTHTOKEN", 6)
	oauth     = "sk-ant-oat01-" + strings.Repeat("OAUTHOAUTH", 6)
	urlPass   = "PASSWORDPASSWORD42"
	urlToken  = "BARETOKENBARETOKEN"
	queryKey  = "QUERYKEYQUERYKEY77"
	pathToken = "PATHTOKENPATHTOKEN99"
	fragToken = "FRAGTOKENFRAGTOKEN55"
)

func TestMask(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", "(empty)"},
		{"a", "****"},
		{"abcd", "****"},
		{"abcdefghijk", "****"}, // 11: too short to show a prefix
		{"abcdefghijkl", "abcd…****"},
		{apiKey, "sk-a…****"},
		{"日本語のトークン文字列です", "日本語の…****"}, // runes, not bytes
	}
	for _, tt := range tests {
		if got := Mask(tt.in); got != tt.want {
			t.Errorf("Mask(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if len(Mask(apiKey)) != len(Mask(apiKey+"more")) {
		t.Error("mask width depends on the secret's length")
	}
}

func TestAuthFrom(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want Auth
	}{
		{
			name: "nothing set",
			env:  []string{"PATH=/bin"},
			want: Auth{Endpoint: DefaultEndpoint, EndpointSource: "default", Model: "(harness default)"},
		},
		{
			name: "all set, last wins",
			env: []string{
				"ANTHROPIC_MODEL=claude-haiku-4-5", "ANTHROPIC_MODEL=claude-opus-5[1m]",
				"ANTHROPIC_DEFAULT_OPUS_MODEL=claude-opus-5-5",
				"ANTHROPIC_BASE_URL=http://127.0.0.1:8080",
				"CLAUDE_CODE_OAUTH_TOKEN=" + oauth,
				"ANTHROPIC_API_KEY=" + apiKey,
				"ANTHROPIC_AUTH_TOKEN=",
			},
			want: Auth{
				Endpoint: "http://127.0.0.1:8080", EndpointSource: "ANTHROPIC_BASE_URL",
				Model: "claude-opus-5[1m]", OpusModel: "claude-opus-5-5",
				Credentials: []Credential{
					{"ANTHROPIC_API_KEY", "sk-a…****"},
					{"ANTHROPIC_AUTH_TOKEN", "(empty)"},
					{"CLAUDE_CODE_OAUTH_TOKEN", "sk-a…****"},
				},
			},
		},
		{
			name: "empty base url and model fall back",
			env:  []string{"ANTHROPIC_BASE_URL=", "ANTHROPIC_MODEL="},
			want: Auth{Endpoint: DefaultEndpoint, EndpointSource: "default", Model: "(harness default)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AuthFrom(tt.env)
			if got.Endpoint != tt.want.Endpoint || got.EndpointSource != tt.want.EndpointSource ||
				got.Model != tt.want.Model || got.OpusModel != tt.want.OpusModel ||
				!slices.Equal(got.Credentials, tt.want.Credentials) {
				t.Errorf("AuthFrom = %+v\nwant       %+v", got, tt.want)
			}
		})
	}
}

func TestRedactURL(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"https://gw.example/", "https://gw.example/"},
		{"https://gw.example/v1/", "https://gw.example/****/"},
		{"https://gw.example/" + pathToken, "https://gw.example/PATH…****"},
		{"https://gw.example/v1/" + pathToken + "/anthropic", "https://gw.example/****/PATH…****/****"},
		{"https://alice:" + urlPass + "@gw.example/v1", "https://alice:PASS…****@gw.example/****"},
		{"https://" + urlToken + "@gw.example", "https://BARE…****@gw.example"},
		{"https://gw.example/v1?key=" + queryKey + "&region", "https://gw.example/****?key=QUER…****&****"},
		{"https://gw.example?" + queryKey, "https://gw.example?QUER…****"},
		{"https://gw.example/v1?key=" + queryKey + "#" + fragToken, "https://gw.example/****?key=QUER…****#FRAG…****"},
		{"not a url " + urlToken, "(not a URL: not …****)"},
		{"gw.example:" + urlPass, "(not a URL: gw.e…****)"},
		{"mailto:" + urlToken, "(not a URL: mail…****)"},
	}
	for _, tt := range tests {
		if got := RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestAuthStringShowsConfiguration(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want []string
	}{
		{
			name: "defaults",
			env:  nil,
			want: []string{"https://api.anthropic.com (default)", "(harness default)", "credentials: none"},
		},
		{
			name: "configured",
			env:  []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:9", "ANTHROPIC_MODEL=claude-haiku-4-5", "ANTHROPIC_DEFAULT_OPUS_MODEL=claude-opus-5[1m]", "ANTHROPIC_API_KEY=" + apiKey},
			want: []string{"http://127.0.0.1:9 (ANTHROPIC_BASE_URL)", "model:       claude-haiku-4-5", "opus model:  claude-opus-5[1m]", "ANTHROPIC_API_KEY sk-a…****"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := AuthFrom(tt.env).String()
			for _, w := range tt.want {
				if !strings.Contains(s, w) {
					t.Errorf("String() =\n%s\nlacks %q", s, w)
				}
			}
		})
	}
}

// TestAuthNeverHoldsSecrets prints an Auth every way a caller might and
// checks that no secret, nor any piece of one beyond its first four
// characters, comes out (DESIGN.md «Policy», on -v).
func TestAuthNeverHoldsSecrets(t *testing.T) {
	tests := []struct {
		name    string
		env     []string
		secrets []string
	}{
		{
			name: "credentials and URL password and query",
			env: []string{
				"ANTHROPIC_API_KEY=" + apiKey,
				"ANTHROPIC_AUTH_TOKEN=" + authToken,
				"CLAUDE_CODE_OAUTH_TOKEN=" + oauth,
				"ANTHROPIC_BASE_URL=https://alice:" + urlPass + "@gw.example/v1/" + pathToken + "/x?key=" + queryKey + "#" + fragToken,
			},
			secrets: []string{apiKey, authToken, oauth, urlPass, pathToken, queryKey, fragToken},
		},
		{
			name:    "bare token as URL user name",
			env:     []string{"ANTHROPIC_BASE_URL=https://" + urlToken + "@gw.example"},
			secrets: []string{urlToken},
		},
		{
			name:    "unparseable URL",
			env:     []string{"ANTHROPIC_BASE_URL=gw.example:" + urlPass},
			secrets: []string{urlPass},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := AuthFrom(tt.env)
			outputs := map[string]string{
				"String": a.String(),
				"%v":     fmt.Sprintf("%v", a),
				"%+v":    fmt.Sprintf("%+v", a),
				"%#v":    fmt.Sprintf("%#v", a),
				"creds":  fmt.Sprintf("%#v", a.Credentials),
			}
			for _, secret := range tt.secrets {
				// A 6-character window slid over the secret: any hit is
				// more than the 4 characters Mask shows.
				for i := 0; i+6 <= len(secret); i++ {
					piece := secret[i : i+6]
					for how, out := range outputs {
						if strings.Contains(out, piece) {
							t.Fatalf("%s output contains %q from a secret:\n%s", how, piece, out)
						}
					}
				}
			}
		})
	}
}

func TestRedactURLs(t *testing.T) {
	in := "API error: connect ECONNREFUSED at https://gw.example/" + pathToken + "/v1/messages?key=" + queryKey + ". Retrying (http://127.0.0.1:9)"
	want := "API error: connect ECONNREFUSED at https://gw.example/PATH…****/****/****?key=QUER…****. Retrying (http://127.0.0.1:9)"
	if got := RedactURLs(in); got != want {
		t.Errorf("RedactURLs =\n%q\nwant\n%q", got, want)
	}
	if got := RedactURLs("no url here: a/b c"); got != "no url here: a/b c" {
		t.Errorf("text without a URL changed: %q", got)
	}
}
