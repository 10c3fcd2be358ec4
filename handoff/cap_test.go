package handoff

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/flowerhq/flower/handoffwriter"
	"github.com/flowerhq/flower/manifest"
	"github.com/flowerhq/flower/workbench"
)

// A handoff written past the cap for a handoff is cut to it when it is
// frozen: the file is complete, marked and under the cap, the record says
// how large it was, the successor launches from the file, and the log
// carries a preview of it, not all of it.
func TestFreezeCutsAHandoffOverTheCap(t *testing.T) {
	f := newFixture(t, true, 8)
	var log bytes.Buffer
	f.books.Log = slog.New(slog.NewJSONHandler(&log, nil))
	huge := good
	huge.Doing = "Adding the shim header.\n" + strings.Repeat("a long line the model kept writing\n", 10<<20/35)
	fr, err := f.books.Freeze(f.gen, Cut{Handoff: huge, Reason: manifest.ReasonThreshold, Context: 155_000})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(fr.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > workbench.MaxHandoff || !bytes.Contains(b, []byte(handoffwriter.CutMarker+" the handoff was 10 MiB")) {
		t.Errorf("the file holds %d bytes (cap %d), marked %v", len(b), workbench.MaxHandoff, bytes.Contains(b, []byte(handoffwriter.CutMarker)))
	}
	if back := handoffwriter.Parse(string(b)); !back.Complete() || back.Next != good.Next {
		t.Errorf("the cut file does not parse whole: %v", back.Missing())
	}
	if rec := fr.Record; rec.CutFromBytes < 10<<20 || rec.Degraded || rec.SHA256Written != Digest(b) {
		t.Errorf("record: cut from %d, degraded %v", rec.CutFromBytes, rec.Degraded)
	}
	prompt := f.books.Launch(fr)
	if len(prompt) > workbench.MaxHandoff+20<<10 || !strings.Contains(prompt, handoffwriter.CutMarker) || len(f.books.Step.Errors) != 0 {
		t.Errorf("the successor's prompt: %d bytes, errors %q", len(prompt), f.books.Step.Errors)
	}
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		if len(line) > 2*LogDocument {
			t.Errorf("a log line of %d bytes: %.200s", len(line), line)
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err == nil && rec["msg"] == "handoff document as written" && rec["document_cut"] != true {
			t.Errorf("the log's document is not marked as a preview: %.200s", line)
		}
	}
}
