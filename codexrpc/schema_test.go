package codexrpc_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowerhq/flower/codexrpc"
	"github.com/flowerhq/flower/integration/itest"
)

// schemaDef is the part of a JSON Schema definition the test reads.
type schemaDef struct {
	Properties map[string]json.RawMessage `json:"properties"`
	Enum       []string                   `json:"enum"`
	OneOf      []schemaDef                `json:"oneOf"`
	AnyOf      []schemaDef                `json:"anyOf"`
}

// consts are the single-value enums of each alternative's property name
// (the method of a request, the type of an item).
func (d schemaDef) consts(name string) []string {
	var out []string
	for _, alt := range append(d.OneOf, d.AnyOf...) {
		var p schemaDef
		if json.Unmarshal(alt.Properties[name], &p) == nil {
			out = append(out, p.Enum...)
		}
	}
	return out
}

// enums are every string an enum of d (or of its alternatives) allows.
func (d schemaDef) enums() []string {
	out := slices.Clone(d.Enum)
	for _, alt := range append(d.OneOf, d.AnyOf...) {
		out = append(out, alt.enums()...)
	}
	return out
}

func readSchema(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestSchemaHasWhatTheClientUses checks the binary is the version asked
// for, and holds the method names, notification
// names and fields the client and a front rely on to the schema the
// installed Codex generates: a release that renames one fails here.
func TestSchemaHasWhatTheClientUses(t *testing.T) {
	bin := itest.CodexPath(t)
	if out, err := exec.Command(bin, "--version").Output(); err != nil || strings.TrimSpace(string(out)) != "codex-cli "+itest.CodexVersion {
		t.Fatalf("%s --version: %q, %v; want codex-cli %s", bin, out, err, itest.CodexVersion)
	}
	dir := t.TempDir()
	cmd := exec.Command(bin, "app-server", "generate-json-schema", "--out", dir)
	cmd.Env = append(os.Environ(), "CODEX_HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generate-json-schema: %v\n%s", err, out)
	}
	var v2 struct {
		Definitions map[string]schemaDef `json:"definitions"`
	}
	readSchema(t, filepath.Join(dir, "codex_app_server_protocol.v2.schemas.json"), &v2)
	defs := v2.Definitions
	var clientNotes, clientRequests schemaDef
	readSchema(t, filepath.Join(dir, "ClientNotification.json"), &clientNotes)
	readSchema(t, filepath.Join(dir, "ClientRequest.json"), &clientRequests)

	has := func(what string, list []string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !slices.Contains(list, w) {
				t.Errorf("%s has no %q", what, w)
			}
		}
	}
	has("ClientRequest methods", clientRequests.consts("method"),
		codexrpc.MethodInitialize, codexrpc.MethodThreadStart, codexrpc.MethodTurnStart, codexrpc.MethodTurnInterrupt, codexrpc.MethodHooksList, codexrpc.MethodThreadResume)
	has("ClientNotification methods", clientNotes.consts("method"), codexrpc.MethodInitialized)
	has("ServerNotification methods", defs["ServerNotification"].consts("method"),
		codexrpc.NoteTokenUsage, codexrpc.NoteTurnStarted, codexrpc.NoteTurnCompleted, codexrpc.NoteError,
		codexrpc.NoteRateLimits, codexrpc.NoteItemStarted, codexrpc.NoteItemCompleted)
	has("ThreadItem types", defs["ThreadItem"].consts("type"), codexrpc.ItemContextCompaction, "commandExecution")
	has("TurnStatus", defs["TurnStatus"].enums(), codexrpc.StatusCompleted, codexrpc.StatusInterrupted, codexrpc.StatusFailed)
	has("CodexErrorInfo", append(defs["CodexErrorInfo"].enums(), objectKinds(defs["CodexErrorInfo"])...),
		"contextWindowExceeded", "usageLimitExceeded", "rateLimitExceeded", "unauthorized",
		"httpConnectionFailed", "responseTooManyFailedAttempts")
	has("HookSource", defs["HookSource"].enums(), "sessionFlags")

	for def, fields := range map[string][]string{
		"ThreadStartParams":                    {"cwd", "approvalPolicy", "sandbox", "config"},
		"ThreadStartResponse":                  {"thread"},
		"TurnStartParams":                      {"threadId", "input"},
		"TurnStartResponse":                    {"turn"},
		"TurnInterruptParams":                  {"threadId", "turnId"},
		"ThreadTokenUsageUpdatedNotification":  {"threadId", "turnId", "tokenUsage"},
		"ThreadTokenUsage":                     {"last", "total", "modelContextWindow"},
		"TokenUsageBreakdown":                  {"inputTokens", "cachedInputTokens", "outputTokens", "reasoningOutputTokens", "totalTokens"},
		"TurnCompletedNotification":            {"threadId", "turn"},
		"Turn":                                 {"id", "status", "error"},
		"TurnError":                            {"message", "codexErrorInfo"},
		"ErrorNotification":                    {"error", "willRetry", "threadId", "turnId"},
		"AccountRateLimitsUpdatedNotification": {"rateLimits"},
		"RateLimitSnapshot":                    {"primary", "secondary"},
		"RateLimitWindow":                      {"usedPercent", "windowDurationMins", "resetsAt"},
		"ItemStartedNotification":              {"item", "threadId", "turnId"},
		"ItemCompletedNotification":            {"item", "threadId", "turnId"},
		"HooksListResponse":                    {"data"},
		"HooksListEntry":                       {"hooks"},
		"HookMetadata":                         {"key", "source", "currentHash", "trustStatus"},
	} {
		d, ok := defs[def]
		if !ok {
			t.Errorf("no definition %s", def)
			continue
		}
		for _, f := range fields {
			if _, ok := d.Properties[f]; !ok {
				t.Errorf("%s has no field %q", def, f)
			}
		}
	}
}

// objectKinds are the keys of CodexErrorInfo's object alternatives
// ({"httpConnectionFailed": {"httpStatusCode": …}}).
func objectKinds(d schemaDef) []string {
	var out []string
	for _, alt := range d.AnyOf {
		for k := range alt.Properties {
			out = append(out, k)
		}
	}
	return out
}
