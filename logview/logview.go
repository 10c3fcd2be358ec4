// Package logview prints a run's structured log (flower.log, slog's JSON
// lines) for a person, as `flower logs` does: one line a record, with its
// time, level, step, generation and phase first, a handoff document folded
// into a preview, and every string escaped for a terminal, since a log a
// repository planted may hold anything (DESIGN.md «Input caps»).
package logview

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/flowerhq/flower/console"
	"github.com/flowerhq/flower/safefile"
	"github.com/flowerhq/flower/transcript"
)

// MaxLine bounds one record that File reads.
const MaxLine = 4 << 20

// File writes the log at path, from its start to its end. One record is
// bounded: a line past MaxLine is said and skipped, never held whole
// (DESIGN.md «Input caps»).
func (p *Printer) File(path string) error {
	f, err := safefile.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := transcript.NewLineReader(f, MaxLine)
	for {
		l, err := r.Next()
		var le *transcript.LineError
		switch {
		case errors.As(err, &le):
			l = []byte(fmt.Sprintf("flower logs: line %d of %s holds %s, over the cap of %s for a log line: skipped", le.Line, path, safefile.Size(le.Size), safefile.Size(MaxLine)))
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return fmt.Errorf("read log: %w", err)
		}
		if perr := p.Line(l); perr != nil {
			return perr
		}
	}
}

// Printer writes the run log's records for a person:
//
//	11:48:30 INFO  main gen 2  handoff written  reason=threshold context=155000 path=…
//
// A line that is not a JSON object is written as it is.
type Printer struct {
	W io.Writer
	// Raw writes every line as it is (--json).
	Raw bool
	// Filter: records below Min or before Since are left out.
	Filter bool
	Min    slog.Level
	Since  time.Time
	day    string // date of the last record, to mark when it changes
}

// sinceLayouts are the times --since takes, in the reader's zone unless
// they carry one.
var sinceLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"}

// ParseSince is --since: a duration back from now, a time of day today, or
// a date and time.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{"15:04:05", "15:04"} {
		if t, err := time.ParseInLocation(layout, s, now.Location()); err == nil {
			y, m, d := now.Date()
			return time.Date(y, m, d, t.Hour(), t.Minute(), t.Second(), 0, now.Location()), nil
		}
	}
	for _, layout := range sinceLayouts {
		if t, err := time.ParseInLocation(layout, s, now.Location()); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--since %s: want a duration back from now (10m, 1h30m) or a time (15:04, 2006-01-02 15:04, 2006-01-02T15:04:05Z07:00)", s)
}

// keep says whether a record passes --level and --since; one without a
// level or a time passes what it cannot be held to.
func (p *Printer) keep(rec gjson.Result) bool {
	if !p.Filter {
		return true
	}
	var lv slog.Level
	if v := rec.Get("level"); v.Exists() && lv.UnmarshalText([]byte(v.String())) == nil && lv < p.Min {
		return false
	}
	if t, err := time.Parse(time.RFC3339Nano, rec.Get("time").String()); err == nil && t.Before(p.Since) {
		return false
	}
	return true
}

// The attributes shown before the message, in this order, since they say
// where in the run a record belongs; "gen" gets a label, being a number.
var logLead = []string{"step", "gen", "phase"}

// Line writes one line of the log.
func (p *Printer) Line(l []byte) error {
	if !gjson.ValidBytes(l) {
		return p.write(string(l))
	}
	rec := gjson.ParseBytes(l)
	if !rec.IsObject() {
		return p.write(string(l))
	}
	if !p.keep(rec) {
		return nil
	}
	if p.Raw {
		return p.write(string(l))
	}
	var head []string
	var b strings.Builder
	skip := map[string]bool{"level": true, "msg": true} // shown once, skipped below
	if t, err := time.Parse(time.RFC3339Nano, rec.Get("time").String()); err == nil {
		// Shown in the zone it was written in: the run's own clock.
		if day := t.Format("2006-01-02"); day != p.day {
			if p.day != "" {
				b.WriteString("-- " + day + " --\n")
			}
			p.day = day
		}
		head = append(head, t.Format("15:04:05"))
		skip["time"] = true
	}
	if lv := rec.Get("level"); lv.Exists() {
		head = append(head, fmt.Sprintf("%-5s", lv.String()))
	}
	for _, k := range logLead {
		if v := rec.Get(k); v.Exists() {
			if k == "gen" {
				head = append(head, "gen")
			}
			head = append(head, logValue(v))
		}
	}
	if len(head) > 0 {
		head = append(head, "") // two spaces before the message
	}
	b.WriteString(strings.Join(append(head, logText(rec.Get("msg").String())), " "))
	// Each of the fields above is skipped once: a key slog wrote twice
	// (logger.With and the call both gave it) shows its second value.
	for _, k := range logLead {
		skip[k] = true
	}
	sep := "  "
	var folded []string
	rec.ForEach(func(k, v gjson.Result) bool {
		if skip[k.String()] {
			skip[k.String()] = false
			return true
		}
		if k.String() == "document" && v.Type == gjson.String {
			folded = append(folded, "    document: "+foldDocument(v.String()))
			return true
		}
		b.WriteString(sep)
		sep = " "
		writeAttr(&b, k.String(), v)
		return true
	})
	for _, f := range folded {
		b.WriteString("\n" + f)
	}
	return p.write(b.String())
}

// foldDocument is a handoff document as one preview line: its first line
// of text under the headings, and how long it is.
func foldDocument(doc string) string {
	lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(doc, "\r\n", "\n")), "\n")
	preview := ""
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			preview = logText(console.Abbrev(l, 80))
			break
		}
	}
	if preview == "" {
		preview = "(no text)"
	}
	return fmt.Sprintf("%s … (%d lines, %s; whole with --json)", preview, len(lines), safefile.Size(int64(len(doc))))
}

// write writes one line: as it is with --json, escaped for a terminal
// otherwise (a log a repository planted may hold anything).
func (p *Printer) write(s string) error {
	if !p.Raw {
		s = console.Escape(s)
	}
	_, err := io.WriteString(p.W, s+"\n")
	return err
}

// writeAttr writes key=value, spreading a group (a nested object, as
// slog.Group writes it) into group.key=value.
func writeAttr(b *strings.Builder, key string, v gjson.Result) {
	if v.IsObject() && len(v.Map()) > 0 {
		sep := ""
		v.ForEach(func(k, sub gjson.Result) bool {
			b.WriteString(sep)
			sep = " "
			writeAttr(b, key+"."+k.String(), sub)
			return true
		})
		return
	}
	switch {
	case v.Type == gjson.Number && strings.HasSuffix(key, "_usd"):
		// Dollars as flower show gives them, not float noise.
		b.WriteString(key + "=" + strconv.FormatFloat(v.Float(), 'f', 4, 64))
	case v.Type == gjson.String && (key == "session" || strings.HasSuffix(key, "session_id")):
		b.WriteString(key + "=" + logValue(gjson.Result{Type: gjson.String, Str: console.ShortID(v.String())}))
	default:
		b.WriteString(key + "=" + logValue(v))
	}
}

// logValue is a field's value: strings bare when that is unambiguous,
// else quoted; numbers, booleans and arrays as written.
func logValue(v gjson.Result) string {
	if v.Type != gjson.String {
		return v.Raw
	}
	s := v.String()
	if s == "" || strings.ContainsAny(s, " =\"\\") || logText(s) != s {
		return strconv.Quote(s)
	}
	return s
}

// logText keeps a message on one line: one with control characters is
// quoted.
func logText(s string) string {
	for _, r := range s {
		if r < ' ' || r == 0x7f {
			return strconv.Quote(s)
		}
	}
	return s
}
