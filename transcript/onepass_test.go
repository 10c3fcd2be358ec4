package transcript

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// decode reads a line's common keys in one pass; it finds what a Get of
// each finds, duplicate, escaped and missing keys included.
func TestDecodeReadsTheKeysGetReads(t *testing.T) {
	keys := []string{`"type"`, `"subtype"`, `"session_id"`, `"sessionId"`, `"isSidechain"`, `"version"`, `"isReplay"`, `"\u0074ype"`, `"other"`, `"message"`}
	vals := []string{`"assistant"`, `"system"`, `"init"`, `"s-1"`, `""`, `true`, `false`, `1`, `null`, `{"type":"inner","session_id":"x"}`, `["a"]`, `"2.1.328"`}
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 5000 {
		var b strings.Builder
		b.WriteString("{")
		for j := range r.IntN(7) {
			if j > 0 {
				b.WriteString(",")
			}
			b.WriteString(keys[r.IntN(len(keys))] + ":" + vals[r.IntN(len(vals))])
		}
		b.WriteString("}")
		line := []byte(b.String())
		ev, err := Decode(line)
		if err != nil {
			t.Fatalf("line %d %s: %v", i, line, err)
		}
		root := gjson.ParseBytes(line)
		sid := root.Get("session_id").String()
		if sid == "" {
			sid = root.Get("sessionId").String()
		}
		want := [6]any{root.Get("type").String(), root.Get("subtype").String(), sid, root.Get("isSidechain").Bool(), root.Get("version").String(), root.Get("isReplay").Bool()}
		got := [6]any{ev.Type, ev.Subtype, ev.SessionID, ev.Sidechain, ev.Version, ev.Replay}
		if ev.Kind == KindInit {
			got[4], want[4] = nil, nil // an init line's version is its claude_code_version
		}
		if got != want {
			t.Fatalf("line %s: decode read %v, Get reads %v", line, got, want)
		}
	}
}
