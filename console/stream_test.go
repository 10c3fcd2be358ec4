package console

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/flowerhq/flower/event"
)

func TestStream(t *testing.T) {
	raw := func(line string) event.Event {
		return event.Event{Kind: event.KindRaw, Generation: 1, Raw: []byte(line)}
	}
	harnessLines := []string{
		`{"type":"system","subtype":"init","session_id":"s1","model":"m"}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"a \"quoted\"\nline ✓"}]},"parent_tool_use_id":null}`,
		`{"type":"result","subtype":"success","total_cost_usd":0.01}`,
	}
	seed := seedEvents()
	evs := []event.Event{
		{Kind: event.KindGeneration, Step: "干活", Generation: 1, Window: 200_000, At: 150_000},
		raw(harnessLines[0]),
		{Kind: event.KindSession, Step: "干活", Generation: 1, SessionID: "s1"},
		raw(harnessLines[1]),
		{Kind: event.KindText, Generation: 1, Text: "a \"quoted\"\nline ✓"}, // the assistant line carries it
		{Kind: event.KindTool, Generation: 1, Tool: "Bash", Input: `{"command":"ls"}`},
		raw(harnessLines[2]),
		{Kind: event.KindTurn, Generation: 1, Context: 5000, CostUSD: 0.01, Text: "done"},
		{Kind: event.KindNotice, Text: "a notice\nover two lines"},
		raw(""), // nothing to pass on
		seed[0], seed[1], seed[2],
	}
	var b bytes.Buffer
	s := NewStream(&b)
	for _, ev := range evs {
		s.Handle(ev)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	var gotRaw []string
	var kinds []string
	for i, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("line %d is not JSON: %s", i, l)
		}
		var head struct {
			Type  string `json:"type"`
			Kind  string `json:"kind"`
			Phase string `json:"phase"`
		}
		json.Unmarshal([]byte(l), &head)
		if head.Type != FlowerType {
			gotRaw = append(gotRaw, l)
			continue
		}
		kinds = append(kinds, strings.TrimSuffix(head.Kind+"/"+head.Phase, "/"))
	}
	if strings.Join(gotRaw, "\n") != strings.Join(harnessLines, "\n") {
		t.Errorf("harness lines not passed on verbatim:\n%s", strings.Join(gotRaw, "\n"))
	}
	want := "generation session turn notice handoff/near handoff/writing handoff/done"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("flower lines %q, want %q", got, want)
	}

	// The done line carries the fields of DESIGN.md «Events» and the
	// sections by key.
	var done struct {
		Type     string            `json:"type"`
		Kind     string            `json:"kind"`
		Phase    string            `json:"phase"`
		Context  int               `json:"context"`
		Window   int               `json:"window"`
		Degraded *bool             `json:"degraded"`
		Path     string            `json:"path"`
		Sections []string          `json:"sections"`
		Handoff  map[string]string `json:"handoff"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &done); err != nil {
		t.Fatal(err)
	}
	if done.Phase != "done" || done.Context != 152_000 || done.Window != 200_000 || done.Path != seedPath || done.Degraded == nil || *done.Degraded ||
		len(done.Sections) != 5 || done.Handoff["deadends"] != seedHandoff.Deadends || done.Handoff["scene"] != seedHandoff.Scene {
		t.Errorf("done line: %+v\n%s", done, lines[len(lines)-1])
	}
	if strings.Contains(lines[len(lines)-1], `"Doing"`) {
		t.Errorf("done line carries the Go field names: %s", lines[len(lines)-1])
	}
}
