package codexrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// schemaDef is the part of a JSON Schema definition CheckSchema reads.
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

// objectKinds are the keys of d's object alternatives (CodexErrorInfo's
// {"httpConnectionFailed": {"httpStatusCode": …}}).
func (d schemaDef) objectKinds() []string {
	var out []string
	for _, alt := range d.AnyOf {
		for k := range alt.Properties {
			out = append(out, k)
		}
	}
	return out
}

// schema is what generate-json-schema wrote that CheckSchema reads.
type schema struct {
	defs                        map[string]schemaDef
	clientNotes, clientRequests schemaDef
}

// CheckSchema holds the method names, notification names and fields this
// package and a front rely on to the schema the codex at binary generates
// (`codex app-server generate-json-schema`): a release that renames one
// fails here, with every name it lacks (DESIGN.md «Codex facts»).
func CheckSchema(ctx context.Context, binary string) error {
	dir, err := os.MkdirTemp("", "flower-codex-schema-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cmd := exec.CommandContext(ctx, binary, "app-server", "generate-json-schema", "--out", dir)
	cmd.Env = append(os.Environ(), "CODEX_HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		if said := strings.TrimSpace(string(out)); said != "" {
			err = fmt.Errorf("%w: %s", err, said)
		}
		return fmt.Errorf("generate-json-schema: %w", err)
	}
	s, err := readSchemas(dir)
	if err != nil {
		return err
	}
	return errors.Join(append(s.missingNames(), s.missingFields()...)...)
}

func readSchemas(dir string) (schema, error) {
	var v2 struct {
		Definitions map[string]schemaDef `json:"definitions"`
	}
	var s schema
	for _, f := range []struct {
		name string
		v    any
	}{
		{"codex_app_server_protocol.v2.schemas.json", &v2},
		{"ClientNotification.json", &s.clientNotes},
		{"ClientRequest.json", &s.clientRequests},
	} {
		b, err := os.ReadFile(filepath.Join(dir, f.name))
		if err != nil {
			return schema{}, fmt.Errorf("the generated schema: %w", err)
		}
		if err := json.Unmarshal(b, f.v); err != nil {
			return schema{}, fmt.Errorf("the generated schema %s: %w", f.name, err)
		}
	}
	s.defs = v2.Definitions
	return s, nil
}

// missingNames are the method, notification, item, status and error names
// the schema lacks.
func (s schema) missingNames() []error {
	var errs []error
	has := func(what string, list []string, want ...string) {
		for _, w := range want {
			if !slices.Contains(list, w) {
				errs = append(errs, fmt.Errorf("%s has no %q", what, w))
			}
		}
	}
	defs := s.defs
	has("ClientRequest methods", s.clientRequests.consts("method"),
		MethodInitialize, MethodThreadStart, MethodTurnStart, MethodTurnInterrupt, MethodHooksList, MethodThreadResume)
	has("ClientNotification methods", s.clientNotes.consts("method"), MethodInitialized)
	has("ServerNotification methods", defs["ServerNotification"].consts("method"),
		NoteTokenUsage, NoteTurnStarted, NoteTurnCompleted, NoteError, NoteRateLimits, NoteItemStarted, NoteItemCompleted)
	has("ThreadItem types", defs["ThreadItem"].consts("type"), ItemContextCompaction, "commandExecution")
	has("TurnStatus", defs["TurnStatus"].enums(), StatusCompleted, StatusInterrupted, StatusFailed)
	has("CodexErrorInfo", append(defs["CodexErrorInfo"].enums(), defs["CodexErrorInfo"].objectKinds()...),
		"contextWindowExceeded", "usageLimitExceeded", "rateLimitExceeded", "unauthorized",
		"httpConnectionFailed", "responseTooManyFailedAttempts")
	has("HookSource", defs["HookSource"].enums(), "sessionFlags")
	return errs
}

// usedFields are the fields of each definition the client and a front
// read or send.
var usedFields = map[string][]string{
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
}

// missingFields are the definitions and fields of usedFields the schema
// lacks, in name order.
func (s schema) missingFields() []error {
	names := make([]string, 0, len(usedFields))
	for def := range usedFields {
		names = append(names, def)
	}
	sort.Strings(names)
	var errs []error
	for _, def := range names {
		d, ok := s.defs[def]
		if !ok {
			errs = append(errs, fmt.Errorf("no definition %s", def))
			continue
		}
		for _, f := range usedFields[def] {
			if _, ok := d.Properties[f]; !ok {
				errs = append(errs, fmt.Errorf("%s has no field %q", def, f))
			}
		}
	}
	return errs
}
