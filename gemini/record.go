package gemini

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// record is the CLI's own record of one session, a JSON-lines file under
// its home's .gemini/tmp/<project>/chats/ (measured on 0.61.0): a
// header line, {"$set": …} lines that change the session's metadata (a
// $set of messages replaces the history: a compression's holds
// CompressionAck), and one line per message, written again when the
// message changes. A model message ("type":"gemini") carries the
// usageMetadata of its API call as "tokens": the main thread's meter. It
// is written before the CLI goes on to the reply's tools or to the
// prompt's answer, so reading the file up to its end before each ACP
// message is read in order («Gemini front»).
type record struct {
	path string
	f    *os.File
	r    *bufio.Reader
	// part is a line not yet ended; seen, the model messages reported.
	part []byte
	seen map[string]bool
}

// line is the part of a record's line read.
type line struct {
	SessionID string          `json:"sessionId"`
	Set       json.RawMessage `json:"$set"`
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Content   json.RawMessage `json:"content"`
	Model     string          `json:"model"`
	Tokens    *struct {
		Input    int `json:"input"`
		Output   int `json:"output"`
		Cached   int `json:"cached"`
		Thoughts int `json:"thoughts"`
	} `json:"tokens"`
}

// text is a message's content as text: a string, or parts with text.
func (l line) text() string {
	var s string
	if json.Unmarshal(l.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(l.Content, &parts)
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, "")
}

// CompressionAck is the model's line the CLI puts after the summary in
// the history a compression leaves (measured on 0.61.0): the CLI also
// replaces its history when it rolls a failed or cancelled request back,
// and only a compression's has it.
const CompressionAck = "Got it. Thanks for the additional context!"

// compressed: a $set line that replaces the history with a compression's.
func (l line) compressed() bool {
	if len(l.Set) == 0 {
		return false
	}
	var m struct {
		Messages []line `json:"messages"`
	}
	if json.Unmarshal(l.Set, &m) != nil {
		return false
	}
	for _, msg := range m.Messages {
		if msg.Type == "gemini" && strings.TrimSpace(msg.text()) == CompressionAck {
			return true
		}
	}
	return false
}

// findRecord is the record of session id under geminiHome (its
// .gemini/tmp/*/chats/session-*-<id[:8]>.jsonl whose header names id),
// the newest where several do.
func findRecord(geminiHome, id string) (string, error) {
	if len(id) < 8 {
		return "", fmt.Errorf("session id %q is too short to find its record", id)
	}
	paths, _ := filepath.Glob(filepath.Join(geminiHome, ".gemini", "tmp", "*", "chats", "session-*-"+id[:8]+".jsonl"))
	sort.Strings(paths) // the names begin with the start time
	for i := len(paths) - 1; i >= 0; i-- {
		f, err := os.Open(paths[i])
		if err != nil {
			continue
		}
		first, _ := bufio.NewReader(io.LimitReader(f, 1<<20)).ReadBytes('\n')
		f.Close()
		var h line
		if json.Unmarshal(first, &h) == nil && h.SessionID == id {
			return paths[i], nil
		}
	}
	return "", fmt.Errorf("the Gemini CLI keeps no record of session %s under %s: flower reads the main thread's context there", id, filepath.Join(geminiHome, ".gemini", "tmp"))
}

// openRecord follows the record at path from its end (resumed: what was
// there is the past) or from its start.
func openRecord(path string, fromEnd bool) (*record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open the Gemini CLI's record: %w", err)
	}
	if fromEnd {
		if _, err := f.Seek(0, io.SeekEnd); err != nil {
			f.Close()
			return nil, err
		}
	}
	return &record{path: path, f: f, r: bufio.NewReaderSize(f, 64<<10), seen: map[string]bool{}}, nil
}

// lines reads every whole line written since the last call; a line still
// being written is kept for the next (the reader goes on from the file's
// end once more is written). A line that is not JSON is skipped (counted
// in bad); a failed read (the record closed) ends the call like its end.
func (r *record) lines() (out []line, bad int) {
	for {
		b, err := r.r.ReadBytes('\n')
		r.part = append(r.part, b...)
		if err != nil {
			return out, bad
		}
		var l line
		if json.Unmarshal(bytes.TrimSpace(r.part), &l) != nil {
			bad++
		} else {
			out = append(out, l)
		}
		r.part = r.part[:0]
	}
}

func (r *record) close() { _ = r.f.Close() }

// startMinute is the minute a record's file name says its session began
// in: session-2026-12-07T15-17-63821ef3.jsonl began at 15:17 UTC.
func startMinute(path string) (time.Time, bool) {
	name := strings.TrimPrefix(filepath.Base(path), "session-")
	if len(name) < 16 {
		return time.Time{}, false
	}
	t, err := time.Parse("2006-01-02T15-04", name[:16])
	return t, err == nil
}
